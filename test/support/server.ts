/**
 * Real servers for the tests: started in this process on a free port and
 * reached over HTTP, on the embedded database (a copy of the migrated
 * template) or on a throwaway PostgreSQL database of their own.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { Writable } from 'node:stream';
import pg from 'pg';
import { inject } from 'vitest';
import { freshDataDir } from './data-dir.js';
import type { AccountLimits, Clock } from '../../src/app/ports.js';
import { loadConfig } from '../../src/config.js';
import { startServer, type RunningServer } from '../../src/server/start.js';

export type Backend = 'pglite' | 'postgres';
export const BACKENDS: readonly Backend[] = ['pglite', 'postgres'];
export { freshDataDir };

/** A new, empty PostgreSQL database; `drop` removes it. */
export async function freshPgDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const adminUrl = inject('pgAdminUrl');
  const name = `optmark_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}

export interface TestServer {
  readonly url: string;
  readonly server: RunningServer;
  readonly dataDir: string;
  readonly databaseUrl: string | undefined;
  /** Create an account and return one of its keys. */
  key(plan?: 'free' | 'pro' | 'lifetime', name?: string): Promise<string>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  readonly backend?: Backend;
  readonly env?: Record<string, string>;
  readonly clock?: Clock;
  /** Reuse a data directory or database (a second server, a restart). */
  readonly dataDir?: string;
  readonly databaseUrl?: string;
  /** The server's log, at info level, one JSON object a line, into this stream (by default it logs nothing). */
  readonly logTo?: Writable;
  /**
   * Limits of the Pro and Lifetime plans, set in the limits table once the
   * server runs (the embedded database is a copy of a template whose table was
   * filled with the defaults, so OPTMARK_PROTECT_LIMIT would be ignored).
   */
  readonly paidPlanLimits?: Partial<AccountLimits>;
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const backend = options.backend ?? 'pglite';
  const dataDir = options.dataDir ?? freshDataDir();
  const pgDb = backend === 'postgres' && !options.databaseUrl ? await freshPgDatabase() : undefined;
  const databaseUrl = backend === 'postgres' ? (options.databaseUrl ?? pgDb!.url) : undefined;
  const config = loadConfig({
    PORT: '0',
    OPTMARK_DATA_DIR: dataDir,
    OPTMARK_LOG_LEVEL: 'silent',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ...options.env,
  });
  const server = await startServer(config, { clock: options.clock, logger: options.logTo ? { level: 'info', stream: options.logTo } : false });
  if (options.paidPlanLimits) {
    for (const plan of ['pro', 'lifetime']) await server.admin.setPlanLimits(plan, options.paidPlanLimits);
  }
  let accounts = 0;
  return {
    url: server.url,
    server,
    dataDir,
    databaseUrl,
    async key(plan = 'pro', name = `acct-${process.pid}-${++accounts}-${randomBytes(3).toString('hex')}`) {
      await server.admin.createAccount(name, plan);
      return (await server.admin.issueKey(name)).key;
    },
    async close() {
      await server.close();
      await pgDb?.drop();
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** POST one multipart request with the given parts (default: one `image` part). */
export async function postImage(
  url: string,
  key: string | undefined,
  bytes: Uint8Array | undefined,
  options: { path?: string; filename?: string; type?: string; extra?: Array<[string, Blob | string]>; field?: string } = {},
): Promise<Response> {
  const form = new FormData();
  if (bytes) form.append(options.field ?? 'image', new Blob([bytes], { type: options.type ?? 'application/octet-stream' }), options.filename ?? 'upload.bin');
  for (const [name, value] of options.extra ?? []) form.append(name, value);
  return fetch(`${url}${options.path ?? '/api/v1/protect'}`, {
    method: 'POST',
    headers: key ? { Authorization: `Bearer ${key}` } : {},
    body: form,
  });
}
