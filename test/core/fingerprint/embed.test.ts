/**
 * Embedding: the quality bound, the layout contract (alpha untouched, luma
 * only) and the refusals.
 */
import { describe, expect, it } from 'vitest';
import { deriveFingerprintKey, embedFingerprint, FingerprintRefusedError, MIN_EMBED_SIDE, type Raster } from '../../../src/core/fingerprint/index.js';
import { psnr } from '../../support/psnr.js';
import { flatGrey, noisePicture, syntheticPhoto } from './synthetic.js';

const key = deriveFingerprintKey(Buffer.from('fingerprint test secret, 32 byte'), 'test-1');

/** Byte equality without vitest's deep diff, which is slow on large arrays. */
const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a.buffer, a.byteOffset, a.length).equals(Buffer.from(b.buffer, b.byteOffset, b.length));

describe('embedFingerprint', () => {
  it('keeps PSNR at 42 dB or more, as it reports, on varied pictures', () => {
    const pictures: Raster[] = [syntheticPhoto(640, 480, 1), syntheticPhoto(300, 700, 2), noisePicture(400, 300, 3, 20, 1), noisePicture(300, 300, 4, 6, 3)];
    for (const picture of pictures) {
      const { data, psnr: reported } = embedFingerprint(picture, key);
      const colours = picture.channels >= 3 ? 3 : 1;
      const measured = psnr(picture.data, data, picture.channels, colours);
      expect(reported).toBeGreaterThanOrEqual(42);
      expect(measured).toBeCloseTo(reported, 6);
      // Something was marked: an unchanged picture would pass with an infinite PSNR.
      expect(Number.isFinite(reported)).toBe(true);
    }
  });

  it('refuses flat pictures (grey, near black, near white) as too flat, rather than mark them visibly', () => {
    for (const level of [128, 3, 254]) {
      expect(() => embedFingerprint(flatGrey(400, 300, level), key)).toThrow(expect.objectContaining({ name: 'FingerprintRefusedError', reason: 'too_flat' }));
    }
  });

  it('changes R, G and B by the same amount (luma only) unless a value clips', () => {
    const picture = syntheticPhoto(512, 384, 3);
    const { data } = embedFingerprint(picture, key);
    let unequal = 0;
    let changed = 0;
    for (let p = 0; p < data.length; p += 3) {
      const d = [0, 1, 2].map((c) => data[p + c]! - picture.data[p + c]!);
      const clipped = [0, 1, 2].some((c) => data[p + c] === 0 || data[p + c] === 255);
      if (d[0] !== 0) changed++;
      if (!clipped && (d[0] !== d[1] || d[1] !== d[2])) unequal++;
    }
    expect(unequal).toBe(0);
    // Its faint sky has flat blocks, which are left alone (visibility.ts): most of the rest changes.
    expect(changed).toBeGreaterThan((data.length / 3) * 0.35);
  });

  it('leaves alpha untouched (RGBA and grey + alpha)', () => {
    const rgba = syntheticPhoto(400, 300, 4, 4);
    const marked = embedFingerprint(rgba, key).data;
    let alphaChanged = 0;
    for (let p = 3; p < marked.length; p += 4) if (marked[p] !== rgba.data[p]) alphaChanged++;
    expect(alphaChanged).toBe(0);

    const grey = noisePicture(400, 300, 9, 20, 1);
    const greyAlpha: Raster = { data: new Uint8Array(400 * 300 * 2), width: 400, height: 300, channels: 2 };
    for (let i = 0; i < 400 * 300; i++) {
      greyAlpha.data[2 * i] = grey.data[i]!;
      greyAlpha.data[2 * i + 1] = i & 255;
    }
    const markedGrey = embedFingerprint(greyAlpha, key);
    expect(markedGrey.psnr).toBeGreaterThanOrEqual(42);
    let greyAlphaChanged = 0;
    for (let i = 0; i < 400 * 300; i++) if (markedGrey.data[2 * i + 1] !== (i & 255)) greyAlphaChanged++;
    expect(greyAlphaChanged).toBe(0);
  });

  it('does not modify its input and is deterministic', () => {
    const picture = syntheticPhoto(320, 260, 5);
    const copy = Uint8Array.from(picture.data);
    const a = embedFingerprint(picture, key).data;
    expect(same(picture.data, copy)).toBe(true);
    expect(same(embedFingerprint(picture, key).data, a)).toBe(true);
  });

  it('refuses images too small or too elongated, with a typed reason', () => {
    const refusal = (image: Raster) => {
      try {
        embedFingerprint(image, key);
      } catch (error) {
        expect(error).toBeInstanceOf(FingerprintRefusedError);
        return (error as FingerprintRefusedError).reason;
      }
      return undefined;
    };
    // Textured pictures, which carry the mark well when large enough (unlike
    // flat ones), so that only the size and shape checks can explain a refusal.
    const noise = (width: number, height: number) => noisePicture(width, height, width + height, 40, 1);
    expect(refusal(noise(255, 1000))).toBe('too_small');
    expect(refusal(noise(1000, 255))).toBe('too_small');
    expect(refusal(noise(16, 16))).toBe('too_small');
    expect(refusal(noise(1025, 256))).toBe('too_elongated');
    expect(refusal(noise(256, 1025))).toBe('too_elongated');
    // At the limits themselves the same kind of picture is marked.
    expect(MIN_EMBED_SIDE).toBe(256);
    expect(refusal(noise(1024, 256))).toBeUndefined();
    expect(refusal(noise(256, 1024))).toBeUndefined();
  });

  it('rejects a buffer that does not match its declared layout', () => {
    expect(() => embedFingerprint({ data: new Uint8Array(10), width: 300, height: 300, channels: 3 }, key)).toThrow(RangeError);
    expect(() => embedFingerprint({ data: new Uint8Array(300 * 300 * 5), width: 300, height: 300, channels: 5 }, key)).toThrow(RangeError);
  });
});
