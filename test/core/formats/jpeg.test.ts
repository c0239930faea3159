import { describe, expect, it } from 'vitest';
import { inspect, protect } from '../../../src/index.js';
import { jpeg, JPEG_MAX_STANDARD_PACKET } from '../../../src/core/formats/jpeg.js';
import { parseXmp } from '../../../src/core/xmp/document.js';
import { extendedXmpGuid } from '../../../src/core/xmp/facts.js';
import { findProperty } from '../../../src/core/xmp/properties.js';
import { assembleExtendedXmp } from '../../../src/core/formats/extended-xmp.js';
import { AmbiguousXmpError, InvalidXmpError } from '../../../src/errors.js';
import type { Block } from '../../../src/core/formats/handler.js';
import { corpusFile } from '../../support/corpus.js';
import { generatedImages } from '../../support/generated.js';
import { afcpTrailer, bareXmp, enc, extensionSegment, extensionSegments, latin1, md5Guid, segment, withSegments, xmpPacket, xmpSegment } from '../../support/build.js';

const PLUS = 'http://ns.useplus.org/ldf/xmp/1.0/';
const NOTE = 'http://ns.adobe.com/xmp/note/';
const URI = 'http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED-AIMLTRAINING';
const images = Object.fromEntries((await generatedImages()).map((g) => [g.name, g.bytes]));
const plain = images['baseline.jpg']!; // SOI DQT DQT SOF0 DHT... no APPn

const types = (bytes: Uint8Array) => jpeg.blocks(bytes).map((b) => (b.kind === 'xmp' ? 'XMP' : b.type));

describe('JPEG: where the XMP segment goes', () => {
  it('goes right after SOI when there is no APP0 or Exif', () => {
    expect(types(protect(plain).bytes).slice(0, 3)).toEqual(['SOI', 'XMP', 'DQT']);
  });

  it('goes after APP0 and the Exif APP1, before ICC and the rest', () => {
    const app0 = segment(0xe0, Buffer.from('JFIF\0\x01\x02\0\0\x01\0\x01\0\0', 'latin1'));
    const input = withSegments(images['progressive-exif-icc.jpg']!, app0);
    expect(types(input).slice(0, 4)).toEqual(['SOI', 'APP0', 'APP1', 'APP2']);
    expect(types(protect(input).bytes).slice(0, 5)).toEqual(['SOI', 'APP0', 'APP1', 'XMP', 'APP2']);
  });

  it('takes the place of an existing XMP segment', () => {
    const input = corpusFile('exiftool/XMP.jpg').bytes;
    const before = types(input);
    expect(types(protect(input).bytes)).toEqual(before);
  });

  it('keeps fill bytes, restart markers and data after EOI', () => {
    const input = corpusFile('exiv2/smiley1.jpg').bytes; // 60-byte trailer after EOI
    const out = protect(input).bytes;
    expect(Buffer.from(out.subarray(out.length - 60)).equals(input.subarray(input.length - 60))).toBe(true);
    const dri = corpusFile('pillow/cmyk.jpg').bytes; // DRI: RSTn markers inside scan data
    expect(inspect(protect(dri).bytes).result.optedOut).toBe(true);
  });

  it('refuses to write into a file with two standard XMP segments, and reads the first', () => {
    const first = xmpPacket(`<rdf:Description xmlns:plus="${PLUS}" plus:DataMining="${URI}"/>`);
    const input = withSegments(plain, xmpSegment(first), xmpSegment(xmpPacket('')));
    expect(() => protect(input)).toThrow(AmbiguousXmpError);
    const read = inspect(input);
    expect(read.result.optedOut).toBe(true);
    expect(read.details.warnings[0]).toMatch(/2 standard XMP packets/);
  });

  it('accepts a space instead of NUL after the XMP signature', () => {
    const packet = xmpPacket(`<rdf:Description xmlns:plus="${PLUS}" plus:DataMining="${URI}"/>`);
    const input = withSegments(plain, segment(0xe1, Buffer.concat([Buffer.from('http://ns.adobe.com/xap/1.0/ ', 'latin1'), enc(packet)])));
    expect(inspect(input).result.optedOut).toBe(true);
  });
});

describe('JPEG: Extended XMP', () => {
  const extendedBody = (value: string) => enc(bareXmp(`<rdf:Description rdf:about="" xmlns:plus="${PLUS}"><plus:DataMining>${value}</plus:DataMining></rdf:Description>`));
  const standardFor = (guid: string) => xmpPacket(`<rdf:Description rdf:about="" xmlns:xmpNote="${NOTE}" xmpNote:HasExtendedXMP="${guid}"/>`);

  it('reads a value that only Extended XMP holds, chunks in any order', () => {
    const body = Buffer.concat([extendedBody(URI), enc(' '.repeat(200))]);
    const guid = md5Guid(body);
    const chunks = extensionSegments(body, guid, 97);
    expect(chunks.length).toBeGreaterThan(4);
    const shuffled = [chunks[2]!, xmpSegment(standardFor(guid)), chunks[0]!, ...chunks.slice(3).reverse(), chunks[1]!];
    const read = inspect(withSegments(plain, ...shuffled));
    expect(read.result.optedOut).toBe(true);
    expect(read.details.dataMining).toMatchObject([{ value: URI, extended: true }]);
  });

  it('refuses overlapping Extended XMP chunks', () => {
    const body = extendedBody(URI);
    const guid = md5Guid(body);
    const chunks = extensionSegments(body, guid, 97);
    expect(() => inspect(withSegments(plain, xmpSegment(standardFor(guid)), ...chunks, chunks[1]!))).toThrow(/overlap/);
  });

  it('reads the corpus files whose Extended XMP comes before the standard packet', () => {
    expect(inspect(corpusFile('exiftool/ExtendedXMP.jpg').bytes).details.warnings).toEqual([]);
    expect(inspect(corpusFile('exifr/xmp-depth-map.jpg').bytes).details.format).toBe('jpeg');
  });

  it('validates the Extended XMP like Skia does', () => {
    const body = extendedBody(URI);
    const guid = md5Guid(body);
    const half = Math.floor(body.length / 2);
    const cases: Array<[string, Buffer, RegExp]> = [
      ['wrong MD5', withSegments(plain, xmpSegment(standardFor(md5Guid(enc('other')))), ...extensionSegments(body, md5Guid(enc('other')))), /MD5/],
      ['a gap', withSegments(plain, xmpSegment(standardFor(guid)), extensionSegment(guid, body.length, 0, body.subarray(0, half)), extensionSegment(guid, body.length, half + 5, body.subarray(half + 5))), /missing bytes/],
      ['lengths that disagree', withSegments(plain, xmpSegment(standardFor(guid)), extensionSegment(guid, body.length, 0, body.subarray(0, half)), extensionSegment(guid, body.length + 1, half, body.subarray(half))), /disagree/],
      ['a chunk past the declared length', withSegments(plain, xmpSegment(standardFor(guid)), extensionSegment(guid, 10, 0, body)), /past the declared length/],
      ['no segment at all', withSegments(plain, xmpSegment(standardFor(guid))), /no segment carries it/],
      ['a malformed GUID', withSegments(plain, xmpSegment(standardFor('not-a-guid')), ...extensionSegments(body)), /32-digit uppercase hex/],
      ['a truncated extension header', withSegments(plain, xmpSegment(standardFor(guid)), segment(0xe1, Buffer.from('http://ns.adobe.com/xmp/extension/\0ABC', 'latin1'))), /shorter than its 75-byte header/],
    ];
    for (const [, input, message] of cases) {
      expect(() => inspect(input)).toThrow(InvalidXmpError);
      expect(() => inspect(input)).toThrow(message);
    }
  });

  it('puts the standard packet before every Extended XMP segment, moving earlier ones behind it byte for byte', () => {
    const isStandard = (bytes: Uint8Array, b: Block) => Buffer.from(bytes.subarray(b.offset + 4, b.offset + 33)).toString('latin1') === 'http://ns.adobe.com/xap/1.0/\0';
    const xmpOrder = (bytes: Uint8Array) => jpeg.blocks(bytes).filter((b) => b.kind === 'xmp').map((b) => (isStandard(bytes, b) ? 'standard' : 'extension'));
    const segments = (bytes: Uint8Array) => jpeg.blocks(bytes).filter((b) => b.kind === 'xmp' && !isStandard(bytes, b)).map((b) => Buffer.from(bytes.subarray(b.offset, b.offset + b.length)));

    // ExifTool's ExtendedXMP.jpg: the extension first; libvips takes that one for the file's XMP.
    const input = corpusFile('exiftool/ExtendedXMP.jpg').bytes;
    expect(xmpOrder(input)).toEqual(['extension', 'standard', 'extension']);
    const out = protect(input).bytes;
    expect(xmpOrder(out)).toEqual(['standard', 'extension', 'extension']);
    expect(segments(out)).toEqual(segments(input));
    expect(inspect(out).details.warnings).toEqual([]);

    // A stray extension of another GUID before an existing packet moves too; one after it stays where it is.
    const stray = extensionSegments(extendedBody('x'))[0]!;
    const other = extensionSegments(extendedBody('y'))[0]!;
    const mixed = protect(withSegments(plain, stray, xmpSegment(xmpPacket('')), other)).bytes;
    expect(xmpOrder(mixed)).toEqual(['standard', 'extension', 'extension']);
    expect(segments(mixed)).toEqual([stray, other]);
  });

  it('ignores extension segments of another GUID and keeps them byte for byte', () => {
    const stray = extensionSegments(extendedBody('x'))[0]!;
    const input = withSegments(plain, stray);
    const out = protect(input).bytes;
    expect(Buffer.from(out).includes(stray)).toBe(true);
    expect(inspect(out).result.optedOut).toBe(true);
  });

  it('moves the value out of Extended XMP into the standard packet and renames the extension', () => {
    const body = Buffer.concat([extendedBody('http://ns.useplus.org/ldf/vocab/DMI-ALLOWED').subarray(0, -('</rdf:RDF></x:xmpmeta>'.length)), enc(`<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:source>${'s'.repeat(70000)}</dc:source></rdf:Description></rdf:RDF></x:xmpmeta>`)]);
    const guid = md5Guid(body);
    const input = withSegments(plain, xmpSegment(standardFor(guid)), ...extensionSegments(body, guid));
    const out = protect(input).bytes;
    const raw = jpeg.readXmp(out);
    const standard = parseXmp(raw.packets[0]!.text);
    const newGuid = extendedXmpGuid(standard)!;
    expect(newGuid).not.toBe(guid);
    const extended = parseXmp(Buffer.from(assembleExtendedXmp(raw.extendedChunks, newGuid)).toString('utf8'));
    expect(findProperty(extended, PLUS, 'DataMining')).toEqual([]);
    expect(findProperty(extended, 'http://purl.org/dc/elements/1.1/', 'source')[0]!.value).toHaveLength(70000);
    expect(raw.extendedChunks.every((c) => c.guid === newGuid)).toBe(true);
    expect(inspect(out).details.dataMining).toMatchObject([{ value: URI, extended: false }]);
  });

  it('spills the largest properties into Extended XMP when the merged packet no longer fits one segment', () => {
    // A standard packet that fits as given (64,950 bytes) but not with DataMining added.
    const filler = (n: number) => 'x'.repeat(n);
    const make = (size: number) =>
      xmpPacket(
        `<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:my="urn:my#" my:note="kept as an attribute">` +
          `<dc:description><rdf:Alt><rdf:li xml:lang="x-default">${filler(size)}</rdf:li></rdf:Alt></dc:description>` +
          `<dc:format>image/jpeg</dc:format></rdf:Description>`,
      );
    const base = Buffer.byteLength(make(0));
    const packet = make(64950 - base);
    expect(Buffer.byteLength(packet)).toBe(64950);
    const input = withSegments(plain, xmpSegment(packet));

    const out = protect(input).bytes;
    const raw = jpeg.readXmp(out);
    expect(raw.packets).toHaveLength(1);
    expect(Buffer.byteLength(raw.packets[0]!.text)).toBeLessThanOrEqual(JPEG_MAX_STANDARD_PACKET);
    const standard = parseXmp(raw.packets[0]!.text);
    const guid = extendedXmpGuid(standard)!;
    const extended = parseXmp(Buffer.from(assembleExtendedXmp(raw.extendedChunks, guid)).toString('utf8'));
    // DataMining and the small properties stay; the big one moved whole.
    expect(findProperty(standard, PLUS, 'DataMining')[0]!.value).toBe(URI);
    expect(findProperty(standard, 'http://purl.org/dc/elements/1.1/', 'format')[0]!.value).toBe('image/jpeg');
    expect(findProperty(standard, 'urn:my#', 'note')[0]!.value).toBe('kept as an attribute');
    expect(findProperty(standard, 'http://purl.org/dc/elements/1.1/', 'description')).toEqual([]);
    const moved = findProperty(extended, 'http://purl.org/dc/elements/1.1/', 'description')[0]!;
    expect(moved.node.end - moved.node.start).toBeGreaterThan(64000);
    // Writing again changes nothing.
    expect(Buffer.from(protect(out).bytes).equals(Buffer.from(out))).toBe(true);
    expect(inspect(out).result.optedOut).toBe(true);
  });
});

describe('JPEG: an AFCP trailer after EOI', () => {
  const ITEMS = [
    { tag: 'IPTC', data: Buffer.from([0x1c, 0x02, 0x00, 0x00, 0x02, 0x00, 0x04, 0x1c, 0x02, 0x78, 0x00, 0x04, 0x74, 0x65, 0x73, 0x74]) },
    { tag: 'TEXT', data: latin1('a note in the trailer') },
  ];

  /** The AFCP at the end of `bytes`, read by its recorded offsets alone: what a reader that trusts them finds. */
  function readAfcp(bytes: Uint8Array, littleEndian = false) {
    const b = Buffer.from(bytes);
    const u32 = (at: number) => (littleEndian ? b.readUInt32LE(at) : b.readUInt32BE(at));
    const end = b.length - 12;
    const start = u32(end + 4);
    if (b.toString('latin1', start, start + 3) !== 'AXS') return { start, headerFound: false, items: [] };
    const count = littleEndian ? b.readUInt16LE(start + 6) : b.readUInt16BE(start + 6);
    const items = Array.from({ length: count }, (_, i) => {
      const entry = start + 12 + 12 * i;
      return { tag: b.toString('latin1', entry, entry + 4), data: b.subarray(u32(entry + 8), u32(entry + 8) + u32(entry + 4)) };
    });
    return { start, headerFound: true, items };
  }

  const withAfcp = (jpegBytes: Uint8Array, options?: { littleEndian?: boolean; off?: number }) =>
    Buffer.concat([jpegBytes, afcpTrailer(jpegBytes.length, ITEMS, { littleEndian: options?.littleEndian, recordedStart: jpegBytes.length + (options?.off ?? 0) })]);

  it.each([false, true])('moves its offsets with the trailer (little-endian: %s), and no other byte after EOI', (littleEndian) => {
    const input = withAfcp(plain, { littleEndian });
    expect(readAfcp(input, littleEndian)).toMatchObject({ start: plain.length, headerFound: true, items: ITEMS });
    const out = protect(input).bytes;
    const shift = out.length - input.length;
    expect(shift).toBeGreaterThan(0);
    expect(readAfcp(out, littleEndian)).toMatchObject({ start: plain.length + shift, headerFound: true, items: ITEMS });

    // Exactly three fields changed (the end record's start and the two data offsets), each by the shift.
    const before = input.subarray(plain.length);
    const after = Buffer.from(out).subarray(out.length - before.length);
    const fields = [20, 32, before.length - 8];
    const changed = [...before.keys()].filter((i) => before[i] !== after[i]);
    expect(changed.length).toBeGreaterThan(0);
    expect(changed.filter((i) => !fields.some((at) => i >= at && i < at + 4))).toEqual([]);
    for (const at of fields) {
      const read = (buf: Buffer) => (littleEndian ? buf.readUInt32LE(at) : buf.readUInt32BE(at));
      expect(read(after) - read(before)).toBe(shift);
    }
    // The fields are the blocks that may change; writing again changes nothing.
    expect(jpeg.blocks(out).filter((b) => b.kind === 'header').map((b) => b.offset - (out.length - before.length))).toEqual(fields);
    expect(Buffer.from(protect(out).bytes).equals(Buffer.from(out))).toBe(true);
  });

  it('corrects offsets that were already off, as ExifTool does', () => {
    const input = withAfcp(plain, { off: -9 });
    expect(readAfcp(input).headerFound).toBe(false);
    const out = protect(input).bytes;
    expect(readAfcp(out)).toMatchObject({ start: plain.length + out.length - input.length, headerFound: true, items: ITEMS });
  });

  it('leaves an "AXS!" that is not an AFCP trailer alone', () => {
    const fake = Buffer.concat([latin1('AXS!'), Buffer.from([0, 0, 0, 4]), Buffer.alloc(4), latin1('AXS!'), Buffer.from([0, 1, 0, 1]), Buffer.alloc(4)]);
    const input = Buffer.concat([plain, fake]);
    const out = protect(input).bytes;
    expect(Buffer.from(out.subarray(out.length - fake.length)).equals(fake)).toBe(true);
    expect(jpeg.blocks(input).filter((b) => b.kind === 'header')).toEqual([]);
  });
});
