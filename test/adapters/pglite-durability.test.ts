/**
 * PGlite never syncs (fsync=off, and its file system has no fsync): our
 * database thread does it (pglite-thread.js). Watched with strace, which
 * shows every fsync and fdatasync with the file it went to, between marker
 * system calls the driving script makes after each step: the database's
 * files are synced at open, the WAL after each committed write and not
 * before, and nothing for a read.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';

const THREAD = new URL('../../src/adapters/db/pglite-thread.js', import.meta.url).href;
const dir = mkdtempSync(join(tmpdir(), 'optmark-durability-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Drives the thread as PGliteThread does (one message per statement, Kysely's way of running a transaction);
// after each step, a failing access() on a marker path that strace shows in order with the syncs.
const DRIVER = `
import { accessSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
const mark = (step) => { try { accessSync('/optmark-step-' + step); } catch {} };
const worker = new Worker(new URL(${JSON.stringify(THREAD)}), { workerData: { path: process.argv[2] } });
await new Promise((resolve) => worker.once('message', resolve));
mark('open');
let next = 1;
const waiting = new Map();
worker.on('message', (m) => { const w = waiting.get(m.id); waiting.delete(m.id); m.error ? w.reject(new Error(m.error.message)) : w.resolve(m); });
const run = (sql, params = []) => new Promise((resolve, reject) => { const id = next++; waiting.set(id, { resolve, reject }); worker.postMessage({ id, sql, params }); });
await run('create table t (n int)'); mark('create');
await run('begin'); await run('insert into t values ($1)', [1]); mark('insert-in-transaction');
await run('commit'); mark('commit');
const { rows } = await run('select n from t', []); mark('select');
await run('insert into t values ($1)', [2]); mark('lone-insert');
const id = next++; await new Promise((resolve) => { waiting.set(id, { resolve }); worker.postMessage({ id, close: true }); });
console.log(JSON.stringify(rows));
`;

interface Step {
  readonly name: string;
  /** Files synced since the previous step (paths relative to the database directory). */
  readonly synced: string[];
}

function traced(database: string): Step[] {
  const log = join(dir, 'strace.log');
  const driver = join(dir, 'driver.mjs');
  writeFileSync(driver, DRIVER);
  const run = spawnSync('strace', ['-f', '-y', '--seccomp-bpf', '-e', 'trace=fsync,fdatasync,access,faccessat,faccessat2', '-o', log, process.execPath, driver, database], { encoding: 'utf8', timeout: 60_000 });
  if (run.error) throw new Error(`strace is needed for this test (Debian package strace): ${run.error.message}`);
  expect(run.status, run.stderr).toBe(0);
  expect(JSON.parse(run.stdout)).toEqual([{ n: 1 }]);
  const steps: Step[] = [];
  let synced: string[] = [];
  for (const line of readFileSync(log, 'utf8').split('\n')) {
    const step = /"\/optmark-step-([a-z-]+)"/.exec(line);
    if (step) {
      steps.push({ name: step[1]!, synced });
      synced = [];
    }
    const sync = /f(?:data)?sync\(\d+<([^>]+)>/.exec(line);
    if (sync && sync[1]!.startsWith(database)) synced.push(sync[1]!.slice(database.length + 1));
  }
  steps.push({ name: 'close', synced });
  return steps;
}

it('syncs the database at open and close, the WAL after each committed write, nothing for reads or uncommitted writes', () => {
  const database = join(dir, 'pgdata');
  const steps = traced(database);
  expect(steps.map((s) => s.name)).toEqual(['open', 'create', 'insert-in-transaction', 'commit', 'select', 'lone-insert', 'close']);
  const at = (name: string) => steps.find((s) => s.name === name)!.synced;
  const wal = (files: string[]) => files.filter((f) => /^pg_wal\/[0-9A-F]{24}$/.test(f));

  // Open: every file, the catalog's relations among them, and the directories.
  expect(at('open').filter((f) => f.startsWith('base/')).length).toBeGreaterThan(100);
  expect(at('open')).toContain('pg_wal');
  expect(wal(at('create')).length).toBeGreaterThanOrEqual(1);
  expect(at('insert-in-transaction')).toEqual([]);
  expect(wal(at('commit')).length).toBeGreaterThanOrEqual(1);
  expect(at('select')).toEqual([]);
  expect(wal(at('lone-insert')).length).toBeGreaterThanOrEqual(1);
  // Close: the shutdown checkpoint's pages and control file.
  expect(at('close')).toContain('global/pg_control');
}, 90_000);
