/**
 * The thread on which a batch of `optmark protect` marked on the main thread
 * hashes (hasher.ts): the content digest a provenance tag signs, over ranges
 * of a file's bytes held in shared memory, so nothing is copied to it.
 */
import { createHash } from 'node:crypto';
import { parentPort } from 'node:worker_threads';

export interface HashRequest {
  readonly id: number;
  readonly buffer: SharedArrayBuffer;
  /** [from, to) in `buffer`, hashed in order as one stream. */
  readonly ranges: ReadonlyArray<readonly [number, number]>;
}

export interface HashReply {
  readonly id: number;
  readonly digest: Uint8Array;
}

const port = parentPort!;
port.on('message', ({ id, buffer, ranges }: HashRequest) => {
  const bytes = new Uint8Array(buffer);
  const hash = createHash('sha256');
  for (const [from, to] of ranges) hash.update(bytes.subarray(from, to));
  port.postMessage({ id, digest: hash.digest() } satisfies HashReply);
});
