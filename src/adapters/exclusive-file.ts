/**
 * Create a file with its whole content at once, failing with EEXIST when it
 * already exists. `open(path, 'wx')` followed by a write leaves a moment in
 * which another process finds the file empty (a lock without its pid, a key
 * ring that does not parse); writing a private temporary file and hard-linking
 * it into place does not: the link either appears complete or not at all.
 */
import { linkSync, rmSync, writeFileSync } from 'node:fs';

export function createExclusive(path: string, text: string, mode = 0o600): void {
  const temporary = `${path}.${process.pid}.${Date.now()}.tmp`;
  writeFileSync(temporary, text, { mode, flag: 'wx' });
  try {
    linkSync(temporary, path);
  } finally {
    rmSync(temporary, { force: true });
  }
}
