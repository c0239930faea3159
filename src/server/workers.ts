/**
 * `optmark serve` with several worker processes behind one port
 * (OPTMARK_WORKERS, docs/operations.md "Workers"): each node:cluster worker
 * listens on a socket of its own on that port (SO_REUSEPORT), and the kernel
 * spreads new connections over them by a hash of their addresses. (With one
 * socket shared by all, the worker that was awake took the burst of
 * connections a client opened and kept them: under wrk's 16 keep-alive
 * connections one of two workers did three quarters of the work.) Each
 * worker is a whole server (its own fastify, pools and job worker) on
 * the one PostgreSQL database. A worker that dies is started again (after a
 * pause that grows while they keep dying); SIGTERM or SIGINT to the primary
 * drains every worker (each stops taking connections, finishes its calls,
 * closes) and then ends it.
 *
 * The embedded database has one owner process, so workers need PostgreSQL:
 * the in-memory bookkeeping that makes the embedded mode fast (quotas
 * counted in memory, written behind) cannot be shared between processes,
 * and PGlite runs every statement on one thread anyway.
 */
import cluster, { type Worker } from 'node:cluster';
import { createServer } from 'node:net';

export interface PrimaryOptions {
  readonly workers: number;
  /** The port the workers listen on (0: one free port, chosen here, for all of them). */
  readonly port: number;
  readonly host: string;
  readonly log: (line: string) => void;
}

/** A worker that dies sooner than this after its start counts as a crash loop: the pause before the next one doubles. */
const HEALTHY_MS = 10_000;
const FIRST_PAUSE_MS = 500;
const MAX_PAUSE_MS = 30_000;

export const WORKER_INDEX = 'OPTMARK_WORKER_INDEX';

/**
 * A port free on `host` now, for workers asked to listen on port 0: each
 * would otherwise be given a different one. (Another program could take it
 * before the first worker binds it; that worker then fails to start, saying so.)
 */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen({ port: 0, host }, () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** Run the primary until SIGTERM or SIGINT has drained every worker; resolves to the exit code. */
export async function runPrimary(options: PrimaryOptions): Promise<number> {
  const { log } = options;
  // The workers accept on their own sockets, never through the primary: with
  // the primary handing connections out in turn (round robin), a connection
  // handed to a worker the moment it died was lost with it and its client
  // waited forever (test/process/workers.test.ts). A worker's socket closes
  // when it dies, and the kernel sends new connections to the others.
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  const port = options.port === 0 ? await freePort(options.host) : options.port;
  let stopping = false;
  let failed = false;
  const byIndex = new Map<number, { worker: Worker; startedAt: number; pause: number }>();

  const start = (index: number, pause = FIRST_PAUSE_MS) => {
    const worker = cluster.fork({ [WORKER_INDEX]: String(index), PORT: String(port) });
    byIndex.set(index, { worker, startedAt: Date.now(), pause });
    worker.on('exit', (code, signal) => {
      const entry = byIndex.get(index);
      if (entry?.worker !== worker) return;
      byIndex.delete(index);
      if (stopping) {
        if (code !== 0) failed = true;
        return;
      }
      const quick = Date.now() - entry.startedAt < HEALTHY_MS;
      const next = quick ? Math.min(MAX_PAUSE_MS, entry.pause * 2) : FIRST_PAUSE_MS;
      log(`optmark: worker ${index} (pid ${worker.process.pid}) ended (${signal ?? `exit code ${code}`}); starting another in ${next / 1000} s`);
      setTimeout(() => {
        if (!stopping) start(index, next);
      }, next).unref();
    });
  };

  for (let i = 0; i < options.workers; i++) start(i);
  log(`optmark: ${options.workers} workers (pids ${[...byIndex.values()].map((e) => e.worker.process.pid).join(', ')})`);

  return new Promise<number>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        log(`optmark: second ${signal}: ending the workers now`);
        for (const { worker } of byIndex.values()) worker.process.kill('SIGKILL');
        process.exit(1);
      }
      stopping = true;
      log(`optmark: ${signal}: draining ${byIndex.size} workers`);
      for (const { worker } of byIndex.values()) worker.process.kill('SIGTERM');
      const check = setInterval(() => {
        if (byIndex.size > 0 && [...byIndex.values()].some((e) => !e.worker.isDead())) return;
        clearInterval(check);
        resolve(failed ? 1 : 0);
      }, 50);
    };
    process.on('SIGTERM', stop).on('SIGINT', stop);
  });
}
