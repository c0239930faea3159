/**
 * protectWithFingerprint, the layer the dashboard and the CLI share: a file
 * that already carries the mark is not marked again (each marking would cost
 * its own PSNR budget on top of the last); a C2PA manifest store is carried
 * over in every format and reported invalidated, as plain protect does; a
 * file protect refuses is refused with protect's own words before any pixel
 * work; a lossless WebP keeps the colour under its transparent pixels.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { FingerprintKeys } from '../../src/adapters/fingerprint-keys.js';
import detect, { embed } from '../../src/adapters/fingerprint-worker.js';
import { createPixelDecoder } from '../../src/adapters/pixels.js';
import { createFingerprinting, type EmbedPort } from '../../src/app/fingerprint.js';
import { protect, protectWithFingerprint } from '../../src/app/protect-image.js';
import { inspect, verify } from '../../src/index.js';
import { webp } from '../../src/core/formats/webp.js';
import { riff, riffChunk } from '../support/build.js';
import { manifestJumbf, withC2pa } from '../support/c2pa.js';
import { psnr } from '../support/psnr.js';
import { fixFingerprintKey, texturedPhoto } from './support.js';

const dataDir = mkdtempSync(join(tmpdir(), 'optmark-fp-layer-'));
// It holds a fingerprint secret: not left behind.
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
fixFingerprintKey(dataDir, 'optmark test: protect layer');
const keys = FingerprintKeys.open(join(dataDir, 'fingerprint-keys.json'));
let embeds = 0;
const counted: EmbedPort = async (task) => {
  embeds++;
  return embed(task);
};
const fingerprinting = createFingerprinting({
  pixels: createPixelDecoder({ maxPixels: 1e8, concurrency: 1, queue: 1 }),
  detect: async (task) => detect(task),
  embed: counted,
  detecting: () => keys.detecting,
  marking: () => keys.marking,
});

const rgbOf = async (bytes: Uint8Array) => sharp(bytes).removeAlpha().raw().toBuffer();

describe('a file that already carries the mark', () => {
  it('is not marked again: the second protect --fingerprint finds it, embeds nothing and returns the file as it was', async () => {
    const original = await texturedPhoto(512, 384, 'png', 11);
    const first = await protectWithFingerprint(original, fingerprinting);
    expect(first.fingerprint).toBe('added');
    expect(psnr(await rgbOf(original), await rgbOf(first.bytes))).toBeGreaterThanOrEqual(42);

    const before = embeds;
    const second = await protectWithFingerprint(first.bytes, fingerprinting);
    expect(second.fingerprint).toBe('found');
    expect(embeds).toBe(before);
    // Already opted out with the same value: nothing to write either.
    expect(second.changed).toBe(false);
    expect(Buffer.from(second.bytes).equals(Buffer.from(first.bytes))).toBe(true);
  });

  it('an unmarked copy of the same picture is marked (the check is for the mark, not for the opt-out metadata)', async () => {
    const original = await texturedPhoto(512, 384, 'png', 12);
    const optedOut = protect(original).bytes;
    const result = await protectWithFingerprint(optedOut, fingerprinting);
    expect(result.fingerprint).toBe('added');
    expect(verify(result.bytes).optedOut).toBe(true);
  });
});

describe('a C2PA manifest store', () => {
  it('is carried over in JPEG, PNG and WebP, reported invalidated, and its training-and-data-mining signal still read', async () => {
    const entries = { 'cawg.ai_training': 'notAllowed' } as const;
    const jpeg = await withC2pa(await texturedPhoto(512, 384, 'jpeg', 13), entries);
    const png = await withC2pa(await texturedPhoto(512, 384, 'png', 14), entries);
    const plainWebp = await sharp(await texturedPhoto(512, 384, 'png', 15)).webp({ quality: 90 }).toBuffer();
    const webpFile = riff([Buffer.from(plainWebp.subarray(12)), riffChunk('C2PA', manifestJumbf(jpeg))]);
    for (const [name, file] of [['jpeg', jpeg], ['png', png], ['webp', webpFile]] as const) {
      expect(inspect(file).details.signals, name).toEqual(['cawg.trainingMining']);
      const result = await protectWithFingerprint(file, fingerprinting);
      expect(result.fingerprint, name).toBe('added');
      expect(result.c2paInvalidated, name).toBe(true);
      expect(verify(result.bytes).signals, name).toEqual(['iptc.dataMining', 'cawg.trainingMining']);
      expect((await fingerprinting.check(result.bytes)).present, name).toBe(true);
    }
  });
});

describe('what protect refuses', () => {
  it('is refused with protect\'s error before any pixel work: a truncated JPEG gives the same code and message with and without the fingerprint', async () => {
    const whole = await texturedPhoto(512, 384, 'jpeg', 16);
    const truncated = whole.subarray(0, Math.floor(whole.length * 0.6));
    const plain = (() => {
      try {
        protect(truncated);
      } catch (error) {
        return error as Error & { code: string };
      }
      throw new Error('protect took a truncated JPEG');
    })();
    const before = embeds;
    await expect(protectWithFingerprint(truncated, fingerprinting)).rejects.toMatchObject({ code: plain.code, message: plain.message });
    expect(embeds).toBe(before);
  });
});

describe('a lossless WebP with transparent pixels', () => {
  it('keeps the colour under them (libwebp zeroes it unless told to keep it exactly), and its alpha', async () => {
    const width = 512;
    const height = 384;
    const rgb = await sharp(await texturedPhoto(width, height, 'png', 17)).raw().toBuffer();
    const rgba = Buffer.alloc(width * height * 4);
    // The left half fully transparent, over the same texture as the rest.
    for (let i = 0; i < width * height; i++) rgba.set([rgb[i * 3]!, rgb[i * 3 + 1]!, rgb[i * 3 + 2]!, i % width < width / 2 ? 0 : 255], i * 4);
    const original = await sharp(rgba, { raw: { width, height, channels: 4 } }).webp({ lossless: true, exact: true }).toBuffer();
    const result = await protectWithFingerprint(original, fingerprinting);
    expect(webp.blocks(result.bytes).map((b) => b.type)).toContain('VP8L');
    const [before, after] = await Promise.all([original, result.bytes].map((b) => sharp(b).raw().toBuffer()));
    const alpha = (b: Buffer) => Buffer.from(b.filter((_, i) => i % 4 === 3));
    expect(alpha(after!).equals(alpha(before!))).toBe(true);
    // Under the transparent half: the original colour plus the mark, not zeros.
    const hidden = (b: Buffer) => Buffer.from(b.filter((_, i) => i % 4 !== 3 && ((i >> 2) % width) < width / 2));
    expect(psnr(hidden(before!), hidden(after!))).toBeGreaterThanOrEqual(38);
  });
});
