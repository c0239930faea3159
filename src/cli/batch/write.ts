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
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { CliError } from '../files.js';

export interface WriteOptions {
  /** Replace a file already there (keeping its permissions); otherwise one there is an error (EEXIST). */
  readonly replace: boolean;
}

/** Bytes as one buffer or as the pieces that make it, in order (written with one writev). */
export type Bytes = Uint8Array | readonly Uint8Array[];

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

/** Writes all of `pieces` at the file's offset: the rest after a write that takes fewer bytes (a disk filling up), and a failure when one takes none. */
export type WriteAll = (fd: number, pieces: readonly Uint8Array[]) => Promise<void>;

/** Writes `pieces` in order with `writeSome` (it returns how many bytes it wrote), until all are written; a write that takes none is a failure. */
async function writeEvery(pieces: readonly Uint8Array[], writeSome: (left: Uint8Array[]) => number | Promise<number>): Promise<void> {
  let left = [...pieces];
  while (left.some((p) => p.length > 0)) {
    const written = await writeSome(left);
    if (written === 0) throw new Error('short write (0 bytes)');
    left = unwritten(left, written);
  }
}

/** WriteAll on this thread (a worker thread, which does nothing else meanwhile). */
export const writeAllSync: WriteAll = (fd, pieces) => writeEvery(pieces, (left) => writevSync(fd, left));

const writevAsync = promisify(writev);
/** WriteAll through libuv's threads, this thread free meanwhile (to hash another file). */
export const writeAllAsync: WriteAll = (fd, pieces) => writeEvery(pieces, async (left) => (await writevAsync(fd, left)).bytesWritten);

/**
 * Writes `bytes` to `path` as described above. The file-system calls around
 * the bytes (create, link or rename, remove: microseconds each) are made on
 * this thread, and the bytes written by `writeAll`: a batch's thread is then
 * not put to sleep and woken again for each of them, only (with
 * writeAllAsync, the default) for the bytes.
 */
export async function writeAtomically(path: string, bytes: Bytes, options: WriteOptions, writeAll: WriteAll = writeAllAsync): Promise<void> {
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
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new CliError(`${path} is in the way; not replaced (pass --overwrite to replace it)`, 'output_exists');
    throw new CliError(`cannot write ${path}: ${(error as Error).message}`, 'unwritable_file');
  }
}
