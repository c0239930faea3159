/**
 * An exclusive lock on the data directory, so a second process cannot open
 * the embedded database next to us (PGlite has no lock of its own, and two
 * writers lose updates). The lock file holds the owner's pid; a lock whose
 * process is gone is stale and taken over.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createExclusive } from './private-file.js';

const LOCK_FILE = 'optmark.lock';

export class DataDirLockedError extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(`the data directory ${dataDir} is in use by process ${pid}`);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface DataDirLock {
  release(): void;
}

export function lockDataDir(dataDir: string): DataDirLock {
  const path = join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      createExclusive(path, String(process.pid));
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          if (readOwner(path) === process.pid) rmSync(path, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = readOwner(path);
      if (owner !== undefined && owner !== process.pid && alive(owner)) throw new DataDirLockedError(dataDir, owner);
      rmSync(path, { force: true }); // stale: its process is gone
    }
  }
  throw new Error(`could not lock ${dataDir}`);
}

/** The pid holding the lock, or undefined when there is no (readable) lock. */
function readOwner(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}
