/**
 * Before a run: dist/ built from the current sources (the server runs from
 * it), and a migrated embedded database to copy for each data directory
 * (PGlite's initdb takes seconds), cached per migrations version.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBuilt, ensureTemplate } from '../../http-server.js';
import { onCleanup } from './cleanup.js';
import { ROOT } from './server.js';

const CACHE = join(ROOT, '.bench-tmp', 'stress');

/** Build if needed; the template's path. */
export function prepare(log: (line: string) => void): string {
  ensureBuilt(ROOT, log);
  return ensureTemplate(ROOT, CACHE, log);
}

/** A new directory, removed when the run ends. */
export function scratchDir(prefix: string, parent = tmpdir()): string {
  const dir = mkdtempSync(join(parent, `optmark-stress-${prefix}-`));
  onCleanup(dir, () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A data directory holding a copy of the template (an empty, migrated database). */
export function freshDataDir(template: string, dir = scratchDir('data')): string {
  cpSync(join(template, 'pgdata'), join(dir, 'pgdata'), { recursive: true });
  return dir;
}
