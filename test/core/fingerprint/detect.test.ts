/**
 * Detection on synthetic pictures through real encoders (sharp): found after
 * the common transformations, never found where it was not put, and
 * statistics that behave as the verdict assumes.
 */
import type { Sharp } from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { detectFingerprint, deriveFingerprintKey, embedFingerprint, type FingerprintKey, type Raster } from '../../../src/core/fingerprint/index.js';
import { analysisCanvas } from '../../../src/core/fingerprint/detect.js';
import { binomialUpperTail } from '../../../src/core/fingerprint/binomial.js';
import { synchronise } from '../../../src/core/fingerprint/sync.js';
import { BLOCK, BLOCKS_PER_ROW, MIN_DETECT_SIDE, TILE } from '../../../src/core/fingerprint/scheme.js';
import { flatGrey, noisePicture, roundTrip, syntheticPhoto } from './synthetic.js';

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

  it('flat grey casts no vote at all', () => {
    for (const level of [0, 128, 255]) {
      expect(detectFingerprint(flatGrey(600, 400, level), [key])).toMatchObject({ present: false, confidence: 0, blocks: 0 });
    }
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
  /** The same key with every verification block's pattern replaced. */
  function withOtherVerificationBlocks(base: FingerprintKey): FingerprintKey {
    const donor = deriveFingerprintKey(SECRET, 'donor');
    const tile = Float32Array.from(base.tile);
    for (const b of base.verificationBlocks) {
      const x0 = (b % BLOCKS_PER_ROW) * BLOCK;
      const y0 = Math.floor(b / BLOCKS_PER_ROW) * BLOCK;
      for (let y = y0; y < y0 + BLOCK; y++) for (let x = x0; x < x0 + BLOCK; x++) tile[y * TILE + x] = -donor.tile[y * TILE + x]!;
    }
    return { ...base, tile };
  }

  it('synchronisation never reads the verification blocks', async () => {
    const changed = withOtherVerificationBlocks(key);
    for (const picture of [await roundTrip(marked, (s) => s.extract({ left: 80, top: 20, width: 900, height: 700 }).jpeg({ quality: 80 })), original]) {
      const canvas = analysisCanvas(picture);
      // The folds are buffers the next call reuses: the scale, offsets and score say where it synchronised.
      const { fold: _a, whitened: _wa, ...a } = synchronise(canvas, key);
      const { fold: _b, whitened: _wb, ...b } = synchronise(canvas, changed);
      expect(b).toEqual(a);
    }
    // ... while the verdict does depend on them.
    const jpeg = await roundTrip(marked, (s) => s.jpeg({ quality: 90 }));
    expect(detectFingerprint(jpeg, [changed]).present).toBe(false);
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
