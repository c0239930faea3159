/**
 * The fingerprint in every verify, through the API: an image marked with this
 * deployment's secret (as `optmark protect --fingerprint` does) is found,
 * also after a JPEG re-encode, and upright whatever the EXIF orientation; unmarked and flat images are not; the API's
 * protect never adds the mark (its output has exactly the input's pixels), and
 * refuses a request that asks for it.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FingerprintKeys } from '../../src/adapters/fingerprint-keys.js';
import detect, { embed } from '../../src/adapters/fingerprint-worker.js';
import { createPixelDecoder } from '../../src/adapters/pixels.js';
import { createFingerprinting } from '../../src/app/fingerprint.js';
import { freshDataDir, postImage, startTestServer, type TestServer } from '../support/server.js';
import { fixFingerprintKey, texturedPhoto } from './support.js';

let t: TestServer;
let key: string;
let marked: Uint8Array;
let fingerprinting: ReturnType<typeof createFingerprinting>;
const original = await texturedPhoto(640, 480);

/** The deployment's fingerprint secret, fixed before the server starts (it would create a random one): the same mark on every run. */
const dataDir = freshDataDir();
fixFingerprintKey(dataDir, 'optmark test: verify api');

beforeAll(async () => {
  t = await startTestServer({ dataDir });
  key = await t.key('pro');
  const keys = FingerprintKeys.open(join(t.dataDir, 'fingerprint-keys.json'));
  fingerprinting = createFingerprinting({
    pixels: createPixelDecoder({ maxPixels: 1e8, concurrency: 1, queue: 1 }),
    detect: async (task) => detect(task),
    embed: async (task) => embed(task),
    detecting: () => keys.detecting,
    marking: () => keys.marking,
  });
  marked = (await fingerprinting.mark(original)).bytes;
});
afterAll(async () => {
  await t?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function fingerprintOf(bytes: Uint8Array) {
  const response = await postImage(t.url, key, bytes, { path: '/api/v1/verify' });
  expect(response.status).toBe(200);
  return ((await response.json()) as { fingerprint: { present: boolean; confidence: number; blocks: number } }).fingerprint;
}

describe('verify', () => {
  it('finds the mark, with most blocks matching', async () => {
    const f = await fingerprintOf(marked);
    expect(f.present).toBe(true);
    expect(f.confidence).toBeGreaterThan(0.9);
    expect(f.blocks).toBeGreaterThan(50);
  });

  it('finds it after a JPEG re-encode at quality 75 and a resize to half', async () => {
    const attacked = await sharp(marked).resize(320).jpeg({ quality: 75 }).toBuffer();
    expect((await fingerprintOf(attacked)).present).toBe(true);
  });

  it('marks a photo that EXIF turns for display upright: found as it is, and in a copy turned and stripped of its metadata', async () => {
    const sideways = await sharp(original).withMetadata({ orientation: 6 }).jpeg({ quality: 92 }).toBuffer();
    const markedSideways = (await fingerprinting.mark(sideways)).bytes;
    expect((await sharp(markedSideways).metadata()).orientation).toBe(6);
    expect((await fingerprintOf(markedSideways)).present).toBe(true);
    // What a platform does: apply the orientation, drop EXIF, re-encode.
    const upright = await sharp(markedSideways).rotate().jpeg({ quality: 85 }).toBuffer();
    expect((await sharp(upright).metadata()).orientation).toBeUndefined();
    expect((await fingerprintOf(upright)).present).toBe(true);
  });

  it('marks grey pictures as grey (JPEG; PNG with its alpha untouched), and finds the mark', async () => {
    const grey = await sharp(original).toColourspace('b-w').jpeg({ quality: 92 }).toBuffer();
    const markedGrey = (await fingerprinting.mark(grey)).bytes;
    expect((await sharp(markedGrey).metadata()).channels).toBe(1);
    expect((await fingerprintOf(markedGrey)).present).toBe(true);
    expect((await fingerprintOf(grey)).present).toBe(false);

    const greyAlpha = await sharp(original).toColourspace('b-w').ensureAlpha(0.6).png().toBuffer();
    const markedAlpha = (await fingerprinting.mark(greyAlpha)).bytes;
    expect((await sharp(markedAlpha).metadata()).channels).toBe(2);
    // sharp decodes grey + alpha as RGBA: the alpha is the fourth value of each pixel.
    const alphaOf = async (png: Uint8Array) => Buffer.from((await sharp(png).raw().toBuffer()).filter((_, i) => i % 4 === 3));
    expect((await alphaOf(markedAlpha)).equals(await alphaOf(greyAlpha))).toBe(true);
    expect((await fingerprintOf(markedAlpha)).present).toBe(true);
  });

  it('does not find it in the unmarked original: about half the blocks match', async () => {
    const f = await fingerprintOf(original);
    expect(f.present).toBe(false);
    expect(f.blocks).toBeGreaterThan(50);
    expect(f.confidence).toBeGreaterThan(0.25);
    expect(f.confidence).toBeLessThan(0.75);
  });

  it('examines no block of a flat grey image, or of one too small', async () => {
    const grey = await sharp({ create: { width: 512, height: 512, channels: 3, background: '#808080' } }).png().toBuffer();
    expect(await fingerprintOf(grey)).toEqual({ present: false, confidence: 0, blocks: 0 });
    const tiny = await sharp(original).resize(64).png().toBuffer();
    expect(await fingerprintOf(tiny)).toEqual({ present: false, confidence: 0, blocks: 0 });
  });
});

describe("the API's protect", () => {
  const protectedUsage = async () =>
    ((await (await fetch(`${t.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } })).json()) as { protect: { used: number } }).protect.used;

  it('writes the opt-out and never the fingerprint: JPEG, PNG and WebP come back with exactly their pixels', async () => {
    const inputs = [original, await texturedPhoto(640, 480, 'png'), await texturedPhoto(640, 480, 'webp')];
    for (const input of inputs) {
      const response = await postImage(t.url, key, input);
      expect(response.status).toBe(200);
      const body = (await response.json()) as { imageBase64: string };
      const protectedBytes = Buffer.from(body.imageBase64, 'base64');
      const format = (await sharp(input).metadata()).format;
      expect((await sharp(protectedBytes).metadata()).format).toBe(format);
      const [before, after] = await Promise.all([input, protectedBytes].map((b) => sharp(b).raw().toBuffer({ resolveWithObject: true })));
      expect(after!.info, format).toEqual(before!.info);
      expect(after!.data.equals(before!.data), `${format}: pixels`).toBe(true);
      const verified = (await (await postImage(t.url, key, protectedBytes, { path: '/api/v1/verify' })).json()) as { optedOut: boolean; fingerprint: { present: boolean } };
      expect(verified, format).toMatchObject({ optedOut: true, fingerprint: { present: false } });
    }
  });

  it.each(['after', 'before'])('refuses a fingerprint=on field (%s the image) with 400 multiple_parts, and counts nothing', async (where) => {
    const form = new FormData();
    if (where === 'before') form.append('fingerprint', 'on');
    form.append('image', new Blob([original]), 'photo.jpg');
    if (where === 'after') form.append('fingerprint', 'on');
    const before = await protectedUsage();
    const response = await fetch(`${t.url}/api/v1/protect`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'multiple_parts', error: expect.stringContaining('field "fingerprint"') });
    expect(await protectedUsage()).toBe(before);
    // The same call without the field is counted at once: the reading above would have seen a count.
    expect((await postImage(t.url, key, original)).status).toBe(200);
    expect(await protectedUsage()).toBe(before + 1);
  });
});
