/**
 * How a marked picture is written (src/app/fingerprint-encode.ts): at the
 * original's settings; a lossy file that lost the mark, or a WebP of
 * quality 90 and more that fell under 40 dB against the original, written
 * again at higher qualities; the encoding says from what. The pixel work is
 * a stand-in here whose losses are set by the quality asked, so each rule
 * is seen on its own.
 */
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { colourPsnr, encodeMarked, FLOOR_DB, type EncodingPort } from '../../src/app/fingerprint-encode.js';
import type { FingerprintCheck } from '../../src/app/verify-image.js';
import type { Raster } from '../../src/core/fingerprint/raster.js';
import { encodingLike } from '../../src/core/formats/encoding-like.js';
import { describeEncoding } from '../../src/core/formats/encoding-words.js';
import { texturedPhoto } from './support.js';

const W = 64;
const H = 48;
const flat = (value: number): Raster => ({ data: new Uint8Array(W * H * 3).fill(value), width: W, height: H, channels: 3 });
const FOUND: FingerprintCheck = { present: true, confidence: 0.9, blocks: 128 };
const LOST: FingerprintCheck = { present: false, confidence: 0.6, blocks: 128 };

/**
 * Pixel work whose file at quality q is the byte q, decoding to the
 * original's pixels off by `error(q)` levels; the original decodes to 100
 * everywhere. Records the qualities asked and the decodes made.
 */
function standIn(original: Uint8Array, error: (quality: number | undefined) => number) {
  const asked: Array<number | undefined> = [];
  let decodes = 0;
  const held: EncodingPort = {
    async decode(bytes) {
      decodes++;
      return bytes === original ? flat(100) : flat(100 + error(bytes.length === 1 ? bytes[0] : undefined));
    },
    async encodeLike(_original, _pixels, quality) {
      asked.push(quality);
      return quality === undefined ? new Uint8Array([0, 0]) : new Uint8Array([quality]);
    },
  };
  return { held, asked, decodes: () => decodes };
}

const picture = async () => sharp(await texturedPhoto(320, 256, 'png', 31));
/** 3 levels everywhere: 38.59 dB; 2 levels: 42.11 dB. */
const levelsFor = (threshold: number) => (quality: number | undefined) => ((quality ?? 0) >= threshold ? 2 : 3);

describe('writing the marked file', () => {
  it('writes a WebP of quality 90 and more again, higher, until it keeps 40 dB against the original, and says so', async () => {
    const original = await (await picture()).webp({ quality: 92 }).toBuffer();
    const like = encodingLike(original);
    expect(like).toMatchObject({ format: 'webp', lossless: false });
    if (like.lossless) throw new Error('lossy expected');
    expect(like.quality).toBeGreaterThanOrEqual(90);
    const work = standIn(original, levelsFor(like.quality + 4));
    const written = await encodeMarked(work.held, original, flat(100), async () => FOUND);
    expect(work.asked).toEqual([like.quality, like.quality + 2, like.quality + 4]);
    expect(written.lost).toBe(false);
    expect(written.encoding).toMatchObject({ format: 'webp', quality: like.quality + 4, raisedFrom: like.quality });
    expect(colourPsnr(flat(100), flat(102))).toBeGreaterThanOrEqual(FLOOR_DB);
    expect(describeEncoding(written.encoding)).toBe(`re-encoded as WebP at quality ${like.quality + 4}, above the original's ${like.quality}, whose re-encoding lost too much`);
  });

  it('goes no higher than 8 above the original, and keeps the file at its quality when none in reach gives 40 dB', async () => {
    const original = await (await picture()).webp({ quality: 92 }).toBuffer();
    const like = encodingLike(original);
    if (like.lossless) throw new Error('lossy expected');
    const work = standIn(original, () => 3);
    const written = await encodeMarked(work.held, original, flat(100), async () => FOUND);
    expect(work.asked).toEqual([0, 2, 4, 6, 8].map((more) => Math.min(100, like.quality + more)).filter((q, i, all) => all.indexOf(q) === i));
    expect(written).toMatchObject({ lost: false, encoding: like });
    expect(written.bytes).toEqual(new Uint8Array([like.quality]));
  });

  it('leaves a WebP under quality 90, and a JPEG of any quality, at the original\'s quality without decoding anything', async () => {
    const webp = await (await picture()).webp({ quality: 75 }).toBuffer();
    const jpeg = await (await picture()).jpeg({ quality: 95 }).toBuffer();
    for (const original of [webp, jpeg]) {
      const like = encodingLike(original);
      const work = standIn(original, () => 30);
      const written = await encodeMarked(work.held, original, flat(100), async () => FOUND);
      expect(written).toMatchObject({ lost: false });
      expect(written.encoding).toEqual(like);
      expect(work.asked).toEqual([like.lossless ? undefined : like.quality]);
      expect(work.decodes()).toBe(0);
    }
  });

  it('writes a lossy file that lost the mark again, higher, up to 8 above the original, and reports it lost if it never comes back', async () => {
    const original = await (await picture()).jpeg({ quality: 80 }).toBuffer();
    const comesBack = standIn(original, () => 0);
    const found = await encodeMarked(comesBack.held, original, flat(100), async (bytes) => (bytes[0]! >= 84 ? FOUND : LOST));
    expect(comesBack.asked).toEqual([80, 82, 84]);
    expect(found).toMatchObject({ lost: false, encoding: { format: 'jpeg', quality: 84, raisedFrom: 80 } });

    const never = standIn(original, () => 0);
    const lost = await encodeMarked(never.held, original, flat(100), async () => LOST);
    expect(never.asked).toEqual([80, 82, 84, 86, 88]);
    expect(lost).toMatchObject({ lost: true, check: LOST });
  });

  it('tries a lossless file once', async () => {
    const original = await (await picture()).png().toBuffer();
    const work = standIn(original, () => 0);
    const written = await encodeMarked(work.held, original, flat(100), async () => LOST);
    expect(work.asked).toEqual([undefined]);
    expect(written).toMatchObject({ lost: true, encoding: { format: 'png', lossless: true } });
  });
});
