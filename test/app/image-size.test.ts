/**
 * protect and verify refuse an image whose header declares more than
 * maxImagePixels (default 16383 x 16383) with ImageDimensionsTooLargeError,
 * first, from the header alone: no pixel is decoded, and nothing else about
 * the file is looked at. The HTTP answer (422, nothing counted) is in
 * test/http/malformed.test.ts, row 24.
 */
import { describe, expect, it } from 'vitest';
import { createFingerprinting, type PixelPort } from '../../src/app/fingerprint.js';
import { DEFAULT_MAX_IMAGE_PIXELS } from '../../src/app/image-size.js';
import { protect, protectWithFingerprint } from '../../src/app/protect-image.js';
import { inspect, inspectWithFingerprint, verify } from '../../src/app/verify-image.js';
import { declaredDimensions } from '../../src/core/formats/dimensions.js';
import { sniff } from '../../src/core/formats/sniff.js';
import { CorruptImageError, ImageDimensionsTooLargeError, OptmarkError } from '../../src/errors.js';
import { blackPng, chunk, jpegWithFrameSize, PNG_SIGNATURE, u32be } from '../support/build.js';
import { corpusFile } from '../support/corpus.js';

const JPEG = corpusFile('exiftool/XMP.jpg').bytes;

/** A PNG header that declares width x height, followed by a chunk whose CRC is wrong: corrupt as a container. */
function corruptBombPng(width: number, height: number): Buffer {
  const ihdr = chunk('IHDR', Buffer.concat([u32be(width), u32be(height), Buffer.from([8, 2, 0, 0, 0])]));
  return Buffer.concat([PNG_SIGNATURE, ihdr, chunk('IDAT', Buffer.alloc(3), 0x12345678), chunk('IEND', Buffer.alloc(0))]);
}

/**
 * The fingerprint as the server builds it, around a pixel port that counts
 * every call instead of decoding; with a secret, so that a check does go on
 * to decode an image it is given.
 */
function countingFingerprint() {
  const calls = { decode: 0, probe: 0, withSlot: 0, detect: 0, embed: 0 };
  const pixels: PixelPort = {
    async decode() {
      calls.decode++;
      throw new CorruptImageError('png', 'not decoded in this test');
    },
    async probe() {
      calls.probe++;
      throw new CorruptImageError('png', 'not probed in this test');
    },
    async withSlot() {
      calls.withSlot++;
      throw new CorruptImageError('png', 'not decoded in this test');
    },
  };
  const secret = { version: 1, secret: new Uint8Array(32) };
  const fingerprint = createFingerprinting({
    pixels,
    detect: async () => {
      calls.detect++;
      return { present: false, confidence: 0, blocks: 0 };
    },
    embed: async () => {
      calls.embed++;
      return { refused: 'not embedded in this test' };
    },
    detecting: () => [secret],
    marking: () => secret,
  });
  return { fingerprint, calls };
}

const codeOf = async (call: () => unknown): Promise<string> => {
  try {
    await call();
    return 'ok';
  } catch (error) {
    if (error instanceof OptmarkError) return error.code;
    throw error;
  }
};

describe('the image pixel limit of protect and verify', () => {
  it('is 16383 x 16383 by default (sharp\'s limitInputPixels), above a 150-megapixel camera frame', () => {
    expect(DEFAULT_MAX_IMAGE_PIXELS).toBe(268_402_689);
    expect(DEFAULT_MAX_IMAGE_PIXELS).toBe(16383 * 16383);
    expect(14204 * 10652).toBeLessThan(DEFAULT_MAX_IMAGE_PIXELS); // Phase One IQ4 150MP
  });

  it.each([
    ['a 1-bit PNG of 20000x20000 (about 50 KB)', () => blackPng(20_000, 20_000), [20_000, 20_000]],
    ['a JPEG whose frame says 65500x65500', () => jpegWithFrameSize(JPEG, 65_500, 65_500), [65_500, 65_500]],
  ] as const)('refuses %s from protect, verify and inspect, naming the size and the limit', async (_, make, [width, height]) => {
    const bomb = make();
    const refusals = [() => protect(bomb), () => verify(bomb), () => inspect(bomb)];
    for (const call of refusals) {
      let error: unknown;
      try {
        call();
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ImageDimensionsTooLargeError);
      expect(error).toMatchObject({ code: 'image_dimensions_too_large', width, height, limit: DEFAULT_MAX_IMAGE_PIXELS });
      expect((error as Error).message).toContain(`${width}x${height}`);
    }
  });

  it('refuses without decoding: the fingerprint paths never reach the pixel decoder, the detector or the embedder', async () => {
    const { fingerprint, calls } = countingFingerprint();
    const bomb = blackPng(20_000, 20_000);
    await expect(inspectWithFingerprint(bomb, { fingerprint })).rejects.toBeInstanceOf(ImageDimensionsTooLargeError);
    await expect(protectWithFingerprint(bomb, fingerprint)).rejects.toBeInstanceOf(ImageDimensionsTooLargeError);
    expect(calls).toEqual({ decode: 0, probe: 0, withSlot: 0, detect: 0, embed: 0 });

    // The control: the same calls on an image under the limit do reach the
    // pixel port, so the counts above could have moved.
    // (Large enough for the mark's shape, which is judged from the header before anything is decoded.)
    const small = blackPng(512, 512);
    expect((await inspectWithFingerprint(small, { fingerprint })).result.fingerprint).toEqual({ present: false, confidence: 0, blocks: 0 });
    await expect(protectWithFingerprint(small, fingerprint)).rejects.toBeInstanceOf(CorruptImageError);
    expect(calls.decode).toBe(1);
    expect(calls.probe).toBe(1);
  });

  it('refuses before any other work: a container that is also corrupt gets the size refusal, from protect and verify alike', async () => {
    const bomb = corruptBombPng(100_000, 100_000);
    expect(bomb.length).toBeLessThan(100);
    expect(await codeOf(() => protect(bomb))).toBe('image_dimensions_too_large');
    expect(await codeOf(() => verify(bomb))).toBe('image_dimensions_too_large');
    // Under a limit it fits, the same bytes are judged by the container parser.
    const roomy = { maxImagePixels: Number.MAX_SAFE_INTEGER };
    expect(await codeOf(() => protect(bomb, roomy))).toBe('corrupt_image');
    expect(await codeOf(() => verify(bomb, roomy))).toBe('corrupt_image');
    // An invalid option is not looked at either.
    expect(await codeOf(() => protect(bomb, { value: 'DMI-ALLOWED' }))).toBe('image_dimensions_too_large');
    expect(await codeOf(() => protect(blackPng(8, 8), { value: 'DMI-ALLOWED' }))).toBe('invalid_option');
  });

  it('refuses in well under a millisecond a call: nothing but the header is read', () => {
    const bomb = blackPng(20_000, 20_000);
    const started = performance.now();
    for (let i = 0; i < 100; i++) expect(() => protect(bomb)).toThrow(ImageDimensionsTooLargeError);
    const perCall = (performance.now() - started) / 100;
    // A decode of these 400 megapixels takes seconds; even a full container
    // parse and the SHA-256 of 50 KB would be tens of microseconds.
    expect(perCall).toBeLessThan(1);
  });

  it.each(['exiftool/XMP.jpg', 'pngsuite/basn2c08.png', 'pillow/hopper.webp'])('takes %s at a limit of exactly its pixel count and refuses it one pixel below', async (name) => {
    const bytes = corpusFile(name).bytes;
    const size = declaredDimensions(bytes, sniff(bytes).format)!;
    const pixels = size.width * size.height;
    expect(await codeOf(() => protect(bytes, { maxImagePixels: pixels }))).toBe('ok');
    expect(await codeOf(() => verify(bytes, { maxImagePixels: pixels }))).toBe('ok');
    expect(await codeOf(() => protect(bytes, { maxImagePixels: pixels - 1 }))).toBe('image_dimensions_too_large');
    expect(await codeOf(() => verify(bytes, { maxImagePixels: pixels - 1 }))).toBe('image_dimensions_too_large');
  });
});
