/**
 * Open the database: PostgreSQL through `pg` when DATABASE_URL is set, else
 * the embedded PGlite in the data directory (locked against a second process).
 * One Kysely dialect, one set of migrations, run here at every open.
 */
import { mkdirSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { Kysely, PostgresDialect } from 'kysely';
import { Migrator } from 'kysely/migration';
import pg from 'pg';
import { lockDataDir } from '../data-dir-lock.js';
import type { LimitSeeds } from '../../app/ports.js';
import { migrationProvider } from './migrations.js';
import { PGlitePool } from './pglite-pool.js';
import { PGliteThread } from './pglite-worker.js';
import type { Database } from './schema.js';

export interface DatabaseHandle {
  readonly db: Kysely<Database>;
  readonly kind: 'pglite' | 'postgres';
  /** The embedded database's one connection, for a library that sends its own SQL (the job queue): every statement's rows. */
  readonly runAll?: (text: string, values?: readonly unknown[]) => Promise<{ rows: unknown[] }>;
  close(): Promise<void>;
}

export interface OpenOptions {
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  /** Where pool and connection errors are reported (they must never go unhandled). */
  readonly onError?: (error: Error) => void;
  /** What a new database's limits table starts with (the settings of the start that creates it); default the documented defaults. */
  readonly limitSeeds?: LimitSeeds;
}

// `timestamptz` and friends come back as Date; `int8` (count(*)) as a number.
pg.types.setTypeParser(20, (value: string) => Number(value));

export async function openDatabase(options: OpenOptions): Promise<DatabaseHandle> {
  const onError = options.onError ?? (() => {});
  if (options.databaseUrl) {
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: 10,
      connectionTimeoutMillis: 3000,
      idleTimeoutMillis: 30_000,
    });
    // An idle or checked-out client that loses its connection emits 'error';
    // without a listener that would crash the process.
    pool.on('error', onError);
    pool.on('connect', (client) => client.on('error', onError));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    await migrate(db, options.limitSeeds);
    return { db, kind: 'postgres', close: () => db.destroy() };
  }

  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const lock = lockDataDir(options.dataDir);
  try {
    // Made private before PGlite creates anything in it (its thread makes what is inside private: pglite-thread.js).
    const pgdata = join(options.dataDir, 'pgdata');
    mkdirSync(pgdata, { recursive: true, mode: 0o700 });
    const pglite = await PGliteThread.start(pgdata).catch((error: unknown) => {
      throw explainStartFailure(error, options.dataDir);
    });
    const pool = new PGlitePool(pglite);
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: pool as never }) });
    await migrate(db, options.limitSeeds);
    return {
      db,
      kind: 'pglite',
      runAll: (text, values) => pool.runAll(text, values),
      async close() {
        try {
          await db.destroy();
        } finally {
          lock.release();
        }
      },
    };
  } catch (error) {
    lock.release();
    throw error;
  }
}

/** The embedded database could not start for a reason of the machine's (a full disk): a setup problem, not a bug. */
export class DatabaseStartError extends Error {}

/** Room PostgreSQL needs to start (a WAL segment is 16 MB). */
const MIN_FREE_BYTES = 16 * 1024 * 1024;

/**
 * PGlite reports a start on a full disk only as "Aborted()": name the likely
 * cause when the data directory's file system is (nearly) full.
 */
function explainStartFailure(error: unknown, dataDir: string): unknown {
  let free: number;
  try {
    const stats = statfsSync(dataDir);
    free = stats.bavail * stats.bsize;
  } catch {
    return error;
  }
  if (free >= MIN_FREE_BYTES) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new DatabaseStartError(`the embedded database could not start: no space left on the file system of ${dataDir} (${Math.floor(free / 1024)} KB free; PGlite said "${message}")`, { cause: error });
}

async function migrate(db: Kysely<Database>, seeds: LimitSeeds | undefined): Promise<void> {
  const { error } = await new Migrator({ db, provider: migrationProvider(seeds) }).migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
}
