/**
 * Writing a marked file so that no reader ever sees half of it, and nothing
 * is replaced unasked: the bytes go to a temporary file created exclusively
 * next to the target, then take the target's name. A new file is published
 * by a hard link, which fails if a file appeared there meanwhile (the
 * temporary file is then removed); a replacement (--in-place, --overwrite)
 * by a rename, keeping the replaced file's permissions.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, fchmodSync, linkSync, mkdirSync, openSync, renameSync, rmSync, statSync, writev, writevSync } from 'node:fs';
import { link, mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { CliError } from '../files.js';

export interface WriteOptions {
  /** Replace a file already there (keeping its permissions); otherwise one there is an error (EEXIST). */
  readonly replace: boolean;
}

/** Bytes as one buffer or as the pieces that make it, in order (written with one writev). */
export type Bytes = Uint8Array | readonly Uint8Array[];

export async function writeAtomically(path: string, bytes: Bytes, options: WriteOptions): Promise<void> {
  const dir = dirname(path);
  const temporary = join(dir, `.optmark-${basename(path).slice(0, 80)}.${randomBytes(6).toString('hex')}.tmp`);
  let mode = 0o644;
  if (options.replace) {
    const existing = await stat(path).catch(() => undefined);
    if (existing) mode = existing.mode & 0o7777;
  }
  try {
    await mkdir(dir, { recursive: true });
    const file = await open(temporary, 'wx', mode);
    try {
      // A write may take fewer bytes than given (a disk filling up): the rest is written after them, and a
      // write that takes none is a failure (the error comes with the next call, or here).
      let pieces = bytes instanceof Uint8Array ? [bytes] : [...bytes];
      while (pieces.some((p) => p.length > 0)) {
        const { bytesWritten } = await file.writev(pieces);
        if (bytesWritten === 0) throw new Error('short write (0 bytes)');
        pieces = unwritten(pieces, bytesWritten);
      }
      // open()'s mode passes through the umask: the replaced file's own bits, exactly.
      if (options.replace) await file.chmod(mode);
    } finally {
      await file.close();
    }
    if (options.replace) await rename(temporary, path);
    else await publishNew(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new CliError(`${path} appeared while it was being written; not replaced`, 'output_exists');
    throw new CliError(`cannot write ${path}: ${(error as Error).message}`, 'unwritable_file');
  }
}

/** What is left of `pieces` once their first `written` bytes are written. */
export function unwritten(pieces: readonly Uint8Array[], written: number): Uint8Array[] {
  const left: Uint8Array[] = [];
  let skip = written;
  for (const piece of pieces) {
    if (skip >= piece.length) {
      skip -= piece.length;
      continue;
    }
    left.push(skip > 0 ? piece.subarray(skip) : piece);
    skip = 0;
  }
  return left;
}

async function publishNew(temporary: string, path: string): Promise<void> {
  try {
    await link(temporary, path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // A file system without hard links: check, then rename (a small window, but no silent overwrite of what was there before).
    if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'ENOSYS') {
      if (await stat(path).then(() => true, () => false)) throw Object.assign(new Error('exists'), { code: 'EEXIST' });
      await rename(temporary, path);
      return;
    }
    throw error;
  }
  await rm(temporary, { force: true });
}

/** Writes all of `pieces` at the file's offset: the rest after a write that takes fewer bytes (a disk filling up), and a failure when one takes none. */
export type WriteAll = (fd: number, pieces: readonly Uint8Array[]) => Promise<void>;

/** WriteAll on this thread (a worker thread, which does nothing else meanwhile). */
export const writeAllSync: WriteAll = async (fd, pieces) => {
  let left = [...pieces];
  while (left.some((p) => p.length > 0)) {
    const written = writevSync(fd, left);
    if (written === 0) throw new Error('short write (0 bytes)');
    left = unwritten(left, written);
  }
};

const writevAsync = promisify(writev);
/** WriteAll through libuv's threads, this thread free meanwhile (to hash another file). */
export const writeAllAsync: WriteAll = async (fd, pieces) => {
  let left = [...pieces];
  while (left.some((p) => p.length > 0)) {
    const { bytesWritten } = await writevAsync(fd, left);
    if (bytesWritten === 0) throw new Error('short write (0 bytes)');
    left = unwritten(left, bytesWritten);
  }
};

/**
 * writeAtomically with the file-system calls around the bytes (create,
 * link or rename, remove: microseconds each) made on this thread, and the
 * bytes written by `writeAll`: a batch's thread is then not put to sleep and
 * woken again for each of them, only (with writeAllAsync) for the bytes.
 */
export async function writeAtomicallyAround(path: string, bytes: Bytes, options: WriteOptions, writeAll: WriteAll): Promise<void> {
  const dir = dirname(path);
  const temporary = join(dir, `.optmark-${basename(path).slice(0, 80)}.${randomBytes(6).toString('hex')}.tmp`);
  let mode = 0o644;
  if (options.replace) {
    try {
      mode = statSync(path).mode & 0o7777;
    } catch {
      // nothing there yet
    }
  }
  try {
    mkdirSync(dir, { recursive: true });
    const fd = openSync(temporary, 'wx', mode);
    try {
      await writeAll(fd, bytes instanceof Uint8Array ? [bytes] : bytes);
      if (options.replace) fchmodSync(fd, mode);
    } finally {
      closeSync(fd);
    }
    if (options.replace) renameSync(temporary, path);
    else {
      try {
        linkSync(temporary, path);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw error;
        if (statSync(path, { throwIfNoEntry: false })) throw Object.assign(new Error('exists'), { code: 'EEXIST' });
        renameSync(temporary, path);
        return;
      }
      rmSync(temporary, { force: true });
    }
  } catch (error) {
    rmSync(temporary, { force: true });
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new CliError(`${path} appeared while it was being written; not replaced`, 'output_exists');
    throw new CliError(`cannot write ${path}: ${(error as Error).message}`, 'unwritable_file');
  }
}
