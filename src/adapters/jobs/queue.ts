/**
 * The durable job queue: pg-boss, on PostgreSQL through its own small pool
 * and on the embedded database through its one connection (pg-boss's
 * `pglite` backend). Jobs survive restarts and are shared by every server
 * on the same database; each server works on at most `concurrency` at once.
 */
import { PgBoss } from 'pg-boss';
import type { JobPort } from '../../app/ports.js';
import type { DatabaseHandle } from '../db/open.js';

export interface JobQueue {
  /** Queue a job; resolves once it is stored. */
  send: JobPort['send'];
  /** Run `handler` for the jobs of `name`, at most `concurrency` at once on this server. */
  work(name: string, concurrency: number, handler: (data: Record<string, unknown>) => Promise<void>): Promise<void>;
  /** Stop fetching; wait up to `timeoutMs` for handlers running. */
  stop(timeoutMs: number): Promise<void>;
}

/** How often an idle server looks for jobs another server queued (its own are started at once). */
const POLL_SECONDS = 2;
/** pg-boss's tables live in their own schema. */
const SCHEMA = 'jobs';

export async function openJobQueue(database: DatabaseHandle, databaseUrl: string | undefined, onError: (error: Error) => void): Promise<JobQueue> {
  const common = { schema: SCHEMA, schedule: false, supervise: true, monitorIntervalSeconds: 60, superviseIntervalSeconds: 60 } as const;
  const boss =
    database.kind === 'postgres'
      ? new PgBoss({ ...common, connectionString: databaseUrl!, max: 2 })
      : new PgBoss({
          ...common,
          backend: 'pglite',
          db: { executeSql: (text: string, values?: unknown[]) => database.runAll!(text, values ?? []) as Promise<{ rows: never[] }> },
        });
  boss.on('error', onError);
  await boss.start();
  const created = new Set<string>();
  const workers = new Map<string, string>();
  const ensure = async (name: string) => {
    if (created.has(name)) return;
    await boss.createQueue(name);
    created.add(name);
  };
  return {
    async send(name, data, options = {}) {
      await ensure(name);
      await boss.send(name, data, { ...options, retryLimit: options.retryLimit ?? 0 });
      // A job queued here is started here at once when this server has room, rather than at the next poll.
      const worker = workers.get(name);
      if (worker) boss.notifyWorker(worker);
    },
    async work(name, concurrency, handler) {
      await ensure(name);
      const id = await boss.work(name, { localConcurrency: concurrency, batchSize: 1, pollingIntervalSeconds: POLL_SECONDS }, async ([job]) => {
        if (job) await handler(job.data as Record<string, unknown>);
      });
      workers.set(name, id);
    },
    async stop(timeoutMs) {
      await boss.stop({ graceful: true, timeout: timeoutMs, close: true });
    },
  };
}
