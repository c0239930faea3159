/**
 * The file access of a batch's slot (mark-here.ts on the main thread, each
 * of mark-worker.ts's threads): files read whole into buffers kept from
 * file to file, and copies written from their parts (writev). The bytes
 * are read and written by `io`'s calls (through libuv's threads on the main
 * thread, which has other files to work on meanwhile; on the thread itself
 * in a worker, which has nothing else to do); opening, sizes, closing and
 * the temporary file's link or rename (microseconds each) are asked on the
 * calling thread, which is then not put to sleep and woken for each.
 */
import { closeSync, fstatSync, openSync, read, readSync } from 'node:fs';
import { promisify } from 'node:util';
import { unreadable } from '../files.js';
import type { FileAccess } from './mark-one.js';
import { writeAllAsync, writeAllSync, writeAtomically, type WriteAll } from './write.js';

/** Reads up to `length` bytes of `fd` at `position` into `buffer` at the same offset; resolves to how many it read. */
export type ReadSome = (fd: number, buffer: Uint8Array, position: number, length: number) => Promise<number>;

const readAt = promisify(read);

/** How a slot's bytes are read and written. */
export interface SlotIo {
  readonly readSome: ReadSome;
  readonly writeAll: WriteAll;
}

/** Through libuv's threads, the calling thread free meanwhile. */
export const ASYNC_IO: SlotIo = {
  readSome: async (fd, buffer, position, length) => (await readAt(fd, buffer, position, length, position)).bytesRead,
  writeAll: writeAllAsync,
};

/** On the calling thread (a worker thread). */
export const SYNC_IO: SlotIo = {
  readSome: async (fd, buffer, position, length) => readSync(fd, buffer, position, length, position),
  writeAll: writeAllSync,
};

/**
 * One buffer kept from file to file, grown (at least doubled) when a file
 * is larger: a file's bytes in it are valid until the next file is read
 * into it. `shared`: in shared memory (another thread reads it where it is).
 */
export function keptBuffer(shared = false): (size: number) => Uint8Array {
  let buffer: Uint8Array = new Uint8Array(0);
  return (size) => {
    if (size > buffer.length) {
      const length = Math.max(size, buffer.length * 2);
      buffer = shared ? new Uint8Array(new SharedArrayBuffer(length)) : new Uint8Array(length);
    }
    return buffer;
  };
}

/** Reads a whole file into a kept buffer, its bytes through `readSome`. */
function keptReader(readSome: ReadSome, shared: boolean): (path: string) => Promise<Uint8Array> {
  const room = keptBuffer(shared);
  return async (path) => {
    const fd = openSync(path, 'r');
    try {
      const { size } = fstatSync(fd);
      const buffer = room(size);
      let at = 0;
      while (at < size) {
        const read = await readSome(fd, buffer, at, size - at);
        if (read === 0) break;
        at += read;
      }
      return buffer.subarray(0, at);
    } finally {
      closeSync(fd);
    }
  };
}

/**
 * A slot's file access: the input in one kept buffer (in shared memory with
 * `sharedInput`), an output already there in another (it is compared with
 * the input's bytes), copies written atomically.
 */
export function keptFileAccess(io: SlotIo, { sharedInput = false } = {}): FileAccess {
  const input = keptReader(io.readSome, sharedInput);
  const existing = keptReader(io.readSome, false);
  return {
    read: (path) => input(path).catch((error: unknown) => Promise.reject(unreadable(error))),
    existing: (path) => existing(path).catch(() => undefined),
    write: (path, bytes, options) => writeAtomically(path, bytes, options, io.writeAll),
  };
}
