/**
 * Fingerprint detection and embedding on a pool of worker threads (piscina),
 * with a bounded queue: past it, ServerBusyError (503) rather than an ever
 * longer wait. Pixels go to the worker, and marked pixels come back, without
 * a copy (transferred).
 */
import { fileURLToPath } from 'node:url';
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
 * the same source (`npm run build`, which `npm test` runs first) is used.
 */
function workerFile(): string {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.js')) return fileURLToPath(new URL('./fingerprint-worker.js', import.meta.url));
  return fileURLToPath(new URL('../../dist/adapters/fingerprint-worker.js', import.meta.url));
}

export function createFingerprintPool(options: { threads: number; queue: number }): FingerprintPool {
  const pool = new Piscina({ filename: workerFile(), minThreads: 1, maxThreads: options.threads, maxQueue: options.queue, idleTimeout: 60_000 });
  const run = async <T>(task: { data: Uint8Array }, name: string, what: string): Promise<T> => {
    try {
      return (await pool.run(task, { name, transferList: [task.data.buffer as ArrayBuffer] })) as T;
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
