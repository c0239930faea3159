/**
 * Small private files (the data directory's lock, the key rings) written
 * whole and read safely while other processes may do the same.
 *
 * createExclusive: create a file with its whole content at once, failing
 * with EEXIST when it already exists. `open(path, 'wx')` followed by a
 * write leaves a moment in which another process finds the file empty (a
 * lock without its pid, a key ring that does not parse); writing a private
 * temporary file and hard-linking it into place does not: the link either
 * appears complete or not at all. Temporary files are created exclusively,
 * under random names, never through a symbolic link (writeTemporary).
 *
 * WatchedJsonFile: a JSON file kept in memory as parsed, followed when
 * another process rewrites it.
 *
 * InvalidKeyFileError: such a file exists but cannot be used (not JSON, or
 * not the file it should be): a problem of setup, named in one line.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * A new temporary file next to `path`, holding `text`: created exclusively
 * (never an existing file), never through a symbolic link, under a name no
 * one can guess (128 random bits), with `mode`; written and synced. Another
 * user who can write the directory cannot prepare it: a predictable name
 * opened through a planted link handed the key file's content to them.
 */
function writeTemporary(path: string, text: string, mode: number): string {
  const temporary = `${path}.${randomBytes(16).toString('hex')}.tmp`;
  const fd = openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  try {
    const bytes = Buffer.from(text, 'utf8');
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at);
    fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    rmSync(temporary, { force: true });
    throw error;
  }
  closeSync(fd);
  return temporary;
}

export function createExclusive(path: string, text: string, mode = 0o600): void {
  const temporary = writeTemporary(path, text, mode);
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
  const temporary = writeTemporary(path, text, 0o600);
  try {
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}

const code = (error: unknown) => (error as NodeJS.ErrnoException).code;

/**
 * A key file that exists but cannot be used: not JSON, or JSON of another
 * shape. A setup problem (a bad edit, the wrong file named), not a bug: the
 * message names the file and what is wrong with it, in one line.
 */
export class InvalidKeyFileError extends Error {
  readonly code = 'invalid_key_file';
  constructor(
    readonly path: string,
    /** What the file should be, e.g. "fingerprint key file". */
    readonly kind: string,
    /** What is wrong, as the end of a sentence about it: "is not valid JSON (...)". */
    readonly problem: string,
  ) {
    super(`the ${kind} ${path} ${problem}`);
  }
}

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
  private wrote = false;

  private constructor(
    readonly path: string,
    /** What the file is, for messages: "fingerprint key file". */
    private readonly kind: string,
    /** The content as used; throws an Error whose message says what is wrong ("has no secrets"), which InvalidKeyFileError completes. */
    private readonly parse: (json: unknown) => T,
  ) {}

  /** Whether open() created the file (false when it existed, or another process created it first). */
  get created(): boolean {
    return this.wrote;
  }

  /**
   * Open the file, creating it with `initial()` when it does not exist (two
   * processes starting together both read the first one written).
   * @throws InvalidKeyFileError when it exists and cannot be used; a system error when it cannot be read or written
   */
  static open<T>(path: string, kind: string, parse: (json: unknown) => T, initial: () => unknown): WatchedJsonFile<T> {
    const file = new WatchedJsonFile(path, kind, parse);
    try {
      file.reload();
    } catch (error) {
      if (code(error) !== 'ENOENT') throw error;
      try {
        writePrivateJson(path, initial(), 'create');
        file.wrote = true;
      } catch (raced) {
        if (code(raced) !== 'EEXIST') throw raced;
      }
      file.reload();
    }
    return file;
  }

  /**
   * Open the file if it exists; undefined when there is none.
   * @throws InvalidKeyFileError when it exists and cannot be used; a system error when it cannot be read
   */
  static openExisting<T>(path: string, kind: string, parse: (json: unknown) => T): WatchedJsonFile<T> | undefined {
    const file = new WatchedJsonFile(path, kind, parse);
    try {
      file.reload();
      return file;
    } catch (error) {
      if (code(error) === 'ENOENT') return undefined;
      throw error;
    }
  }

  /** Read the file now (before a read-modify-write); throws when it cannot (InvalidKeyFileError when it is not what it should be). */
  reload(): T {
    const text = readFileSync(this.path, 'utf8');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      // V8 quotes the text around an unexpected token: not repeated, as the text may be a secret.
      const reason = (error as Error).message.replace(/, ".*" is not valid JSON$/s, '');
      throw new InvalidKeyFileError(this.path, this.kind, `is not valid JSON (${reason})`);
    }
    let value: T;
    try {
      value = this.parse(json);
    } catch (error) {
      throw new InvalidKeyFileError(this.path, this.kind, (error as Error).message);
    }
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
