/**
 * The hashing thread of a batch marked on the main thread
 * (src/cli/batch/hasher.ts): its digests are contentDigest's, for files of
 * every format read into shared memory anywhere in it; a file in ordinary
 * memory is hashed on the calling thread; a thread that cannot start
 * leaves every file hashed there, with the same digests.
 */
import { describe, expect, it } from 'vitest';
import { createHasher } from '../../src/cli/batch/hasher.js';
import { openImage } from '../../src/core/metadata.js';
import { contentDigest } from '../../src/core/provenance/digest.js';
import { CORPUS } from '../support/corpus.js';

const BUILT = new URL('../../dist/cli/batch/hash-worker.js', import.meta.url);

/** Corpus files of the three formats that open, with their blocks. */
const files = CORPUS.filter((f) => /^(exiftool|libwebp-test-data|pngsuite)\//.test(f.name))
  .flatMap((f) => {
    try {
      return [{ name: f.name, bytes: f.bytes, blocks: openImage(f.bytes).container.blocks }];
    } catch {
      return [];
    }
  })
  .slice(0, 60);

/** `bytes` copied into shared memory at `offset`. */
function shared(bytes: Uint8Array, offset: number): Uint8Array {
  const view = new Uint8Array(new SharedArrayBuffer(offset + bytes.length + 7), offset, bytes.length);
  view.set(bytes);
  return view;
}

describe('the hashing thread', () => {
  it('gives contentDigest for each of 60 files of every format in shared memory, 8 at once, wherever they start in it', async () => {
    expect(files.length).toBe(60);
    expect(new Set(files.map((f) => f.name.split('.').pop()!.toLowerCase()))).toEqual(new Set(['jpg', 'png', 'webp']));
    const hasher = createHasher(BUILT);
    try {
      for (let i = 0; i < files.length; i += 8) {
        const batch = files.slice(i, i + 8);
        const digests = await Promise.all(batch.map((f, j) => hasher.digest(shared(f.bytes, j * 3), f.blocks)));
        batch.forEach((f, j) => expect(Buffer.from(digests[j]!).toString('hex'), f.name).toBe(contentDigest(f.bytes, f.blocks).toString('hex')));
      }
    } finally {
      await hasher.close();
    }
  });

  it('a file in ordinary memory, and every file once the thread could not start, is hashed on the calling thread, alike', async () => {
    const working = createHasher(BUILT);
    const broken = createHasher(new URL('./no-such-hash-worker.js', import.meta.url));
    try {
      for (const f of files.slice(0, 10)) {
        const expected = contentDigest(f.bytes, f.blocks).toString('hex');
        expect(Buffer.from(await working.digest(f.bytes, f.blocks)).toString('hex')).toBe(expected);
        expect(Buffer.from(await broken.digest(shared(f.bytes, 0), f.blocks)).toString('hex')).toBe(expected);
      }
    } finally {
      await Promise.all([working.close(), broken.close()]);
    }
  });
});
