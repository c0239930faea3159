/**
 * Metadata carried from an image to a re-encoding of its pixels: the colour
 * profile, EXIF and XMP read back byte for byte, the new pixels are not
 * touched, the file stays valid for third-party checkers, and it can be
 * protected like any other. What indexes images stored after a JPEG's EOI
 * (MPF, a container's XMP) is not carried, since those images are not.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { carryMetadata } from '../../../src/core/formats/carry-metadata.js';
import { jpeg } from '../../../src/core/formats/jpeg.js';
import { inspect, protect } from '../../../src/index.js';
import { extensionSegments, latin1, md5Guid, segment, u32le, xmpPacket, xmpSegment } from '../../support/build.js';
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

/** A JPEG with an ICC profile and EXIF, and a second JPEG to store after its EOI. */
const primary = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3a7' } }).withIccProfile('p3').withExif(exif).jpeg({ quality: 90 }).toBuffer();
const secondary = await sharp({ create: { width: 32, height: 24, channels: 3, background: '#a73' } }).jpeg().toBuffer();

describe('JPEG: what points at images after EOI is not carried', () => {
  /** Each APPn/COM segment of a JPEG before its first scan, with its identifier (payload up to the first NUL). */
  const appSegments = (bytes: Uint8Array) =>
    jpeg
      .blocks(bytes)
      .filter((b) => /^(APP\d+|COM)$/.test(b.type))
      .map((b) => {
        const whole = Buffer.from(bytes.subarray(b.offset, b.offset + b.length));
        const payload = whole.subarray(4);
        return { type: b.type, id: payload.subarray(0, Math.max(0, payload.indexOf(0))).toString('latin1'), bytes: whole };
      });

  /** Where a camera writes MPF: after the JPEG's last APPn segment. */
  const afterLastApp = (bytes: Uint8Array) => {
    const last = jpeg.blocks(bytes).filter((b) => /^APP\d+$/.test(b.type)).at(-1)!;
    return last.offset + last.length;
  };
  const insert = (bytes: Buffer, ...segments: Buffer[]) => Buffer.concat([bytes.subarray(0, afterLastApp(bytes)), ...segments, bytes.subarray(afterLastApp(bytes))]);

  /**
   * An MPF APP2 segment (CIPA DC-007) indexing two images: the primary
   * (offset 0) and one stored after EOI, at `secondaryOffset` bytes from the
   * segment's TIFF header, as the standard counts.
   */
  function mpfSegment(primaryLength: number, secondaryLength: number, secondaryOffset: number): Buffer {
    const entry = (tag: number, type: number, count: number, value: Buffer) => Buffer.concat([Buffer.from([tag & 0xff, tag >> 8, type, 0]), u32le(count), value]);
    const ifd = Buffer.concat([
      Buffer.from([3, 0]),
      entry(0xb000, 7, 4, latin1('0100')),
      entry(0xb001, 4, 1, u32le(2)),
      entry(0xb002, 7, 32, u32le(8 + 2 + 3 * 12 + 4)),
      u32le(0),
    ]);
    const mpEntry = (attribute: number, size: number, offset: number) => Buffer.concat([u32le(attribute), u32le(size), u32le(offset), Buffer.alloc(4)]);
    const entries = Buffer.concat([mpEntry(0x20030000, primaryLength, 0), mpEntry(0x00010002, secondaryLength, secondaryOffset)]);
    return segment(0xe2, Buffer.concat([latin1('MPF\0II*\0'), u32le(8), ifd, entries]));
  }

  it('an MPF APP2 segment is dropped (with the image after EOI it indexes); the ICC_PROFILE APP2 and EXIF are kept byte for byte', async () => {
    // Offsets count from the segment's TIFF header (after FF E2, the length and "MPF\0"); the primary is the file up to its EOI.
    const tiffHeader = afterLastApp(primary) + 8;
    const primaryLength = primary.length + mpfSegment(0, 0, 0).length;
    const original = Buffer.concat([insert(primary, mpfSegment(primaryLength, secondary.length, primaryLength - tiffHeader)), secondary]);
    const before = appSegments(original);
    expect(before.map((s) => `${s.type}:${s.id}`)).toEqual(expect.arrayContaining(['APP1:Exif', 'APP2:ICC_PROFILE', 'APP2:MPF']));
    expect(jpeg.blocks(original).at(-1)!.type).toBe('trailer');

    const carried = Buffer.from(carryMetadata(original, await reencode(original)));
    const after = appSegments(carried);
    expect(after.filter((s) => s.type === 'APP2').map((s) => s.id)).toEqual(['ICC_PROFILE']);
    for (const id of ['ICC_PROFILE', 'Exif']) {
      expect(after.find((s) => s.id === id)!.bytes.equals(before.find((s) => s.id === id)!.bytes), id).toBe(true);
    }
    expect(jpeg.blocks(carried).some((b) => b.type === 'trailer')).toBe(false);
    const [m0, m1] = await Promise.all([sharp(original).metadata(), sharp(carried).metadata()]);
    expect(m1.icc?.equals(m0.icc!)).toBe(true);
    expect(m1.exif?.equals(m0.exif!)).toBe(true);
    expect(inspect(protect(carried).bytes).result.optedOut).toBe(true);
  });

  const CONTAINER = 'xmlns:Container="http://ns.google.com/photos/1.0/container/" xmlns:Item="http://ns.google.com/photos/1.0/container/item/"';
  const DIRECTORY =
    '<Container:Directory><rdf:Seq>' +
    '<rdf:li rdf:parseType="Resource"><Container:Item Item:Semantic="Primary" Item:Mime="image/jpeg"/></rdf:li>' +
    `<rdf:li rdf:parseType="Resource"><Container:Item Item:Semantic="MotionPhoto" Item:Mime="video/mp4" Item:Length="${secondary.length}"/></rdf:li>` +
    '</rdf:Seq></Container:Directory>';
  const description = (attributes: string, body = '') => `<rdf:Description rdf:about="" ${attributes}>${body}</rdf:Description>`;
  const CAMERA = 'xmlns:GCamera="http://ns.google.com/photos/1.0/camera/"';

  it.each([
    ['a Container:Directory (motion photo, Ultra HDR)', () => [xmpSegment(xmpPacket(description(`${CONTAINER} ${CAMERA} GCamera:MotionPhoto="1"`, DIRECTORY)))]],
    ['the older GCamera:MicroVideoOffset', () => [xmpSegment(xmpPacket(description(`${CAMERA} GCamera:MicroVideo="1" GCamera:MicroVideoOffset="${secondary.length}"`)))]],
    [
      'a Container:Directory in its Extended XMP',
      () => {
        const extended = Buffer.from(xmpPacket(description(CONTAINER, DIRECTORY)).replace(/<\?xpacket[^>]*>/g, ''), 'utf8');
        const guid = md5Guid(extended);
        const standard = xmpSegment(xmpPacket(description(`xmlns:xmpNote="http://ns.adobe.com/xmp/note/" xmpNote:HasExtendedXMP="${guid}"`)));
        return [standard, ...extensionSegments(extended, guid)];
      },
    ],
  ])('XMP that declares items after EOI by %s is dropped (standard and extended); ICC and EXIF are kept', async (_, segments) => {
    const original = Buffer.concat([insert(primary, ...segments()), secondary]);
    expect((await sharp(original).metadata()).xmp).toBeDefined();
    const carried = Buffer.from(carryMetadata(original, await reencode(original)));
    expect(jpeg.blocks(carried).filter((b) => b.kind === 'xmp')).toEqual([]);
    const [m0, m1] = await Promise.all([sharp(original).metadata(), sharp(carried).metadata()]);
    expect(m1.xmp).toBeUndefined();
    expect(m1.icc?.equals(m0.icc!)).toBe(true);
    expect(m1.exif?.equals(m0.exif!)).toBe(true);
    expect(inspect(protect(carried).bytes).result.optedOut).toBe(true);
  });

  it('XMP without a container is carried byte for byte, beside camera properties that point at nothing', async () => {
    const packet = xmpPacket(description(`${CAMERA} GCamera:MotionPhoto="0" xmlns:dc="http://purl.org/dc/elements/1.1/"`, '<dc:rights>kept</dc:rights>'));
    const original = insert(primary, xmpSegment(packet));
    const carried = Buffer.from(carryMetadata(original, await reencode(original)));
    expect((await sharp(carried).metadata()).xmp?.toString('utf8')).toBe(packet);
  });
});
