/**
 * Small private files (lock, key rings) written whole and loaded safely
 * while other processes may do the same.
 *
 * createExclusive: create a file with its whole content at once, failing
 * with EEXIST when it already exists. `open(path, 'wx')` followed by a
 * write leaves a moment in which another process finds the file empty (a
 * lock without its pid, a key ring that does not parse); writing a private
 * temporary file and hard-linking it into place does not: the link either
 * appears complete or not at all.
 */
import { linkSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export function createExclusive(path: string, text: string, mode = 0o600): void {
  const temporary = `${path}.${process.pid}.${Date.now()}.tmp`;
  writeFileSync(temporary, text, { mode, flag: 'wx' });
  try {
    linkSync(temporary, path);
  } finally {
    rmSync(temporary, { force: true });
  }
}

const code = (error: unknown) => (error as NodeJS.ErrnoException).code;

/**
 * Load a file, creating it first when it does not exist. Two processes
 * starting together both load the one that was created first.
 */
export function loadOrCreate(load: () => void, create: () => void): void {
  try {
    load();
  } catch (error) {
    if (code(error) !== 'ENOENT') throw error;
    try {
      create();
    } catch (raced) {
      if (code(raced) !== 'EEXIST') throw raced;
    }
    load();
  }
}

/** Load a file if it exists: false when there is none. */
export function loadIfExists(load: () => void): boolean {
  try {
    load();
    return true;
  } catch (error) {
    if (code(error) === 'ENOENT') return false;
    throw error;
  }
}

/**
 * Write a private JSON file (0600, in a 0700 directory) whole: created
 * exclusively (EEXIST if it exists), or replaced through a temporary file
 * and a rename, so a reader never sees half of it.
 */
export function writePrivateJson(path: string, value: unknown, how: 'create' | 'replace'): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const text = `${JSON.stringify(value, null, 2)}\n`;
  if (how === 'create') return createExclusive(path, text);
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, text, { mode: 0o600 });
  renameSync(temporary, path);
}
