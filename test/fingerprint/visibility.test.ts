/**
 * The fingerprint must not show: no change over 1 level in any flat 8 x 8
 * block (luma standard deviation under 1.0 level in the original), on the
 * pictures where a mark shows most (white, grey, smooth gradients, a
 * product on white); and a picture with too little texture is refused with
 * its reason (too_flat), through the layer the dashboard and the CLI use,
 * rather than marked visibly.
 */
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { protectWithFingerprint } from '../../src/app/protect-image.js';
import { deriveFingerprintKey, detectFingerprint, embedFingerprint, FingerprintRefusedError, type Raster } from '../../src/core/fingerprint/index.js';
import { FingerprintNotPossibleError } from '../../src/errors.js';
import { flatChanges, flatPictures, ssimLuma } from '../../bench/fingerprint-visibility.js';
import { inThreadFingerprinting } from './support.js';

const key = deriveFingerprintKey(Buffer.from('fingerprint visibility test secret'), 'test-1');

/** The embedder's refusal reason, or undefined when it marked the picture. */
function refusalOf(image: Raster): string | undefined {
  try {
    embedFingerprint(image, key);
    return undefined;
  } catch (error) {
    if (error instanceof FingerprintRefusedError) return error.reason;
    throw error;
  }
}

// 600 x 450: small enough to keep the file fast, above the 256-pixel minimum.
const pictures = new Map(flatPictures(600, 450).map((p) => [p.name, p.image]));
const picture = (prefix: string) => [...pictures.entries()].find(([name]) => name.startsWith(prefix))![1];

describe('the flat-area rule on the marked pixels', () => {
  it('white, grey, near-white and a smooth gradient are refused as too flat: nothing would carry the mark unseen', () => {
    for (const name of ['white', 'grey 128', 'near-white 250', 'gradient']) expect(refusalOf(picture(name)), name).toBe('too_flat');
  });

  it('a product on white is marked, with no pixel of a flat 8 x 8 block changed by more than 1 level (none changed at all)', () => {
    for (const name of ['product on white (', 'product on white with a soft shadow']) {
      const original = picture(name);
      const { data } = embedFingerprint(original, key);
      const marked = { ...original, data };
      const flat = flatChanges(original, marked);
      // Most of the picture is white background: the rule is tested on most of it.
      expect(flat.flatShare, name).toBeGreaterThan(0.5);
      expect(flat.changedOver1, name).toBe(0);
      expect(flat.maxChange, name).toBe(0);
      expect(ssimLuma(original, marked), name).toBeGreaterThanOrEqual(0.99);
      // The object itself carries it, and the detector finds it there.
      expect(detectFingerprint(marked, [key]).present, name).toBe(true);
    }
  });

  it('a gradient behind a textured object: the gradient is left alone, whatever its slope', () => {
    const width = 600;
    const height = 450;
    const product = picture('product on white (');
    const data = new Uint8Array(product.data);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const p = (y * width + x) * 3;
        // The white background replaced by a diagonal gradient (30 to 230).
        if (data[p] === 255 && data[p + 1] === 255 && data[p + 2] === 255) data.fill(Math.round(30 + (200 * (x + y)) / (width + height)), p, p + 3);
      }
    }
    const original = { ...product, data };
    const marked = { ...original, data: embedFingerprint(original, key).data };
    const flat = flatChanges(original, marked);
    expect(flat.flatShare).toBeGreaterThan(0.3);
    expect(flat.maxChange).toBe(0);
  });
});

describe('an image with too little texture, through protect --fingerprint (the dashboard and the CLI)', () => {
  const fingerprinting = inThreadFingerprinting('optmark test: visibility');

  it('is refused with fingerprint_not_possible and a reason in words: a white product shot whose object is small', async () => {
    // A small textured object (about 4 % of the picture) on white.
    const width = 800;
    const height = 600;
    const rgb = Buffer.alloc(width * height * 3, 255);
    for (let y = 250; y < 350; y++) {
      for (let x = 340; x < 460; x++) rgb.fill(((x * 37) ^ (y * 91)) & 127, (y * width + x) * 3, (y * width + x) * 3 + 3);
    }
    const jpeg = await sharp(rgb, { raw: { width, height, channels: 3 } }).jpeg({ quality: 90 }).toBuffer();
    const refusal = await protectWithFingerprint(jpeg, fingerprinting).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(FingerprintNotPossibleError);
    expect((refusal as FingerprintNotPossibleError).code).toBe('fingerprint_not_possible');
    expect((refusal as Error).message).toMatch(/^This image cannot be fingerprinted: it is too flat to carry the mark unseen: \d+(\.\d)? % of it has texture the mark can hide in, and the fingerprint needs 15 %/);
  });
});
