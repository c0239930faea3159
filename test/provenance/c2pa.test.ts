/** C2PA and CAWG training-and-data-mining signals in verify, and what protect does to a manifest. */
import { describe, expect, it } from 'vitest';
import { inspect, protect, verify } from '../../src/index.js';
import { corpusFile } from '../support/corpus.js';
import { dataHashMatches, manifestJumbf, withC2pa } from '../support/c2pa.js';
import { riff, riffChunk, u32be } from '../support/build.js';
import { jumbfWithinBounds } from '../../src/core/c2pa/jumbf-shape.js';

const JPEG = corpusFile('exiftool/XMP.jpg').bytes;
const PNG = corpusFile('pngsuite/basn2c08.png').bytes;

/** A WebP with the manifest store in a `C2PA` chunk at the end (c2pa-ts writes no WebP). */
function webpWith(jumbf: Uint8Array): Buffer {
  const webp = corpusFile('pillow/flower2.webp').bytes;
  return riff([Buffer.from(webp.subarray(12)), riffChunk('C2PA', jumbf)]);
}

describe('training-and-data-mining assertions', () => {
  it('a CAWG notAllowed on AI training is the cawg.trainingMining signal, in JPEG, PNG and WebP; optedOut is unchanged', async () => {
    const jpeg = await withC2pa(JPEG, { 'cawg.ai_training': 'notAllowed', 'cawg.ai_inference': 'allowed' });
    const png = await withC2pa(PNG, { 'cawg.ai_generative_training': 'notAllowed' });
    const webp = webpWith(manifestJumbf(jpeg));
    for (const file of [jpeg, png, webp]) {
      const { result, details } = inspect(file);
      // Without a plus:DataMining field the spec's signals is []; the details list what was found.
      expect(result.signals).toEqual([]);
      expect(details.signals).toEqual(['cawg.trainingMining']);
      expect(result.optedOut).toBe(false);
      expect(details.c2pa).toMatchObject({ present: true, readable: true, trainingMining: [{ assertion: 'cawg.training-mining', signal: 'cawg.trainingMining' }] });
    }
    expect(inspect(jpeg).details.c2pa.trainingMining[0]!.entries).toEqual({ 'cawg.ai_training': 'notAllowed', 'cawg.ai_inference': 'allowed' });
    // Marking adds the IPTC opt-out next to it, and then signals lists both.
    expect(verify(protect(jpeg).bytes).signals).toEqual(['iptc.dataMining', 'cawg.trainingMining']);
  });

  it('the C2PA 1.x form is the c2pa.trainingMining signal; constrained counts as notAllowed', async () => {
    const jpeg = await withC2pa(JPEG, { 'c2pa.data_mining': 'constrained' }, false);
    expect(inspect(jpeg).details.signals).toEqual(['c2pa.trainingMining']);
    expect(inspect(jpeg).details.c2pa.trainingMining).toEqual([{ assertion: 'c2pa.training-mining', entries: { 'c2pa.data_mining': 'constrained' }, signal: 'c2pa.trainingMining' }]);
    expect(verify(protect(jpeg).bytes).signals).toEqual(['iptc.dataMining', 'c2pa.trainingMining']);
  });

  it('allowed uses, and inference alone, are no signal', async () => {
    const allowed = inspect(await withC2pa(JPEG, { 'cawg.ai_training': 'allowed', 'cawg.data_mining': 'allowed' })).details;
    expect(allowed.signals).toEqual([]);
    expect(allowed.c2pa.trainingMining).toMatchObject([{ signal: null }]);
    expect(inspect(await withC2pa(PNG, { 'cawg.ai_inference': 'notAllowed' })).details.signals).toEqual([]);
  });

  it('a corrupt manifest store is ignored, with no error', async () => {
    const store = Buffer.from(manifestJumbf(await withC2pa(JPEG, { 'cawg.ai_training': 'notAllowed' })));
    for (const broken of [store.subarray(0, 100), Buffer.concat([store.subarray(0, 8), Buffer.alloc(200, 0xff)]), Buffer.from('not jumbf at all')]) {
      const { result, details } = inspect(webpWith(broken));
      expect(result.signals).toEqual([]);
      expect(details.signals).toEqual([]);
      expect(details.c2pa).toEqual({ present: true, readable: false, trainingMining: [] });
    }
  });
});

describe('hostile manifest stores', () => {
  const box = (type: string, body: Uint8Array = Buffer.alloc(0)) => Buffer.concat([u32be(8 + body.length), Buffer.from(type, 'latin1'), body]);

  /** `depth` superbox headers, each enclosing the next, around one empty superbox. */
  function nested(depth: number): Buffer {
    const headers: Buffer[] = [];
    for (let level = depth; level >= 1; level--) headers.push(Buffer.concat([u32be(8 * (level + 1)), Buffer.from('jumb')]));
    return Buffer.concat([...headers, box('jumb')]);
  }

  it('a store of a million nested superboxes (8 MB) is refused before the library recurses into it', () => {
    // Handed to the library, this takes more than a minute of CPU.
    const result = verify(webpWith(nested(1_000_000)));
    expect(result.signals).toEqual([]);
  }, 10_000);

  it('the shape check: depth, box count, lengths', () => {
    expect(jumbfWithinBounds(nested(15))).toBe(true);
    expect(jumbfWithinBounds(nested(16))).toBe(false);
    expect(jumbfWithinBounds(box('jumb', Buffer.concat(Array.from({ length: 9_999 }, () => box('free')))))).toBe(true);
    expect(jumbfWithinBounds(box('jumb', Buffer.concat(Array.from({ length: 10_000 }, () => box('free')))))).toBe(false);
    expect(jumbfWithinBounds(box('free'))).toBe(false); // not a superbox
    expect(jumbfWithinBounds(Buffer.alloc(0))).toBe(false);
    expect(jumbfWithinBounds(Buffer.concat([u32be(0xffffffff), Buffer.from('jumb')]))).toBe(false); // longer than the data
    expect(jumbfWithinBounds(Buffer.concat([u32be(4), Buffer.from('jumb')]))).toBe(false); // shorter than its header
    expect(jumbfWithinBounds(Buffer.concat([u32be(1), Buffer.from('jumb'), Buffer.from('0000ffffffffffff', 'hex')]))).toBe(false); // 64-bit length beyond the data
    expect(jumbfWithinBounds(Buffer.concat([u32be(0), Buffer.from('jumb'), box('free')]))).toBe(true); // 0: to the end
  });

  it('a thousand mutations of a real store: never an error, never a stray signal', async () => {
    const store = Buffer.from(manifestJumbf(await withC2pa(JPEG, { 'cawg.ai_training': 'allowed' })));
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x80000000;
    for (let i = 0; i < 1000; i++) {
      const mutated = Buffer.from(store);
      for (let k = 1 + Math.floor(random() * 8); k > 0; k--) mutated[Math.floor(random() * mutated.length)] = Math.floor(random() * 256);
      // The original allows everything; no mutation can be read as an opt-out,
      // except one that rewrites "allowed" itself, which keeps it "allowed" or breaks the CBOR.
      expect(verify(webpWith(mutated)).signals).toEqual([]);
    }
  });
});

describe('protect on a file with a C2PA manifest', () => {
  it('reports that the manifest no longer validates, because its hash covers the bytes XMP changes', async () => {
    for (const input of [await withC2pa(JPEG, { 'cawg.ai_training': 'notAllowed' }), await withC2pa(PNG, { 'cawg.ai_training': 'notAllowed' })]) {
      expect(await dataHashMatches(input)).toBe(true);
      const result = protect(input);
      expect(result.c2paInvalidated).toBe(true);
      expect(await dataHashMatches(result.bytes)).toBe(false);
      // Its assertion is still read.
      expect(verify(result.bytes).signals).toEqual(['iptc.dataMining', 'cawg.trainingMining']);
    }
    expect(protect(JPEG).c2paInvalidated).toBe(false);
  });
});
