/**
 * The pixel decoder takes only JPEG, PNG and WebP, refuses a decompression
 * bomb from its header in milliseconds, and sheds decodes past its queue.
 */
import { deflateSync } from 'node:zlib';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { createPixelDecoder } from '../../src/adapters/pixels.js';
import { CorruptImageError, ImageDimensionsTooLargeError, ServerBusyError } from '../../src/errors.js';
import { chunk, PNG_SIGNATURE, u32be } from '../support/build.js';
import { corpusFile } from '../support/corpus.js';

const LIMITS = { maxPixels: 100_000_000, concurrency: 2, queue: 8 };

/** A real 1-bit greyscale PNG of width x height, all black: tiny compressed, huge decoded. */
function blackPng(width: number, height: number): Buffer {
  const row = Buffer.alloc(1 + Math.ceil(width / 8));
  const raw = Buffer.alloc(row.length * height);
  const ihdr = Buffer.concat([u32be(width), u32be(height), Buffer.from([1, 0, 0, 0, 0])]);
  return Buffer.concat([PNG_SIGNATURE, chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw, { level: 9 })), chunk('IEND', Buffer.alloc(0))]);
}

describe('pixel decoder', () => {
  const decoder = createPixelDecoder(LIMITS);

  it.each(['exiftool/XMP.jpg', 'pngsuite/basn2c08.png', 'libwebp-test-data/lossless1.webp'])('decodes %s', async (name) => {
    const pixels = await decoder.decode(corpusFile(name).bytes);
    const reference = await sharp(corpusFile(name).bytes).raw().toBuffer({ resolveWithObject: true });
    expect(pixels.width).toBe(reference.info.width);
    expect(pixels.height).toBe(reference.info.height);
    expect(pixels.data.equals(reference.data)).toBe(true);
  });

  it('shrinks to maxSide and gives one channel for grey', async () => {
    const pixels = await decoder.decode(corpusFile('exiftool/XMP.jpg').bytes, { maxSide: 16, grey: true });
    expect(Math.max(pixels.width, pixels.height)).toBeLessThanOrEqual(16);
    expect(pixels.channels).toBe(1);
    expect(pixels.data.length).toBe(pixels.width * pixels.height);
  });

  it('refuses a PNG of about 50 KB that declares 20000x20000 within milliseconds', async () => {
    const bomb = blackPng(20_000, 20_000);
    expect(bomb.length).toBeLessThan(100_000);
    const started = performance.now();
    const error = await decoder.decode(bomb).catch((e: unknown) => e);
    const ms = performance.now() - started;
    expect(error).toBeInstanceOf(ImageDimensionsTooLargeError);
    expect((error as Error).message).toMatch(/20000x20000/);
    expect(ms).toBeLessThan(50);
    // The figure docs/reliability.md quotes.
    console.info(`pixel bomb: ${bomb.length}-byte PNG declaring 20000x20000 refused in ${ms.toFixed(2)} ms`);
  });

  it('sharp itself no longer decodes other formats: libvips refuses SVG, GIF and TIFF bytes', async () => {
    await import('../../src/adapters/pixels.js');
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8"/></svg>');
    const gif = Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64');
    const tiff = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#808080' } }).tiff().toBuffer();
    for (const bytes of [svg, gif, tiff]) {
      await expect(sharp(bytes).metadata()).rejects.toThrow(/unsupported image format/i);
    }
  });

  it('a PNG cut inside its image data is corrupt (the header alone would pass)', async () => {
    const whole = blackPng(64, 64);
    const idatEnd = whole.length - 12;
    const cut = Buffer.concat([whole.subarray(0, idatEnd - 20), chunk('IEND', Buffer.alloc(0))]);
    await expect(decoder.decode(cut)).rejects.toBeInstanceOf(CorruptImageError);
  });

  it('past the queue, a decode is refused at once with ServerBusyError, and the admitted ones finish', async () => {
    const small = createPixelDecoder({ maxPixels: 100_000_000, concurrency: 1, queue: 2 });
    const big = blackPng(4000, 4000);
    const calls = Array.from({ length: 5 }, () => small.decode(big).then(() => 'ok', (e: unknown) => e));
    const outcomes = await Promise.all(calls);
    expect(outcomes.filter((o) => o === 'ok')).toHaveLength(3);
    expect(outcomes.filter((o) => o instanceof ServerBusyError)).toHaveLength(2);
    expect(small.load).toEqual({ running: 0, waiting: 0 });
  });
});
