/**
 * Lets Kysely's PostgresDialect drive the embedded database. It is one
 * connection, so the "pool" hands it out to one borrower at a time (a
 * transaction keeps it until it is done) and queues the rest.
 */
import type { EmbeddedDatabase } from './pglite-worker.js';

interface QueryResult {
  command: string;
  rowCount: number;
  rows: unknown[];
}

interface PGlitePoolClient {
  query(text: string, params?: readonly unknown[]): Promise<QueryResult>;
  release(): void;
}

export class PGlitePool {
  private tail: Promise<void> = Promise.resolve();

  constructor(private readonly db: EmbeddedDatabase) {}

  async connect(): Promise<PGlitePoolClient> {
    const previous = this.tail;
    const { promise, resolve: release } = Promise.withResolvers<void>();
    this.tail = promise;
    await previous;
    const db = this.db;
    return {
      async query(text, params = []) {
        const result = await db.run(text, params);
        return { command: text.trimStart().split(/\s/, 1)[0]!.toUpperCase(), rowCount: result.affectedRows ?? result.rows.length, rows: result.rows };
      },
      release,
    };
  }

  /**
   * One text run in its turn between borrowers, with the rows of every
   * statement it holds (a multi-statement text without parameters).
   */
  async runAll(text: string, params: readonly unknown[] = []): Promise<{ rows: unknown[] }> {
    const previous = this.tail;
    const { promise, resolve: release } = Promise.withResolvers<void>();
    this.tail = promise;
    await previous;
    try {
      const result = await this.db.run(text, params, { all: true });
      return { rows: result.rows };
    } finally {
      release();
    }
  }

  async end(): Promise<void> {
    await this.tail;
    await this.db.close();
  }
}
