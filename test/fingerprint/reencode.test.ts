/**
 * The fingerprint must not bloat files: a marked JPEG is written at the
 * quality its quantisation tables give (estimated as libjpeg's and
 * ImageMagick's estimators do, against the IJG-scaled Annex K tables), with
 * its chroma subsampling and progressive mode; a lossy WebP at the quality
 * its quantisers give; and the dashboard's and the CLI's layer says how.
 */
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { createPixelDecoder } from '../../src/adapters/pixels.js';
import { colourPsnr } from '../../src/app/fingerprint-encode.js';
import { protectWithFingerprint } from '../../src/app/protect-image.js';
import { encodingLike } from '../../src/core/formats/encoding-like.js';
import { describeEncoding, sizeChange } from '../../src/core/formats/encoding-words.js';
import { ijgTable, jpegEncoding } from '../../src/core/formats/jpeg-encoding.js';
import { webpQuality } from '../../src/core/formats/webp-quality.js';
import { inThreadFingerprinting, texturedPhoto } from './support.js';

/** A photo-like picture as raw RGB, 512 x 384. */
const raw = async (seed = 21) => sharp(await texturedPhoto(512, 384, 'png', seed));

describe('the JPEG quality estimate', () => {
  it('is exact for sharp (libjpeg-turbo) JPEGs of known quality, baseline and progressive, 4:2:0 and 4:4:4', async () => {
    const picture = await raw();
    for (const quality of [20, 50, 60, 75, 80, 85, 90, 92, 95, 98, 100]) {
      for (const options of [{}, { progressive: true, chromaSubsampling: '4:4:4' }] as const) {
        const found = jpegEncoding(await picture.clone().jpeg({ quality, ...options }).toBuffer());
        expect(found, `q${quality}`).toMatchObject({ quality, exact: true, progressive: 'progressive' in options, subsampling: 'progressive' in options ? '4:4:4' : '4:2:0' });
      }
    }
  });

  it('gives the nearest quality for tables of another encoder (mozjpeg), within 4', async () => {
    const picture = await raw();
    for (const quality of [75, 85, 90, 95]) {
      const found = jpegEncoding(await picture.clone().jpeg({ quality, mozjpeg: true }).toBuffer());
      expect(found?.exact).toBe(false);
      expect(Math.abs(found!.quality! - quality), `q${quality}: ${found?.quality}`).toBeLessThanOrEqual(4);
    }
  });

  it('reads the IJG tables: quality 50 is Annex K itself, 100 all ones', () => {
    expect(ijgTable([16, 11, 255], 50)).toEqual([16, 11, 255]);
    expect(ijgTable([16, 11, 99], 100)).toEqual([1, 1, 1]);
    expect(ijgTable([16, 11, 99], 75)).toEqual([8, 6, 50]);
  });

  it('is undefined for what is not a JPEG, and reads a grey JPEG as grey', async () => {
    expect(jpegEncoding(new Uint8Array([1, 2, 3, 4]))).toBeUndefined();
    const grey = await (await raw()).clone().toColourspace('b-w').jpeg({ quality: 80 }).toBuffer();
    expect(jpegEncoding(grey)).toMatchObject({ quality: 80, exact: true, subsampling: undefined });
  });
});

describe('the WebP quality estimate', () => {
  it('is within 3 of the quality a lossy WebP was written at, from 80 up', async () => {
    const picture = await raw();
    for (const quality of [80, 85, 90, 95]) {
      const found = webpQuality(await picture.clone().webp({ quality }).toBuffer());
      expect(Math.abs(found!.quality - quality), `q${quality}: ${found?.quality}`).toBeLessThanOrEqual(3);
    }
    expect(webpQuality(await picture.clone().webp({ lossless: true }).toBuffer())).toBeUndefined();
  });
});

describe('the marked file', () => {
  const fingerprinting = inThreadFingerprinting('optmark test: re-encoding');

  it("keeps a JPEG's quality, subsampling and progressive mode, says so, and stays about its size", async () => {
    const picture = await raw(22);
    for (const options of [{ quality: 75 }, { quality: 90, progressive: true }, { quality: 85, chromaSubsampling: '4:4:4' }] as const) {
      const original = await picture.clone().jpeg(options).toBuffer();
      const result = await protectWithFingerprint(original, fingerprinting);
      expect(result.fingerprint).toBe('added');
      const [before, after] = await Promise.all([sharp(original).metadata(), sharp(result.bytes).metadata()]);
      expect(after.isProgressive, JSON.stringify(options)).toBe(before.isProgressive);
      expect(after.chromaSubsampling, JSON.stringify(options)).toBe(before.chromaSubsampling);
      expect(jpegEncoding(result.bytes)).toMatchObject({ quality: options.quality, exact: true });
      expect(result.fingerprintEncoding).toEqual(encodingLike(original));
      expect(result.fingerprintEncoding).toMatchObject({ format: 'jpeg', quality: options.quality, estimated: true });
      // At quality 95 the q75 file grew by more than half; at its own quality the mark costs little.
      expect(result.bytes.length / original.length, JSON.stringify(options)).toBeLessThan(1.2);
    }
  });

  it("keeps a lossy WebP's quality (as estimated) and a lossless WebP lossless", async () => {
    const picture = await raw(23);
    const lossy = await picture.clone().webp({ quality: 85 }).toBuffer();
    const result = await protectWithFingerprint(lossy, fingerprinting);
    expect(result.fingerprintEncoding).toMatchObject({ format: 'webp', lossless: false, estimated: true });
    expect(Math.abs(webpQuality(result.bytes)!.quality - 85)).toBeLessThanOrEqual(3);
    expect(result.bytes.length / lossy.length).toBeLessThan(1.25);
    const lossless = await picture.clone().webp({ lossless: true }).toBuffer();
    expect((await protectWithFingerprint(lossless, fingerprinting)).fingerprintEncoding).toEqual({ format: 'webp', lossless: true });
  });

  it("writes a lossy WebP with libwebp's sharp YUV: a colourful picture decoded and written again loses less of its colour", async () => {
    // Colour that changes every few pixels at equal luma, where 4:2:0 costs most.
    const width = 256;
    const height = 192;
    const data = new Uint8Array(width * height * 3);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const hue = ((x >> 2) * 7 + (y >> 2) * 13) % 3;
        data.set(hue === 0 ? [200, 60, 90] : hue === 1 ? [60, 150, 110] : [90, 110, 220], (y * width + x) * 3);
      }
    }
    const original = await sharp(data, { raw: { width, height, channels: 3 } }).webp({ quality: 90 }).toBuffer();
    const decoder = createPixelDecoder({ maxPixels: 1e8, concurrency: 1, queue: 2 });
    const decoded = await decoder.decode(original, { stored: true });
    const written = await decoder.withSlot(original, (held) => held.encodeLike(original, decoded));
    const like = encodingLike(original);
    const plain = await sharp(decoded.data, { raw: { width, height, channels: 3 } }).webp({ quality: like.lossless ? 100 : like.quality }).toBuffer();
    const psnrOf = async (bytes: Uint8Array) => colourPsnr(decoded, await decoder.decode(bytes, { stored: true }));
    const [sharpYuv, usual] = [await psnrOf(written), await psnrOf(plain)];
    expect(sharpYuv, `sharp YUV ${sharpYuv.toFixed(2)} dB, usual ${usual.toFixed(2)} dB`).toBeGreaterThan(usual + 1);
  });

  it('is described in words for the CLI and the dashboard', () => {
    expect(describeEncoding({ format: 'jpeg', lossless: false, quality: 85, estimated: true, subsampling: '4:2:0', progressive: true })).toBe("re-encoded as JPEG at quality 85, the original's (progressive, 4:2:0)");
    expect(describeEncoding({ format: 'png', lossless: true })).toBe('written losslessly as PNG');
    expect(sizeChange(1000, 1032)).toBe('+3.2 %');
    expect(sizeChange(1000, 996)).toBe('−0.4 %');
  });
});
