/**
 * The pixel decoder takes only JPEG, PNG and WebP, refuses a decompression
 * bomb from its header in milliseconds, and sheds decodes past its queue.
 */
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { createPixelDecoder } from '../../src/adapters/pixels.js';
import { CorruptImageError, ImageDimensionsTooLargeError, ServerBusyError } from '../../src/errors.js';
import { blackPng, chunk, headerOnlyPng, u32be } from '../support/build.js';
import { corpusFile } from '../support/corpus.js';
import { collector } from '../support/gc.js';

const LIMITS = { maxPixels: 100_000_000, concurrency: 2, queue: 8 };

/** A one-page PDF with no content: what a PDF loader would render as an 8x8 point page. */
const MINIMAL_PDF =
  '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n' +
  '3 0 obj<</Type/Page/MediaBox[0 0 8 8]/Parent 2 0 R>>endobj\ntrailer<</Size 4/Root 1 0 R>>\n%%EOF\n';

/** A 1x1 24-bit BMP: file header, BITMAPINFOHEADER, one padded row (blue, green, red, 0). */
function bmp1x1(): Buffer {
  const header = Buffer.alloc(54);
  header.write('BM', 0, 'latin1');
  header.writeUInt32LE(58, 2); // file size
  header.writeUInt32LE(54, 10); // pixel data offset
  header.writeUInt32LE(40, 14); // BITMAPINFOHEADER size
  header.writeInt32LE(1, 18); // width
  header.writeInt32LE(1, 22); // height
  header.writeUInt16LE(1, 26); // planes
  header.writeUInt16LE(24, 28); // bits per pixel
  header.writeUInt32LE(4, 34); // image size
  return Buffer.concat([header, Buffer.from([0x80, 0x80, 0x80, 0])]);
}

/** An ICO file holding one 16x16 icon stored as PNG (Vista's form). */
function ico(png: Buffer): Buffer {
  const dir = Buffer.alloc(22);
  dir.writeUInt16LE(0, 0); // reserved
  dir.writeUInt16LE(1, 2); // type: icon
  dir.writeUInt16LE(1, 4); // one image
  dir.writeUInt8(16, 6); // width
  dir.writeUInt8(16, 7); // height
  dir.writeUInt16LE(1, 10); // planes
  dir.writeUInt16LE(32, 12); // bits per pixel
  dir.writeUInt32LE(png.length, 14);
  dir.writeUInt32LE(22, 18); // offset of the image
  return Buffer.concat([dir, png]);
}

/** A full collection before a memory reading. */
const collectGarbage = () => collector()();

const MB = 1024 * 1024;
/** Resident memory now, and the process's peak so far (getrusage's maxRSS, which is in KiB). */
const memory = () => ({ rss: process.memoryUsage().rss, peak: process.resourceUsage().maxRSS * 1024 });

describe('pixel decoder', () => {
  const decoder = createPixelDecoder(LIMITS);

  it.each(['exiftool/XMP.jpg', 'pngsuite/basn2c08.png', 'libwebp-test-data/lossless1.webp'])('decodes %s', async (name) => {
    const pixels = await decoder.decode(corpusFile(name).bytes);
    const reference = await sharp(corpusFile(name).bytes).raw().toBuffer({ resolveWithObject: true });
    expect(pixels.width).toBe(reference.info.width);
    expect(pixels.height).toBe(reference.info.height);
    expect(Buffer.from(pixels.data).equals(reference.data)).toBe(true);
  });

  it('shrinks to maxSide', async () => {
    const pixels = await decoder.decode(corpusFile('exiftool/XMP.jpg').bytes, { maxSide: 16 });
    expect(Math.max(pixels.width, pixels.height)).toBeLessThanOrEqual(16);
    expect(pixels.data.length).toBe(pixels.width * pixels.height * pixels.channels);
  });

  // What the fingerprint detector is handed: 8-bit samples, three colour
  // channels (and the alpha), whatever the file stores (16-bit, grey, CMYK).
  it.each([
    ['pngsuite/basn2c08.png', 3],
    ['pngsuite/basn0g16.png', 3],
    ['pngsuite/basn6a16.png', 4],
    ['pngsuite/basn4a08.png', 4],
    ['exiv2/ReaganLargeJpg.jpg', 3],
    ['exifr/cmyk-multi-icc.jpg', 3],
  ])('a shrunk decode of %s gives 8-bit sRGB with %i channels, as libvips renders it', async (name, channels) => {
    const bytes = corpusFile(name).bytes;
    const pixels = await decoder.decode(bytes, { minSide: 24, orient: true });
    const reference = await sharp(bytes).rotate().resize(24, 24, { fit: 'outside', withoutEnlargement: true }).toColourspace('srgb').raw().toBuffer({ resolveWithObject: true });
    expect([pixels.width, pixels.height, pixels.channels]).toEqual([reference.info.width, reference.info.height, channels]);
    expect(pixels.data.length).toBe(pixels.width * pixels.height * channels);
    expect(Buffer.from(pixels.data).equals(reference.data)).toBe(true);
  });

  // A fingerprinted JPEG is re-encoded: its colour is never stored coarser
  // than the original's, nor finer than needed (a 4:4:4 copy of a 4:2:0
  // camera file is about a third larger for detail the camera never stored).
  it.each([
    ['4:2:0', '4:2:0', 3],
    ['4:4:4', '4:4:4', 3],
  ] as const)('a JPEG stored %s is written back %s', async (input, output, channels) => {
    const raw = { raw: { width: 64, height: 48, channels: 3 as const } };
    const pixels = Buffer.alloc(64 * 48 * 3, 0).map((_, i) => (i * 37) % 251);
    const original = await sharp(pixels, raw).jpeg({ quality: 90, chromaSubsampling: input }).toBuffer();
    expect((await sharp(original).metadata()).chromaSubsampling).toBe(input);
    const written = await decoder.withSlot(original, async (held) => held.encodeLike(original, await held.decode(original, { stored: true })));
    const meta = await sharp(written).metadata();
    expect([meta.format, meta.chromaSubsampling, meta.channels]).toEqual(['jpeg', output, channels]);
  });

  it('a grey JPEG is written back grey (one channel, no chroma at all)', async () => {
    const original = await sharp(Buffer.alloc(64 * 48, 0).map((_, i) => i % 256), { raw: { width: 64, height: 48, channels: 1 } }).jpeg({ quality: 90 }).toBuffer();
    const written = await decoder.withSlot(original, async (held) => {
      const decoded = await held.decode(original, { stored: true });
      return held.encodeLike(original, { data: decoded.data.filter((_, i) => i % decoded.channels === 0), width: decoded.width, height: decoded.height, channels: 1 });
    });
    expect((await sharp(written).metadata()).channels).toBe(1);
  });

  // The second is the hardening plan's other PNG bomb (DOS-1): no pixel data to
  // speak of, only a header that declares 10^10 pixels. Both are refused from
  // the header, before libvips is handed the file.
  it.each([
    ['a PNG of about 50 KB that declares 20000x20000', () => blackPng(20_000, 20_000), 100_000, '20000x20000'],
    ['a 68-byte PNG whose header declares 100000x100000 (10^10 pixels)', () => headerOnlyPng(100_000, 100_000), 68, '100000x100000'],
  ])('refuses %s within milliseconds', async (_, make, maxBytes, size) => {
    const bomb = make();
    expect(bomb.length).toBeLessThanOrEqual(maxBytes);
    const started = performance.now();
    const error = await decoder.decode(bomb).catch((e: unknown) => e);
    const ms = performance.now() - started;
    expect(error).toBeInstanceOf(ImageDimensionsTooLargeError);
    expect((error as Error).message).toContain(size);
    // The plan's bound (DOS-1); measured about 0.3 ms.
    expect(ms).toBeLessThan(20);
    // The figures docs/reliability.md quotes.
    console.info(`pixel bomb: ${bomb.length}-byte PNG declaring ${size} refused in ${ms.toFixed(2)} ms`);
  });

  // Decoded, the first bomb takes 400 MB to 1.2 GB (one to three bytes a pixel):
  // a decode that slipped past the header check shows in the process's peak
  // RSS even if its buffer were freed at once, and a leak shows after a GC.
  it('refusing that bomb 20 times grows resident memory by less than 20 MB, at its peak and after a GC', async () => {
    const bomb = blackPng(20_000, 20_000);
    collectGarbage();
    const before = memory();
    for (let i = 0; i < 20; i++) {
      await expect(decoder.decode(bomb)).rejects.toBeInstanceOf(ImageDimensionsTooLargeError);
    }
    collectGarbage();
    const after = memory();
    const growth = { rss: (after.rss - before.rss) / MB, peak: (after.peak - before.peak) / MB };
    // The figures docs/reliability.md quotes.
    console.info(`pixel bomb x20: RSS ${growth.rss >= 0 ? '+' : ''}${growth.rss.toFixed(1)} MB after a GC, peak RSS +${growth.peak.toFixed(1)} MB`);
    expect(growth.rss).toBeLessThan(20);
    expect(growth.peak).toBeLessThan(20);
  });

  // sharp 0.35.5's toUint8Array never frees the native buffer behind its
  // answer: 200 decodes of this picture (3 MB of pixels each) grew the
  // process by over 600 MB, kept after a GC. Thumbnails went the same way.
  it('decodes and thumbnails keep no memory: 200 of each grow resident memory by less than 100 MB after a GC', async () => {
    const picture = await sharp({ create: { width: 1000, height: 1000, channels: 3, background: '#808080' } }).png().toBuffer();
    collectGarbage();
    const before = memory().rss;
    for (let i = 0; i < 200; i++) {
      expect((await decoder.decode(picture)).data.byteLength).toBe(3_000_000);
      expect((await decoder.thumbnail(picture, 800)).byteLength).toBeGreaterThan(0);
    }
    collectGarbage();
    const growth = (memory().rss - before) / MB;
    console.info(`200 decodes and thumbnails of a 1000 x 1000 picture: RSS ${growth >= 0 ? '+' : ''}${growth.toFixed(1)} MB after a GC`);
    expect(growth).toBeLessThan(100);
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

  // Straight to sharp, past our sniffing: libvips' own loaders must refuse
  // these. The AVIF is real (libvips' heif saver made it, and its loader is
  // built into sharp's libvips): only the block stops it. sharp's libvips has
  // no PDF, JPEG XL or ImageMagick loader at all; a libvips built with them
  // (a system one) would have them blocked too, which these bytes stand
  // ready to show.
  it.each([
    ['AVIF (made by libvips itself)', async () => sharp({ create: { width: 16, height: 16, channels: 3, background: '#808080' } }).avif().toBuffer()],
    ['HEIC (an ftyp box of brand heic)', async () => Buffer.concat([u32be(24), Buffer.from('ftypheic'), u32be(0), Buffer.from('mif1heic')])],
    ['PDF (one empty page)', async () => Buffer.from(MINIMAL_PDF, 'latin1')],
    ['JPEG XL (the container signature and its ftyp)', async () => Buffer.concat([Buffer.from('0000000c4a584c200d0a870a', 'hex'), u32be(20), Buffer.from('ftypjxl '), u32be(0), Buffer.from('jxl ')])],
    ['JPEG XL (a bare codestream)', async () => Buffer.from('ff0a0000000000000000', 'hex')],
    ['BMP (1x1, 24-bit; ImageMagick only)', async () => bmp1x1()],
    ['ICO (one 16x16 PNG icon; ImageMagick only)', async () => ico(await sharp({ create: { width: 16, height: 16, channels: 4, background: '#808080' } }).png().toBuffer())],
  ])('sharp itself no longer decodes %s: libvips refuses it', async (_, make) => {
    await import('../../src/adapters/pixels.js');
    const bytes = await make();
    await expect(sharp(bytes).metadata()).rejects.toThrow(/unsupported image format/i);
    await expect(sharp(bytes).raw().toBuffer()).rejects.toThrow(/unsupported image format/i);
    // The control: what the block lets through still loads in the same way.
    await expect(sharp(corpusFile('pngsuite/basn2c08.png').bytes).metadata()).resolves.toMatchObject({ format: 'png' });
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

  it('a decode whose signal is aborted while it waits leaves the line at once, and the slot goes to the next in line', async () => {
    const small = createPixelDecoder({ maxPixels: 100_000_000, concurrency: 1, queue: 2 });
    const big = blackPng(4000, 4000);
    const gone = new AbortController();
    const running = small.decode(big);
    const abandoned = small.decode(big, { signal: gone.signal }).then(() => 'decoded', (e: unknown) => e);
    const next = small.decode(big);
    expect(small.load).toEqual({ running: 1, waiting: 2 });
    gone.abort();
    expect(await abandoned).toMatchObject({ name: 'AbortError' });
    expect(small.load).toEqual({ running: 1, waiting: 1 });
    await Promise.all([running, next]);
    expect(small.load).toEqual({ running: 0, waiting: 0 });
    // Aborted before it asks: refused without waiting or decoding.
    await expect(small.decode(big, { signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' });
    expect(small.load).toEqual({ running: 0, waiting: 0 });
  });
});
