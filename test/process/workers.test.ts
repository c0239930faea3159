/**
 * `optmark serve --workers N` (OPTMARK_WORKERS) on PostgreSQL: N worker
 * processes behind one port, each answering a fair share; the account's allowance
 * exact across them under concurrent calls; a worker killed is started
 * again while the others answer; SIGTERM drains all and the primary exits
 * 0. On the embedded database, more than one worker is refused in words.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshPgDatabase } from '../support/server.js';
import { childrenOf, killAll, optmark, optmarkJson, postImage, spawnOptmark, type Child } from './support.js';

let db: Awaited<ReturnType<typeof freshPgDatabase>>;
let dataDir: string;

beforeAll(async () => {
  db = await freshPgDatabase();
  dataDir = mkdtempSync(join(tmpdir(), 'optmark-workers-'));
});
afterAll(async () => {
  await killAll();
  await db?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});


const LISTENING = /"pid":(\d+),[^\n]*"msg":"Server listening at (http:\/\/[^"]+)"/g;

async function listening(child: Child, count: number): Promise<{ url: string; pids: Set<number> }> {
  await child.waitFor(() => [...child.stdout.matchAll(LISTENING)].length >= count, `${count} workers listening`, 60_000);
  const matches = [...child.stdout.matchAll(LISTENING)];
  return { url: matches[0]![2]!, pids: new Set(matches.map((m) => Number(m[1]))) };
}

it('serves from two workers on one port, counts exactly across them, restarts a worker killed, and drains on SIGTERM', async () => {
  const env = { DATABASE_URL: db.url, OPTMARK_DATA_DIR: dataDir, OPTMARK_PROTECT_LIMIT: '40', OPTMARK_MAX_IN_FLIGHT_PER_KEY: '32', PORT: '0' };
  await optmarkJson(['accounts', 'create', '--name', 'workers', '--plan', 'pro'], env);
  const { key } = await optmarkJson<{ key: string }>(['keys', 'issue', '--account', 'workers'], env);

  const primary = spawnOptmark(['serve', '--workers', '2'], env);
  const { url, pids } = await listening(primary, 2);
  expect(pids.size).toBe(2);
  expect(childrenOf(primary.pid)).toEqual([...pids].sort());

  // 60 calls at once against a limit of 40: exactly 40 succeed, whichever worker took each.
  const statuses = await Promise.all(Array.from({ length: 60 }, () => postImage(url, key).then((r) => r.status)));
  expect(statuses.filter((s) => s === 200)).toHaveLength(40);
  expect(statuses.filter((s) => s === 429)).toHaveLength(20);
  expect((await optmarkJson<{ protect: { used: number } }>(['usage', '--account', 'workers'], env)).protect.used).toBe(40);
  // Both took a fair share of those 60 connections: each worker listens on a
  // socket of its own and the kernel spreads connections over them by a hash.
  const served = [...primary.stdout.matchAll(/"pid":(\d+),[^\n]*"msg":"request completed"/g)].map((m) => Number(m[1]));
  for (const pid of pids) expect(served.filter((p) => p === pid).length, `calls answered per worker: ${JSON.stringify(served)}`).toBeGreaterThanOrEqual(10);

  // A worker killed: the other answers meanwhile, and another is started in its place.
  const [victim] = [...pids];
  process.kill(victim!, 'SIGKILL');
  // Gone, and with it its listening socket: from then on the kernel sends
  // every new connection to the other worker's. (One that arrived in the
  // instant before was reset, docs/operations.md "Workers".)
  await primary.waitFor(() => primary.stderr.includes(`(pid ${victim}) ended (SIGKILL)`), 'the restart line', 10_000);
  // Each on a new connection (one kept alive to the killed worker is gone with it).
  const fresh = () => new Promise<number>((resolve, reject) => get(`${url}/healthz`, { agent: false, timeout: 5000 }, (res) => resolve(res.resume().statusCode!)).on('error', reject).on('timeout', () => reject(new Error('no answer in 5 s'))));
  // (With node:cluster's round robin, one handed to the worker as it died was never answered.)
  for (let i = 0; i < 20; i++) expect(await fresh()).toBe(200);
  await listening(primary, 3);
  const now = childrenOf(primary.pid);
  expect(now).toHaveLength(2);
  expect(now).not.toContain(victim);

  // SIGTERM: every worker drains, the primary exits 0.
  const exit = await primary.stop(20_000);
  expect(exit, primary.stderr.slice(-2000)).toEqual({ code: 0, signal: null });
  for (const pid of now) expect(() => process.kill(pid, 0)).toThrow();
}, 120_000);

it('refuses several workers on the embedded database, saying why', async () => {
  const run = await optmark(['serve', '--workers', '2'], { OPTMARK_DATA_DIR: mkdtempSync(join(tmpdir(), 'optmark-workers-embedded-')), PORT: '0' });
  expect(run.code).toBe(1);
  expect(run.stderr).toContain('needs PostgreSQL (DATABASE_URL)');
  const bad = await optmark(['serve', '--workers', 'many'], { PORT: '0' });
  expect(bad.code).toBe(2);
});
