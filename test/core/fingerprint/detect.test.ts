/**
 * Detection on synthetic pictures through real encoders (sharp): found after
 * the common transformations, never found where it was not put, and
 * statistics that behave as the verdict assumes.
 */
import type { Sharp } from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { detectFingerprint, deriveFingerprintKey, embedFingerprint, type FingerprintKey, type Raster } from '../../../src/core/fingerprint/index.js';
import { analysisCanvas, vote } from '../../../src/core/fingerprint/detect.js';
import type { Plane } from '../../../src/core/fingerprint/fold.js';
import { binomialUpperTail } from '../../../src/core/fingerprint/binomial.js';
import { synchronise } from '../../../src/core/fingerprint/sync.js';
import { BLOCK, BLOCKS_PER_ROW, MIN_DETECT_SIDE, TILE } from '../../../src/core/fingerprint/scheme.js';
import { flatGrey, noisePicture, roundTrip, syntheticPhoto } from './synthetic.js';

/** One level everywhere, in 1, 3 or 4 channels; the alpha (ignored by the detector) is not flat. */
function flatPicture(width: number, height: number, level: number, channels: 1 | 3 | 4): Raster {
  const data = new Uint8Array(width * height * channels).fill(level);
  if (channels === 4) for (let i = 0; i < width * height; i++) data[4 * i + 3] = (i * 37) & 255;
  return { data, width, height, channels };
}

/** Flat grey with a patch of noise in one corner: only the blocks the patch folds onto can vote. */
function mostlyFlat(): Raster {
  const picture = flatGrey(640, 480, 128);
  const patch = noisePicture(120, 120, 32, 40, 1);
  for (let y = 0; y < 120; y++) picture.data.set(patch.data.subarray(y * 120, (y + 1) * 120), (40 + y) * 640 + 40);
  return picture;
}

/** The largest energy of a block of a TILE x TILE fold. */
function largestBlockEnergy(fold: Float64Array): number {
  let largest = 0;
  for (let b = 0; b < BLOCKS_PER_ROW * BLOCKS_PER_ROW; b++) {
    const x0 = (b % BLOCKS_PER_ROW) * BLOCK;
    const y0 = Math.floor(b / BLOCKS_PER_ROW) * BLOCK;
    let energy = 0;
    for (let y = y0; y < y0 + BLOCK; y++) for (let x = x0; x < x0 + BLOCK; x++) energy += fold[y * TILE + x]! ** 2;
    largest = Math.max(largest, energy);
  }
  return largest;
}

const SECRET = Buffer.from('fingerprint test secret, 32 byte');
const key = deriveFingerprintKey(SECRET, 'test-1');
const otherKey = deriveFingerprintKey(SECRET, 'test-2');

const original = syntheticPhoto(1024, 768, 11);
let marked: Raster;

beforeAll(() => {
  marked = { ...original, data: embedFingerprint(original, key).data };
});

describe('a marked picture', () => {
  it('is found after JPEG quality 75', async () => {
    const result = detectFingerprint(await roundTrip(marked, (s) => s.jpeg({ quality: 75 })), [key]);
    expect(result).toMatchObject({ present: true, blocks: 128, keyVersion: 'test-1' });
    expect(result.confidence).toBeGreaterThan(0.85);
  });

  it('is found after resizing to half and JPEG quality 90', async () => {
    const result = detectFingerprint(await roundTrip(marked, (s) => s.resize(512).jpeg({ quality: 90 })), [key]);
    expect(result.present).toBe(true);
    expect(result.confidence).toBeGreaterThan(0.85);
  });

  it('is found after a crop of 5 % per side (the scale search)', async () => {
    const crop = (s: Sharp) => s.extract({ left: 51, top: 38, width: 922, height: 692 }).png();
    const result = detectFingerprint(await roundTrip(marked, crop), [key]);
    expect(result.present).toBe(true);
    expect(result.sync!.step).toBeGreaterThan(1.09);
    expect(result.sync!.step).toBeLessThan(1.13);
  });

  it('is found with whichever active key version marked it, and not with another', async () => {
    const jpeg = await roundTrip(marked, (s) => s.jpeg({ quality: 85 }));
    expect(detectFingerprint(jpeg, [otherKey, key])).toMatchObject({ present: true, keyVersion: 'test-1' });
    const wrong = detectFingerprint(jpeg, [otherKey]);
    expect(wrong.present).toBe(false);
    expect(wrong.confidence).toBeGreaterThan(0.3);
    expect(wrong.confidence).toBeLessThan(0.7);
  });
});

describe('an unmarked picture', () => {
  it('is not found, with about half the blocks matching', async () => {
    for (const picture of [original, syntheticPhoto(800, 600, 12)]) {
      const result = detectFingerprint(await roundTrip(picture, (s) => s.jpeg({ quality: 90 })), [key]);
      expect(result.present).toBe(false);
      expect(result.blocks).toBe(128);
      expect(result.confidence).toBeGreaterThan(0.3);
      expect(result.confidence).toBeLessThan(0.7);
    }
  });

  it('a flat picture casts no vote at all, at any size, level and channel count', () => {
    // Its canvas is not exactly flat (float32 resize weights): what keeps
    // it from voting is detect.ts's ENERGY_FLOOR, 1e-4. The largest block
    // energy of the folds must stay far under it (about 5e-7 measured), so
    // that a loss of precision shows here before a flat picture votes. It
    // is checked on the one-channel pictures, where the largest energies
    // were seen (each check costs another synchronisation).
    let largest = 0;
    for (const [width, height] of [[64, 64], [257, 193], [640, 480], [1000, 333], [333, 1000]] as const) {
      for (const level of [0, 1, 128, 254, 255]) {
        for (const channels of [1, 3, 4] as const) {
          const picture = flatPicture(width, height, level, channels);
          const what = `${width}x${height}, level ${level}, ${channels} channels`;
          expect(detectFingerprint(picture, [key]), what).toMatchObject({ present: false, confidence: 0, blocks: 0 });
          if (channels === 1) largest = Math.max(largest, largestBlockEnergy(synchronise(analysisCanvas(picture), key).fold));
        }
      }
    }
    expect(largest).toBeLessThan(1e-6);
  });

  it('tiny inputs and an empty key list examine nothing', () => {
    // Textured, not flat: a flat picture gives blocks: 0 at any size, so
    // only the size check can explain these. Just at MIN_DETECT_SIDE the
    // same noise is examined and its blocks vote.
    for (const [width, height] of [[40, 40], [63, 63], [63, 400], [400, 63]] as const) {
      expect(detectFingerprint(noisePicture(width, height, 9), [key]), `${width}x${height}`).toMatchObject({ present: false, confidence: 0, blocks: 0 });
    }
    expect(MIN_DETECT_SIDE).toBe(64);
    for (const [width, height] of [[64, 64], [64, 400], [400, 64]] as const) {
      expect(detectFingerprint(noisePicture(width, height, 9), [key]).blocks, `${width}x${height}`).toBeGreaterThan(100);
    }
    expect(detectFingerprint(original, [])).toMatchObject({ present: false, blocks: 0, keyVersion: undefined });
  });

  it('matches fair coins over many keys: mean near 1/2, no positive', () => {
    // Decoded at the size a caller would pass (shorter side 256): cheaper, same statistics.
    const small = { ...flatGrey(341, 256), data: new Uint8Array(341 * 256) };
    const source = syntheticPhoto(341, 256, 13);
    for (let i = 0; i < small.data.length; i++) small.data[i] = source.data[3 * i + 1]!;
    const shares: number[] = [];
    for (let i = 0; i < 16; i++) {
      const result = detectFingerprint(small, [deriveFingerprintKey(SECRET, `null-${i}`)]);
      expect(result.present).toBe(false);
      expect(result.blocks).toBe(128);
      shares.push(result.confidence);
    }
    const mean = shares.reduce((a, b) => a + b, 0) / shares.length;
    // Binomial(128, 1/2) / 128 has sd 0.044; the mean of 16 has sd 0.011.
    expect(Math.abs(mean - 0.5)).toBeLessThan(0.045);
  });
});

describe('the statistics', () => {
  /**
   * The same key with every verification block's pattern negated, as if the
   * `signs` stream had drawn the opposite sign for each (keys.ts); the
   * synchronisation blocks (periodicTile, anchorTile and their part of
   * `tile`) are the key's own.
   */
  function withVerificationSignsFlipped(base: FingerprintKey): FingerprintKey {
    const tile = Float32Array.from(base.tile);
    for (const b of base.verificationBlocks) {
      const x0 = (b % BLOCKS_PER_ROW) * BLOCK;
      const y0 = Math.floor(b / BLOCKS_PER_ROW) * BLOCK;
      for (let y = y0; y < y0 + BLOCK; y++) for (let x = x0; x < x0 + BLOCK; x++) tile[y * TILE + x] = -tile[y * TILE + x]!;
    }
    return { ...base, tile };
  }

  /** Synchronise, then vote, and copy out the folds (buffers the next call reuses). */
  function syncAndVote(canvas: Plane, k: FingerprintKey) {
    const sync = synchronise(canvas, k);
    const votes = vote(k, sync);
    const { fold, whitened, ...where } = sync;
    return { where, fold: Float64Array.from(fold), whitened: Float64Array.from(whitened), votes };
  }

  it('flipping the verification signs changes no synchronisation and flips every vote, nothing else', async () => {
    // The verdict's exactness rests on this (detect.ts): on an unmarked
    // image the verification signs are fair coins that neither the
    // synchronisation nor the choice of voting blocks saw.
    const flipped = withVerificationSignsFlipped(key);
    const markedCopy = await roundTrip(marked, (s) => s.extract({ left: 80, top: 20, width: 900, height: 700 }).jpeg({ quality: 80 }));
    const allVote = (blocks: number) => blocks === 128;
    const pictures: Array<[string, Raster, (blocks: number) => boolean]> = [
      ['noise', noisePicture(512, 384, 31), allVote],
      ['a photo-like picture', original, allVote],
      ['a mostly flat picture', mostlyFlat(), (blocks) => blocks > 0 && blocks < 128],
      ['a picture marked with another key', { ...original, data: embedFingerprint(original, otherKey).data }, allVote],
      ["this key's mark, cropped and JPEG", markedCopy, allVote],
    ];
    for (const [what, picture, expectedBlocks] of pictures) {
      const canvas = analysisCanvas(picture);
      const a = syncAndVote(canvas, key);
      const b = syncAndVote(canvas, flipped);
      // Step, sub-pixel shift, cell offset and score: where it synchronised.
      expect(b.where, what).toEqual(a.where);
      expect(b.fold, what).toEqual(a.fold);
      expect(b.whitened, what).toEqual(a.whitened);
      // The same blocks vote, each the other way.
      expect(expectedBlocks(a.votes.blocks), `${what}: ${a.votes.blocks} blocks voted`).toBe(true);
      expect(b.votes.blocks, what).toBe(a.votes.blocks);
      expect(b.votes.matches, what).toBe(a.votes.blocks - a.votes.matches);
    }
    // ... so the verdict does depend on them: the mark is there for the key, not for its flip.
    expect(detectFingerprint(markedCopy, [key]).present).toBe(true);
    expect(detectFingerprint(markedCopy, [flipped]).present).toBe(false);
  });

  it('divides the false-positive rate among key versions', async () => {
    const jpeg = await roundTrip(marked, (s) => s.jpeg({ quality: 90 }));
    const { confidence, blocks } = detectFingerprint(jpeg, [key]);
    const matches = Math.round(confidence * blocks);
    // The rate at which exactly this count passes for one key fails once shared by ten.
    const rate = binomialUpperTail(blocks, matches);
    expect(detectFingerprint(jpeg, [key], { falsePositiveRate: rate }).present).toBe(true);
    const extra = Array.from({ length: 9 }, (_, i) => deriveFingerprintKey(SECRET, `extra-${i}`));
    const shared = detectFingerprint(jpeg, [key, ...extra], { falsePositiveRate: rate });
    expect(shared).toMatchObject({ present: false, confidence, keyVersion: 'test-1' });
    expect(() => detectFingerprint(jpeg, [key], { falsePositiveRate: 0 })).toThrow(RangeError);
  });
});
