/**
 * The main thread's side of pglite-thread.js: start the thread, send it
 * statements, match answers to questions. If the thread dies, every pending
 * and later statement fails as "unavailable" (503), never hangs.
 *
 * A thread can also stop answering without dying: when its file system turns
 * read-only under it, PGlite was seen spinning at full CPU forever. A
 * watchdog treats a statement left unanswered for STALL_MS as the same
 * failure, and stops the thread.
 */
import { Worker } from 'node:worker_threads';

export interface StatementResult {
  readonly rows: unknown[];
  readonly affectedRows: number | undefined;
}

/** What PGlitePool needs from the embedded database. */
export interface EmbeddedDatabase {
  run(sql: string, params: readonly unknown[], options?: { readonly all?: boolean }): Promise<StatementResult>;
  close(): Promise<void>;
}

interface Pending {
  resolve(result: StatementResult): void;
  reject(error: Error): void;
  readonly since: number;
}

/** A statement of ours takes milliseconds; one unanswered this long means the thread is stuck. */
export const STALL_MS = 5000;
const WATCH_EVERY_MS = 500;

class EmbeddedDatabaseError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

export class PGliteThread implements EmbeddedDatabase {
  private readonly pending = new Map<number, Pending>();
  private next = 1;
  private failure: Error | undefined;
  private readonly watchdog: NodeJS.Timeout;

  private constructor(private readonly worker: Worker) {
    worker.on('message', (message: { id: number; rows: unknown[]; affectedRows?: number; error?: { message: string; code?: string } }) => {
      const waiting = this.pending.get(message.id);
      if (!waiting) return;
      this.pending.delete(message.id);
      if (message.error) waiting.reject(new EmbeddedDatabaseError(message.error.message, message.error.code));
      else waiting.resolve({ rows: message.rows, affectedRows: message.affectedRows });
    });
    worker.on('error', (error) => this.fail(error));
    worker.on('exit', (code) => this.fail(new Error(`its thread exited with code ${code}`)));
    this.watchdog = setInterval(() => {
      const oldest = this.pending.values().next().value as Pending | undefined;
      if (oldest && performance.now() - oldest.since > STALL_MS) {
        this.fail(new Error(`a statement got no answer in ${STALL_MS / 1000} s (is its disk failing?)`));
        void this.worker.terminate();
      }
    }, WATCH_EVERY_MS).unref();
  }

  private fail(error: Error): void {
    clearInterval(this.watchdog);
    this.failure ??= new EmbeddedDatabaseError(`the embedded database stopped: ${error.message}`, 'ECONNRESET');
    for (const waiting of this.pending.values()) waiting.reject(this.failure);
    this.pending.clear();
  }

  /** Open the database at `path` on a new thread; resolves once it is ready. */
  static start(path: string): Promise<PGliteThread> {
    const worker = new Worker(new URL('./pglite-thread.js', import.meta.url), { workerData: { path } });
    return new Promise((resolve, reject) => {
      const onError = (error: Error) => reject(error);
      const onExit = (code: number) => reject(new Error(`the embedded database thread exited with code ${code} while opening`));
      worker.once('error', onError);
      worker.once('exit', onExit);
      worker.once('message', () => {
        worker.off('error', onError);
        worker.off('exit', onExit);
        resolve(new PGliteThread(worker));
      });
    });
  }

  run(sql: string, params: readonly unknown[], options: { readonly all?: boolean } = {}): Promise<StatementResult> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, since: performance.now() });
      this.worker.postMessage({ id, sql, params, all: options.all === true });
    });
  }

  /** Close the database cleanly; a stuck thread is stopped by the watchdog instead, so this always ends. */
  async close(): Promise<void> {
    if (this.failure) return;
    const id = this.next++;
    await new Promise<StatementResult>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, since: performance.now() });
      this.worker.postMessage({ id, close: true });
    }).catch(() => {});
    clearInterval(this.watchdog);
    await this.worker.terminate();
  }
}
