/**
 * A batch of `optmark protect` marked here, on this thread, as a worker
 * thread marks (mark-worker.ts): each file's copy written from the input's
 * bytes and the new metadata in one writev, never built. A few files are in
 * hand at once, each in a slot whose buffers (the input, in shared memory;
 * an output already there) are kept from file to file: while the hashing
 * thread (hasher.ts) hashes one file's content and libuv's threads read or
 * write another's bytes, this thread reads and writes the XMP of a third,
 * so that reading, hashing and writing overlap on two cores. The
 * file-system calls around the bytes (open, size, create, link, remove:
 * microseconds each) are made on this thread.
 */
import { closeSync, fstatSync, openSync, read } from 'node:fs';
import { promisify } from 'node:util';
import { openForProtect, protectParts, type ProtectOptions } from '../../app/protect-image.js';
import type { OpenedImage, TagSigner } from '../../core/metadata.js';
import { unreadable } from '../files.js';
import type { Hasher } from './hasher.js';
import { markOne, type FileAccess, type Marked, type MarkOutcome, type MarkTask } from './mark-one.js';
import { writeAllAsync, writeAtomicallyAround } from './write.js';

/** What marking needs besides the file: the signer, and the largest image taken. */
export interface Marking {
  readonly signer: TagSigner;
  readonly maxImagePixels: number | undefined;
}

/**
 * The file marked, its copy as parts (views on `bytes` where unchanged):
 * protect's answer as markOne takes it. `sha256`: the copy's SHA-256 is
 * computed (for --json and --report).
 */
export function markParts(task: MarkTask, bytes: Uint8Array, marking: Marking, sha256: boolean, hashed?: Hashed): Marked {
  const options = protectOptions(task, marking);
  const r = protectParts(bytes, { ...options, contentDigest: hashed?.contentDigest }, hashed?.opened);
  return {
    bytes: r.parts,
    filename: r.filename,
    value: r.value,
    alreadyCarried: r.alreadyCarried,
    changed: r.changed,
    c2paInvalidated: r.c2paInvalidated,
    json: { mimeType: r.mimeType, filename: r.filename, ...(sha256 ? { sha256: r.sha256 } : {}), signals: r.signals, value: r.value, alreadyCarried: r.alreadyCarried, changed: r.changed, c2paInvalidated: r.c2paInvalidated },
  };
}

/** The options of protect for a file of the batch. */
function protectOptions(task: MarkTask, marking: Marking): ProtectOptions {
  return { value: task.value, otherConstraints: task.otherConstraints, filename: task.file.split(/[\\/]/).pop(), signer: marking.signer, maxImagePixels: marking.maxImagePixels };
}

/** A file opened for protect, and its content digest, hashed elsewhere (hasher.ts). */
interface Hashed {
  readonly opened: OpenedImage;
  readonly contentDigest: Uint8Array;
}

/** Open the file as protect does, and hash its content on the hashing thread while this thread goes on. */
async function hashedElsewhere(task: MarkTask, bytes: Uint8Array, marking: Marking, hasher: Hasher): Promise<Hashed> {
  const opened = openForProtect(bytes, protectOptions(task, marking));
  return { opened, contentDigest: await hasher.digest(bytes, opened.container.blocks) };
}

const readAt = promisify(read);

/** One buffer kept from file to file, grown (at least doubled) when a file is larger: a file's bytes in it are valid until the next file is read into it. */
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

/**
 * Reads a whole file into a kept buffer. The bytes come through libuv's
 * threads; opening, its size and closing (microseconds) are asked here, so
 * that this thread is not put to sleep and woken for each.
 */
function bufferedReader(shared: boolean): (path: string) => Promise<Uint8Array> {
  const room = keptBuffer(shared);
  return async (path) => {
    const fd = openSync(path, 'r');
    try {
      const { size } = fstatSync(fd);
      const buffer = room(size);
      let at = 0;
      while (at < size) {
        const { bytesRead } = await readAt(fd, buffer, at, size - at, at);
        if (bytesRead === 0) break;
        at += bytesRead;
      }
      return buffer.subarray(0, at);
    } finally {
      closeSync(fd);
    }
  };
}

export interface HereMarker {
  /** Whether a slot is free (a file given now starts at once). */
  hasRoom(): boolean;
  run(task: MarkTask, sha256: boolean): Promise<MarkOutcome>;
}

/** Files marked on this thread, `slots` at once, their content hashed by `hasher` (on its thread: hasher.ts). */
export function createHereMarker(slots: number, marking: Marking, hasher: Hasher): HereMarker {
  const free: FileAccess[] = Array.from({ length: slots }, () => {
    // In shared memory, where the hashing thread reads it.
    const input = bufferedReader(true);
    // The output already there, read to tell whether it is the input's marked copy: its own buffer, for it is compared with the input's bytes.
    const existing = bufferedReader(false);
    return {
      read: (path) => input(path).catch((error: unknown) => Promise.reject(unreadable(error))),
      existing: (path) => existing(path).catch(() => undefined),
      write: (path, bytes, options) => writeAtomicallyAround(path, bytes, options, writeAllAsync),
    };
  });
  return {
    hasRoom: () => free.length > 0,
    async run(task, sha256) {
      const access = free.pop();
      if (!access) throw new Error('internal: no free slot to mark a file here');
      try {
        return await markOne(task, access, async (bytes) => markParts(task, bytes, marking, sha256, await hashedElsewhere(task, bytes, marking, hasher)));
      } finally {
        free.push(access);
      }
    },
  };
}
