/**
 * Metadata carried from an image to a re-encoding of its pixels: the colour
 * profile, EXIF and XMP read back byte for byte, the new pixels are not
 * touched, the file stays valid for third-party checkers, and it can be
 * protected like any other.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { carryMetadata } from '../../../src/core/formats/carry-metadata.js';
import { inspect, protect } from '../../../src/index.js';
import { generatedImages, SAMPLE_XMP } from '../../support/generated.js';
import { tool } from '../../support/tools.js';

const exif = { IFD0: { Copyright: 'carried', Artist: 'Someone' } };
const base = () => sharp({ create: { width: 48, height: 32, channels: 4, background: { r: 200, g: 40, b: 90, alpha: 0.5 } } });
const generated = Object.fromEntries((await generatedImages()).map((g) => [g.name, g.bytes]));
const CASES: Array<[string, Buffer]> = [
  ['JPEG with EXIF and ICC', generated['progressive-exif-icc.jpg']!],
  ['JPEG with XMP', generated['with-xmp.jpg']!],
  ['PNG with ICC, EXIF and XMP', await base().withIccProfile('p3').withExif(exif).withXmp(SAMPLE_XMP).png().toBuffer()],
  ['lossy WebP with ICC, EXIF, XMP and alpha', await base().withIccProfile('p3').withExif(exif).withXmp(SAMPLE_XMP).webp({ quality: 90 }).toBuffer()],
  ['lossless WebP with alpha and EXIF', await base().withExif(exif).webp({ lossless: true }).toBuffer()],
  ['simple lossy WebP without metadata', generated['lossy.webp']!],
];

const dir = mkdtempSync(join(tmpdir(), 'optmark-carry-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The stored pixel values (keeping the profile stops sharp converting them to sRGB). */
const storedPixels = (bytes: Buffer) => sharp(bytes).keepIccProfile().ensureAlpha().raw().toBuffer();

/** What an encoder fed only pixels writes: no metadata at all. */
async function reencode(bytes: Buffer): Promise<Buffer> {
  const { data, info } = await sharp(bytes).keepIccProfile().raw().toBuffer({ resolveWithObject: true });
  const pixels = sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels } });
  const format = (await sharp(bytes).metadata()).format;
  return format === 'jpeg' ? pixels.jpeg({ quality: 95 }).toBuffer() : format === 'png' ? pixels.png().toBuffer() : pixels.webp({ quality: 95 }).toBuffer();
}

describe.each(CASES)('%s', (name, original) => {
  it('keeps the profile, EXIF and XMP byte for byte, and the new pixels untouched', async () => {
    const encoded = await reencode(original);
    const carried = Buffer.from(carryMetadata(original, encoded));
    const [before, plain, after] = await Promise.all([original, encoded, carried].map((b) => sharp(b).metadata()));
    for (const field of ['icc', 'exif', 'xmp'] as const) {
      expect(after![field]?.toString('base64'), field).toBe(before![field]?.toString('base64'));
    }
    expect(plain!.icc).toBeUndefined();
    expect(after!.hasAlpha).toBe(plain!.hasAlpha);
    expect((await storedPixels(carried)).equals(await storedPixels(encoded))).toBe(true);
  });

  it('stays valid for the format checker, and protects', async () => {
    const carried = carryMetadata(original, await reencode(original));
    const file = join(dir, `${name.replace(/\W+/g, '-')}.${carried[0] === 0xff ? 'jpg' : carried[0] === 0x89 ? 'png' : 'webp'}`);
    writeFileSync(file, carried);
    if (file.endsWith('.png')) expect((await tool('pngcheck', [file])).code).toBe(0);
    if (file.endsWith('.webp')) expect((await tool('webpinfo', ['-quiet', file])).code).toBe(0);
    expect(inspect(protect(carried).bytes).result.optedOut).toBe(true);
  });
});
