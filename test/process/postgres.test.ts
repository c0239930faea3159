/**
 * PostgreSQL (DATABASE_URL): the admin CLI talks to the database directly,
 * and two `optmark serve` processes sharing one database share each
 * account's monthly allowance exactly, under concurrent load.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshPgDatabase } from '../support/server.js';
import { KEY_PATTERN, killAll, optmarkJson, postImage, secondsToNextMonth, startServe, type Server } from './support.js';

let db: Awaited<ReturnType<typeof freshPgDatabase>>;
let dataDir: string;
const servers: Server[] = [];

beforeAll(async () => {
  db = await freshPgDatabase();
  // With DATABASE_URL the data directory is not used; point it somewhere empty to be sure.
  dataDir = mkdtempSync(join(tmpdir(), 'optmark-pg-unused-'));
});
afterAll(async () => {
  await killAll();
  await db?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

it('two servers on one PostgreSQL database, 64 clients, 150 protect calls: exactly 100 x 200 and 50 x 429', async () => {
  // Admission (per key, in all) is tested elsewhere: here all 64 clients get in.
  const env = { DATABASE_URL: db.url, OPTMARK_DATA_DIR: dataDir, OPTMARK_PROTECT_LIMIT: '100', OPTMARK_MAX_IN_FLIGHT_PER_KEY: '64', OPTMARK_MAX_IN_FLIGHT: '128' };

  // The CLI alone creates the schema, the account and a key: no server involved.
  expect(await optmarkJson(['accounts', 'create', '--name', 'acme', '--plan', 'pro'], env)).toMatchObject({ name: 'acme', plan: 'pro' });
  const { key } = await optmarkJson<{ key: string }>(['keys', 'issue', '--account', 'acme'], env);

  servers.push(...(await Promise.all([startServe(env), startServe(env)])));
  const [a, b] = servers as [Server, Server];
  expect(a.url).not.toBe(b.url);
  for (const server of servers) expect(server.stderr).not.toMatch(KEY_PATTERN); // not an empty database: no bootstrap

  const TOTAL = 150;
  const CLIENTS = 64;
  let next = 0;
  const results: Array<{ server: number; status: number; body: Record<string, unknown>; type: string | null; retryAfter: string | null; expected: number }> = [];
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < TOTAL) {
        const i = next++;
        const server = i % 2;
        const response = await postImage(servers[server]!.url, key);
        const expected = secondsToNextMonth();
        results.push({
          server,
          status: response.status,
          body: (await response.json()) as Record<string, unknown>,
          type: response.headers.get('content-type'),
          retryAfter: response.headers.get('retry-after'),
          expected,
        });
      }
    }),
  );

  expect(results).toHaveLength(TOTAL);
  const count = (status: number, server?: number) => results.filter((r) => r.status === status && (server === undefined || r.server === server)).length;
  expect({ ok: count(200), exhausted: count(429), other: results.filter((r) => r.status !== 200 && r.status !== 429).map((r) => [r.status, r.body]) }).toEqual({
    ok: 100,
    exhausted: 50,
    other: [],
  });
  // Both servers took their half of the calls and each granted some of the allowance.
  expect(results.filter((r) => r.server === 0)).toHaveLength(75);
  expect(count(200, 0)).toBeGreaterThan(0);
  expect(count(200, 1)).toBeGreaterThan(0);

  for (const r of results.filter((x) => x.status === 429)) {
    expect(r.type).toMatch(/^application\/json/);
    expect(r.body).toMatchObject({ code: 'quota_exceeded', error: expect.any(String), requestId: expect.any(String) });
    const retryAfter = Number(r.retryAfter);
    expect(Number.isInteger(retryAfter)).toBe(true);
    // Seconds to the first instant of the next UTC month, as of the answer.
    expect(retryAfter).toBeGreaterThanOrEqual(r.expected);
    expect(retryAfter).toBeLessThanOrEqual(r.expected + 5);
  }

  const usage = await optmarkJson<{ protect: { used: number; limit: number; remaining: number } }>(['usage', '--account', 'acme'], env);
  expect(usage.protect).toEqual({ used: 100, limit: 100, remaining: 0 });
  for (const server of servers) {
    const report = (await (await fetch(`${server.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } })).json()) as typeof usage;
    expect(report.protect).toEqual({ used: 100, limit: 100, remaining: 0 });
  }

  for (const server of servers) expect(await server.stop()).toEqual({ code: 0, signal: null });
  for (const server of servers) expect(server.stdout + server.stderr).not.toContain(key);
  // PostgreSQL mode keeps no embedded database, lock or socket in the data
  // directory: only the key files (signing, fingerprint, vault), which both servers share here,
  // the private folder where repository scans fetch (empty once they are done), and the vault's
  // folder, which holds only its storage's id until an account keeps a file.
  expect(readdirSync(dataDir).sort()).toEqual(['fingerprint-keys.json', 'scans', 'signing-keys.json', 'vault', 'vault-keys.json']);
  expect(readdirSync(join(dataDir, 'vault'))).toEqual(['storage-id']);
  expect(readdirSync(join(dataDir, 'scans'))).toEqual([]);
}, 90_000);
