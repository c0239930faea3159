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
import { openForProtect, protectParts, type ProtectOptions } from '../../app/protect-image.js';
import type { OpenedImage, TagSigner } from '../../core/metadata.js';
import type { Hasher } from './hasher.js';
import { ASYNC_IO, keptFileAccess } from './kept-files.js';
import { markOne, type FileAccess, type Marked, type MarkOutcome, type MarkTask } from './mark-one.js';

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

export interface HereMarker {
  /** Whether a slot is free (a file given now starts at once). */
  hasRoom(): boolean;
  run(task: MarkTask, sha256: boolean): Promise<MarkOutcome>;
}

/** Files marked on this thread, `slots` at once, their content hashed by `hasher` (on its thread: hasher.ts). */
export function createHereMarker(slots: number, marking: Marking, hasher: Hasher): HereMarker {
  // The input in shared memory, where the hashing thread reads it.
  const free: FileAccess[] = Array.from({ length: slots }, () => keptFileAccess(ASYNC_IO, { sharedInput: true }));
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
