/**
 * Fingerprint detection and embedding on a pool of worker threads (piscina),
 * with a bounded queue: past it, ServerBusyError (503) rather than an ever
 * longer wait. Pixels go to the worker, and marked pixels come back, without
 * a copy (transferred).
 */
import { fileURLToPath } from 'node:url';
import { isMarkedAsUntransferable } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { ServerBusyError } from '../errors.js';
import type { DetectTask, EmbedOutcome, EmbedTask } from '../app/fingerprint.js';
import type { FingerprintCheck } from '../app/verify-image.js';

export interface FingerprintPool {
  detect(task: DetectTask): Promise<FingerprintCheck>;
  embed(task: EmbedTask): Promise<EmbedOutcome>;
  close(): Promise<void>;
}

/**
 * The worker's compiled file. Run from the TypeScript sources (the tests),
 * this module is a .ts file that a worker thread cannot load; the build of
 * the same source is used: the tests' global setup builds it before any
 * test runs (test/support/global-setup.ts), so it is never stale.
 */
function workerFile(): string {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.js')) return fileURLToPath(new URL('./fingerprint-worker.js', import.meta.url));
  return fileURLToPath(new URL('../../dist/adapters/fingerprint-worker.js', import.meta.url));
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

export function createFingerprintPool(options: { threads: number; queue: number }): FingerprintPool {
  const pool = new Piscina({ filename: workerFile(), minThreads: 1, maxThreads: options.threads, maxQueue: options.queue, idleTimeout: 60_000 });
  const run = async <T>(task: { data: Uint8Array }, name: string, what: string): Promise<T> => {
    const data = transferable(task.data);
    try {
      return (await pool.run({ ...task, data }, { name, transferList: [data.buffer] })) as T;
    } catch (error) {
      if (/queue is at limit/i.test((error as Error).message)) throw new ServerBusyError(what);
      throw error;
    }
  };
  return {
    detect: (task) => run<FingerprintCheck>(task, 'default', 'fingerprint checks'),
    embed: (task) => run<EmbedOutcome>(task, 'embedAndTransfer', 'fingerprint marking'),
    close: () => pool.destroy(),
  };
}
