/**
 * Worker threads that mark for `optmark protect` run here (mark-worker.ts):
 * as many as files are marked at once, started while the files are listed.
 */
import { Worker } from 'node:worker_threads';
import { CliError } from '../files.js';
import type { MarkOutcome, MarkTask } from './mark-one.js';
import type { WorkerReply, WorkerRequest } from './mark-worker.js';

export interface MarkingPool {
  run(task: MarkTask, sha256: boolean): Promise<MarkOutcome>;
  close(): Promise<void>;
}

export function createMarkingPool(size: number): MarkingPool {
  const url = new URL('./mark-worker.js', import.meta.url);
  const idle: Worker[] = [];
  const waiting: Array<(worker: Worker) => void> = [];
  const pending = new Map<number, { resolve: (m: MarkOutcome) => void; reject: (e: Error) => void }>();
  const release = (worker: Worker) => {
    const next = waiting.shift();
    if (next) next(worker);
    else idle.push(worker);
  };
  const workers = Array.from({ length: size }, () => {
    const worker = new Worker(url);
    worker.on('message', (reply: WorkerReply) => {
      const call = pending.get(reply.id);
      pending.delete(reply.id);
      release(worker);
      if (!call) return;
      if (reply.ok) call.resolve(reply.outcome);
      else if (reply.code) call.reject(new CliError(reply.error, reply.code));
      else call.reject(new Error(reply.error));
    });
    worker.on('error', (error) => {
      for (const call of pending.values()) call.reject(error);
      pending.clear();
    });
    idle.push(worker);
    return worker;
  });
  const acquire = () => new Promise<Worker>((resolve) => (idle.length > 0 ? resolve(idle.pop()!) : waiting.push(resolve)));
  let ids = 0;
  return {
    async run(task, sha256) {
      const worker = await acquire();
      const id = ++ids;
      return new Promise<MarkOutcome>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        worker.postMessage({ id, task, sha256 } satisfies WorkerRequest);
      });
    },
    async close() {
      await Promise.all(workers.map((w) => w.terminate()));
    },
  };
}
