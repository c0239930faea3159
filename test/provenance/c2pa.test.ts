/** C2PA and CAWG training-and-data-mining signals in verify, and what protect does to a manifest. */
import { describe, expect, it } from 'vitest';
import { inspect, protect, verify } from '../../src/index.js';
import { corpusFile } from '../support/corpus.js';
import { dataHashMatches, manifestJumbf, withC2pa } from '../support/c2pa.js';
import { riff, riffChunk } from '../support/build.js';

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
      const result = verify(file);
      expect(result.signals).toEqual(['cawg.trainingMining']);
      expect(result.optedOut).toBe(false);
      expect(inspect(file).details.c2pa).toBe(true);
    }
    // Marking adds the IPTC opt-out next to it.
    expect(verify(protect(jpeg).bytes).signals).toEqual(['iptc.dataMining', 'cawg.trainingMining']);
  });

  it('the C2PA 1.x form is the c2pa.trainingMining signal; constrained counts as notAllowed', async () => {
    const jpeg = await withC2pa(JPEG, { 'c2pa.data_mining': 'constrained' }, false);
    expect(verify(jpeg).signals).toEqual(['c2pa.trainingMining']);
  });

  it('allowed uses, and inference alone, are no signal', async () => {
    expect(verify(await withC2pa(JPEG, { 'cawg.ai_training': 'allowed', 'cawg.data_mining': 'allowed' })).signals).toEqual([]);
    expect(verify(await withC2pa(PNG, { 'cawg.ai_inference': 'notAllowed' })).signals).toEqual([]);
  });

  it('a corrupt manifest store is ignored, with no error', async () => {
    const store = Buffer.from(manifestJumbf(await withC2pa(JPEG, { 'cawg.ai_training': 'notAllowed' })));
    for (const broken of [store.subarray(0, 100), Buffer.concat([store.subarray(0, 8), Buffer.alloc(200, 0xff)]), Buffer.from('not jumbf at all')]) {
      const result = verify(webpWith(broken));
      expect(result.signals).toEqual([]);
      expect(inspect(webpWith(broken)).details.c2pa).toBe(true);
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
