/**
 * The content digests of a batch marked on the main thread (mark-here.ts),
 * hashed on a thread of their own (hash-worker.ts): the SHA-256 is most of
 * a file's work, and while that thread hashes one file the main thread
 * reads the XMP of another and libuv's threads read and write bytes, on
 * both cores. The files are read into shared memory (keptBuffer), which the
 * hashing thread reads where it is. A file anywhere else, or every file
 * once the thread has failed (it could not start, say), is hashed on the
 * calling thread: slower, never wrong.
 */
import { Worker } from 'node:worker_threads';
import type { Block } from '../../core/formats/handler.js';
import { contentDigest, contentRanges } from '../../core/provenance/digest.js';
import type { HashReply, HashRequest } from './hash-worker.js';

export interface Hasher {
  /** The content digest of `bytes` (contentDigest of these blocks); `bytes` must not change until it resolves. */
  digest(bytes: Uint8Array, blocks: readonly Block[]): Promise<Uint8Array>;
  close(): Promise<void>;
}

interface Pending {
  readonly bytes: Uint8Array;
  readonly blocks: readonly Block[];
  readonly resolve: (digest: Uint8Array) => void;
}

/** A hasher whose thread runs `script` (the tests give the built one). */
export function createHasher(script: URL = new URL('./hash-worker.js', import.meta.url)): Hasher {
  let worker: Worker | undefined = new Worker(script);
  const pending = new Map<number, Pending>();
  let ids = 0;
  // The thread holds the process up only while it has work: an idle one does not delay the end.
  worker.unref();
  worker.on('message', ({ id, digest }: HashReply) => {
    const call = pending.get(id);
    pending.delete(id);
    if (pending.size === 0) worker?.unref();
    call?.resolve(digest);
  });
  // A thread that failed or ended: what it had is hashed here, and so is everything after.
  const gone = () => {
    worker = undefined;
    for (const call of pending.values()) call.resolve(contentDigest(call.bytes, call.blocks));
    pending.clear();
  };
  worker.on('error', gone).on('exit', gone);
  return {
    digest(bytes, blocks) {
      if (!worker || !(bytes.buffer instanceof SharedArrayBuffer)) return Promise.resolve(contentDigest(bytes, blocks));
      const id = ++ids;
      const shift = bytes.byteOffset;
      const request: HashRequest = { id, buffer: bytes.buffer, ranges: contentRanges(blocks).map(([from, to]) => [from + shift, to + shift] as const) };
      worker.ref();
      worker.postMessage(request);
      return new Promise((resolve) => pending.set(id, { bytes, blocks, resolve }));
    },
    async close() {
      await worker?.terminate();
    },
  };
}
