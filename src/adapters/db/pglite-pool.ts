/**
 * Lets Kysely's PostgresDialect drive an embedded PGlite database. PGlite is
 * one connection, so the "pool" hands it out to one borrower at a time (a
 * transaction keeps it until it is done) and queues the rest.
 */
import type { PGlite } from '@electric-sql/pglite';

interface QueryResult {
  command: string;
  rowCount: number;
  rows: unknown[];
}

export interface PGlitePoolClient {
  query(text: string, params?: readonly unknown[]): Promise<QueryResult>;
  release(): void;
}

export class PGlitePool {
  private tail: Promise<void> = Promise.resolve();

  constructor(private readonly db: PGlite) {}

  async connect(): Promise<PGlitePoolClient> {
    let release!: () => void;
    const previous = this.tail;
    this.tail = new Promise<void>((resolve) => (release = resolve));
    await previous;
    const db = this.db;
    return {
      async query(text, params = []) {
        // Without parameters use the simple protocol, which accepts several
        // statements; with them, the extended protocol.
        const result = params.length > 0 ? await db.query(text, [...params]) : (await db.exec(text)).at(-1);
        const rows = (result?.rows ?? []) as unknown[];
        return { command: text.trimStart().split(/\s/, 1)[0]!.toUpperCase(), rowCount: result?.affectedRows ?? rows.length, rows };
      },
      release,
    };
  }

  async end(): Promise<void> {
    await this.tail;
    await this.db.close();
  }
}
