/**
 * Small private files (the data directory's lock, the key rings) written
 * whole and read safely while other processes may do the same.
 *
 * createExclusive: create a file with its whole content at once, failing
 * with EEXIST when it already exists. `open(path, 'wx')` followed by a
 * write leaves a moment in which another process finds the file empty (a
 * lock without its pid, a key ring that does not parse); writing a private
 * temporary file and hard-linking it into place does not: the link either
 * appears complete or not at all.
 *
 * WatchedJsonFile: a JSON file kept in memory as parsed, followed when
 * another process rewrites it.
 */
import { linkSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
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

/**
 * Write a private JSON file (0600, in a 0700 directory) whole: created
 * exclusively (EEXIST if it exists), or replaced through a temporary file
 * and a rename, so a reader never sees half of it.
 */
function writePrivateJson(path: string, value: unknown, how: 'create' | 'replace'): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const text = `${JSON.stringify(value, null, 2)}\n`;
  if (how === 'create') return createExclusive(path, text);
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, text, { mode: 0o600 });
  renameSync(temporary, path);
}

const code = (error: unknown) => (error as NodeJS.ErrnoException).code;

/** How often a watched file's modification time is looked at, at most. */
const CHECK_EVERY_MS = 1000;

/**
 * A private JSON file held in memory as `parse` makes it. Several servers
 * may share one (a key ring): `current` notices a rewrite within a second,
 * and keeps what it has when the file is missing or broken for a while, so
 * a bad edit never stops signing or verifying.
 */
export class WatchedJsonFile<T> {
  private value!: T;
  private mtimeMs = 0;
  private checkedAt = 0;

  private constructor(
    readonly path: string,
    private readonly parse: (json: unknown, path: string) => T,
  ) {}

  /** Open the file, creating it with `initial()` when it does not exist (two processes starting together both read the first one written). */
  static open<T>(path: string, parse: (json: unknown, path: string) => T, initial: () => unknown): WatchedJsonFile<T> {
    const file = new WatchedJsonFile(path, parse);
    try {
      file.reload();
    } catch (error) {
      if (code(error) !== 'ENOENT') throw error;
      try {
        writePrivateJson(path, initial(), 'create');
      } catch (raced) {
        if (code(raced) !== 'EEXIST') throw raced;
      }
      file.reload();
    }
    return file;
  }

  /** Open the file if it exists; undefined when there is none. */
  static openExisting<T>(path: string, parse: (json: unknown, path: string) => T): WatchedJsonFile<T> | undefined {
    const file = new WatchedJsonFile(path, parse);
    try {
      file.reload();
      return file;
    } catch (error) {
      if (code(error) === 'ENOENT') return undefined;
      throw error;
    }
  }

  /** Read the file now (before a read-modify-write); throws when it cannot. */
  reload(): T {
    const value = this.parse(JSON.parse(readFileSync(this.path, 'utf8')), this.path);
    this.mtimeMs = statSync(this.path).mtimeMs;
    this.value = value;
    return value;
  }

  /** The content, re-read first if the file changed since. */
  get current(): T {
    const now = Date.now();
    if (now - this.checkedAt >= CHECK_EVERY_MS) {
      this.checkedAt = now;
      try {
        if (statSync(this.path).mtimeMs !== this.mtimeMs) this.reload();
      } catch {
        // Keep what we have: a broken or missing file must not stop the service.
      }
    }
    return this.value;
  }

  /** Replace the file's content whole, and read it back. */
  replace(content: unknown): T {
    writePrivateJson(this.path, content, 'replace');
    return this.reload();
  }
}
