/**
 * The server's worker threads (piscina): fingerprint detection and
 * embedding, and protect and inspect of files whose XMP is too long to read
 * on the event loop (app/off-loop.ts), with a bounded queue: past it,
 * ServerBusyError (503) rather than an ever longer wait. Pixels and marked
 * files go to the workers, and come back, without a copy (transferred)
 * where Node allows it.
 *
 * Every task's work is charged to the call that asked for it (the CPU time
 * the worker reports; for a task stopped before it could, the time since it
 * was handed over: app/work-meter.ts). A task given a signal is stopped when
 * the signal is aborted (a task still queued is dropped; one running ends
 * with its thread, which the pool replaces); a metadata task is also
 * stopped after METADATA_BUDGET_MS, and its file refused as invalid_xmp.
 */
import { fileURLToPath } from 'node:url';
import { isMarkedAsUntransferable } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { InvalidXmpError, RelayedError, ServerBusyError } from '../errors.js';
import type { DetectTask, EmbedOutcome, EmbedTask } from '../app/fingerprint.js';
import { METADATA_BUDGET_MS, type InspectTask, type Inspection, type MetadataWorkers, type ProtectTask } from '../app/off-loop.js';
import type { ProtectResult } from '../app/protect-image.js';
import type { FingerprintCheck } from '../app/verify-image.js';
import { chargeWork } from '../app/work-meter.js';
import type { MetadataAnswer } from './metadata-worker.js';

export interface WorkerPool extends MetadataWorkers {
  detect(task: DetectTask): Promise<FingerprintCheck>;
  embed(task: EmbedTask, signal?: AbortSignal): Promise<EmbedOutcome>;
  close(): Promise<void>;
}

/**
 * A worker module's compiled file. Run from the TypeScript sources (the
 * tests), this module is a .ts file, and a worker thread cannot load one;
 * the build of the same source is used: the tests' global setup builds it
 * before any test runs (test/support/global-setup.ts), so it is never stale.
 */
function workerFile(name: string): string {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.js')) return fileURLToPath(new URL(`./${name}.js`, import.meta.url));
  return fileURLToPath(new URL(`../../dist/adapters/${name}.js`, import.meta.url));
}

/**
 * The pixels in an ArrayBuffer of their own that may be handed to a worker
 * without a copy (transferred): the array itself when it is the whole of an
 * ordinary ArrayBuffer, as the pixel decoder returns it. Otherwise a copy: a
 * view into a larger or shared buffer (transferring it would take, or fail
 * on, bytes that are not these), or external memory such as a Buffer from
 * sharp's `toBuffer`, which Node marks untransferable (DataCloneError).
 */
export function transferable(data: Uint8Array): Uint8Array<ArrayBuffer> {
  const { buffer } = data;
  const own = buffer instanceof ArrayBuffer && data.byteOffset === 0 && data.byteLength === buffer.byteLength && !isMarkedAsUntransferable(buffer);
  return own ? (data as Uint8Array<ArrayBuffer>) : new Uint8Array(data);
}

export function createWorkerPool(options: { threads: number; queue: number }): WorkerPool {
  const fingerprintWorker = workerFile('fingerprint-worker');
  const metadataWorker = workerFile('metadata-worker');
  const pool = new Piscina({ filename: fingerprintWorker, minThreads: 1, maxThreads: options.threads, maxQueue: options.queue, idleTimeout: 60_000 });

  /** One task with its bytes handed over; its answer's `value`, the rest of its cost charged. */
  const run = async <A extends { cpu: number }>(
    task: { data?: Uint8Array; bytes?: Uint8Array },
    how: { name: string; filename?: string; what: string; signal?: AbortSignal },
  ): Promise<A> => {
    const bytes = task.data ?? task.bytes!;
    const handed = transferable(bytes);
    const sent = task.data ? { ...task, data: handed } : { ...task, bytes: handed };
    const submitted = performance.now();
    try {
      const answer = (await pool.run(sent, { name: how.name, filename: how.filename, transferList: [handed.buffer], signal: how.signal })) as A;
      chargeWork(answer.cpu);
      return answer;
    } catch (error) {
      if (/queue is at limit/i.test((error as Error).message)) throw new ServerBusyError(how.what);
      if (how.signal?.aborted) {
        chargeWork((performance.now() - submitted) / 1000);
        throw how.signal.reason;
      }
      throw error;
    }
  };

  /** A metadata task within its time budget; its typed refusal raised here. */
  const metadata = async <T>(name: string, task: ProtectTask | InspectTask, signal: AbortSignal | undefined): Promise<T> => {
    const budget = AbortSignal.timeout(METADATA_BUDGET_MS);
    const stop = signal ? AbortSignal.any([signal, budget]) : budget;
    let answer: MetadataAnswer<T>;
    try {
      answer = await run<MetadataAnswer<T>>(task, { name, filename: metadataWorker, what: 'metadata work', signal: stop });
    } catch (error) {
      if (budget.aborted && !signal?.aborted) throw new InvalidXmpError(`reading it took longer than the ${METADATA_BUDGET_MS / 1000} s allowed`);
      throw error;
    }
    if ('refused' in answer) throw new RelayedError(answer.refused.code, answer.refused.message);
    return answer.value;
  };

  return {
    detect: async (task) => (await run<{ value: FingerprintCheck; cpu: number }>(task, { name: 'detectMetered', what: 'fingerprint checks' })).value,
    embed: async (task, signal) => (await run<{ value: EmbedOutcome; cpu: number }>(task, { name: 'embedMetered', what: 'fingerprint marking', signal })).value,
    protect: (task, signal) => metadata<ProtectResult>('protectTask', task, signal),
    inspect: (task, signal) => metadata<Inspection>('inspectTask', task, signal),
    close: () => pool.destroy(),
  };
}
