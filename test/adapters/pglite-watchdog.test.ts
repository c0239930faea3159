/**
 * The embedded database's thread is watched: a statement left unanswered
 * for STALL_MS (here a sleep stands in for PGlite spinning on a file system
 * gone read-only) fails as "unavailable", so does every later one at once,
 * the thread is stopped and closing still ends.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { guarded } from '../../src/adapters/db/unavailable.js';
import { PGliteThread, STALL_MS } from '../../src/adapters/db/pglite-worker.js';
import { ServiceUnavailableError } from '../../src/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'optmark-watchdog-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('a statement stuck past STALL_MS fails as unavailable, later ones fail at once, and close ends', async () => {
  const db = await PGliteThread.start(join(dir, 'pgdata'));
  expect((await db.run('select 1 as one', [])).rows).toEqual([{ one: 1 }]);

  const started = performance.now();
  const stuck = await guarded(() => db.run(`select pg_sleep(${(STALL_MS / 1000) * 4})`, [])).catch((e: unknown) => e);
  const waited = performance.now() - started;
  expect(stuck).toBeInstanceOf(ServiceUnavailableError);
  expect(((stuck as Error).cause as Error).message).toMatch(/got no answer in/);
  expect(waited).toBeGreaterThanOrEqual(STALL_MS);
  expect(waited).toBeLessThan(STALL_MS * 2);

  const later = performance.now();
  await expect(guarded(() => db.run('select 1', []))).rejects.toBeInstanceOf(ServiceUnavailableError);
  expect(performance.now() - later).toBeLessThan(100);
  await db.close();
}, 30_000);
