/**
 * Data directories for tests: the embedded database already migrated, copied
 * from the template the global setup made once (PGlite's initdb costs seconds
 * of CPU). Light on purpose: process tests use it without loading the server.
 */
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';

/** Copy the migrated database into `dir` (which must exist), as its `pgdata`. */
export function copyMigratedDatabase(dir: string): void {
  cpSync(join(inject('pgliteTemplate'), 'pgdata'), join(dir, 'pgdata'), { recursive: true });
}

/** A fresh data directory holding the migrated embedded database. */
export function freshDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'optmark-data-'));
  copyMigratedDatabase(dir);
  return dir;
}
