/**
 * Byte builders for hand-made container files: hostile inputs and layouts
 * no encoder produces. Each test says what its bytes guard against.
 */
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { crc32 } from '../../src/core/bytes/digest.js';
import { jpegFrameHeaderAt } from '../../src/core/formats/dimensions.js';

export const enc = (text: string): Buffer => Buffer.from(text, 'utf8');
export const latin1 = (text: string): Buffer => Buffer.from(text, 'latin1');

export function u16be(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n & 0xffff);
  return b;
}

export function u32be(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

export function u32le(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
}

/** A JPEG marker segment: FF marker, u16 length (counting itself), payload. */
export function segment(marker: number, payload: Uint8Array, declaredLength = payload.length + 2): Buffer {
  return Buffer.concat([Buffer.from([0xff, marker]), u16be(declaredLength), payload]);
}

export const XMP_SIGNATURE = 'http://ns.adobe.com/xap/1.0/\0';
export const EXTENSION_SIGNATURE = 'http://ns.adobe.com/xmp/extension/\0';

export function xmpSegment(packet: string): Buffer {
  return segment(0xe1, Buffer.concat([latin1(XMP_SIGNATURE), enc(packet)]));
}

export function md5Guid(data: Uint8Array): string {
  return createHash('md5').update(data).digest('hex').toUpperCase();
}

/** Extended XMP segments for `data`, split every `chunk` bytes; `order` permutes them. */
export function extensionSegments(data: Buffer, guid = md5Guid(data), chunk = 65458, fullLength = data.length): Buffer[] {
  const out: Buffer[] = [];
  for (let offset = 0; offset < data.length; offset += chunk) {
    out.push(extensionSegment(guid, fullLength, offset, data.subarray(offset, offset + chunk)));
  }
  return out;
}

export function extensionSegment(guid: string, fullLength: number, offset: number, data: Uint8Array): Buffer {
  return segment(0xe1, Buffer.concat([latin1(EXTENSION_SIGNATURE), latin1(guid), u32be(fullLength), u32be(offset), data]));
}

/** Insert segments into a JPEG right after SOI. */
export function withSegments(jpeg: Uint8Array, ...segments: Uint8Array[]): Buffer {
  return Buffer.concat([jpeg.subarray(0, 2), ...segments, jpeg.subarray(2)]);
}

/** A PNG chunk with a correct CRC (or the given one). */
export function chunk(type: string, data: Uint8Array, crc?: number, declaredLength = data.length): Buffer {
  const body = Buffer.concat([latin1(type), data]);
  return Buffer.concat([u32be(declaredLength), body, u32be(crc ?? crc32(body))]);
}

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Split a PNG into [signature+IHDR, rest] so chunks can be placed after IHDR. */
export function afterIhdr(png: Uint8Array): [Buffer, Buffer] {
  const cut = 8 + 8 + 13 + 4;
  return [Buffer.from(png.subarray(0, cut)), Buffer.from(png.subarray(cut))];
}

/** A RIFF/WEBP file from chunks; `size` overrides the RIFF size field. */
export function riff(chunks: Buffer[], size?: number): Buffer {
  const body = Buffer.concat(chunks);
  return Buffer.concat([latin1('RIFF'), u32le(size ?? body.length + 4), latin1('WEBP'), body]);
}

export function riffChunk(fourcc: string, payload: Uint8Array, declared = payload.length): Buffer {
  const pad = payload.length % 2 ? Buffer.alloc(1) : Buffer.alloc(0);
  return Buffer.concat([latin1(fourcc), u32le(declared), payload, pad]);
}

export function xmpPacket(descriptions: string): string {
  return (
    `<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/">` +
    `<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">${descriptions}</rdf:RDF></x:xmpmeta><?xpacket end="w"?>`
  );
}

export function bareXmp(descriptions: string): string {
  return `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">${descriptions}</rdf:RDF></x:xmpmeta>`;
}

/** A real 1-bit greyscale PNG of width x height, all black: a few KB compressed, width * height pixels decoded (a pixel bomb). */
export function blackPng(width: number, height: number): Buffer {
  const raw = Buffer.alloc((1 + Math.ceil(width / 8)) * height);
  const ihdr = Buffer.concat([u32be(width), u32be(height), Buffer.from([1, 0, 0, 0, 0])]);
  return Buffer.concat([PNG_SIGNATURE, chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw, { level: 9 })), chunk('IEND', Buffer.alloc(0))]);
}

/** A 68-byte PNG whose header declares width x height (8-bit RGB) and whose IDAT holds 3 bytes: a header and next to nothing else. */
export function headerOnlyPng(width: number, height: number): Buffer {
  const ihdr = Buffer.concat([u32be(width), u32be(height), Buffer.from([8, 2, 0, 0, 0])]);
  return Buffer.concat([PNG_SIGNATURE, chunk('IHDR', ihdr), chunk('IDAT', deflateSync(Buffer.alloc(3))), chunk('IEND', Buffer.alloc(0))]);
}

/** A copy of a JPEG whose (first) frame header declares width x height; the scan is left as it is. */
export function jpegWithFrameSize(jpeg: Uint8Array, width: number, height: number): Buffer {
  const copy = Buffer.from(jpeg);
  const sof = jpegFrameHeaderAt(copy);
  if (sof === undefined) throw new Error('no frame header in this JPEG');
  copy.writeUInt16BE(height, sof + 5);
  copy.writeUInt16BE(width, sof + 7);
  return copy;
}

/**
 * A progressive JPEG header for `width` x `height`, three components at
 * `sampling` (luma) and 1x1 (chroma), with `scans` scan headers over the luma
 * alone, each followed by one byte of entropy-coded data: the shape of a scan
 * bomb, which only the container walk needs to be sound.
 */
export function progressiveHeaders(width: number, height: number, scans: number, sampling = 0x22): Buffer {
  const sof = Buffer.from([8, ...u16be(height), ...u16be(width), 3, 1, sampling, 0, 2, 0x11, 0, 3, 0x11, 0]);
  const parts = [Buffer.from([0xff, 0xd8]), segment(0xdb, Buffer.alloc(65)), segment(0xc2, sof)];
  // The first scan: DC of all three components (interleaved).
  parts.push(segment(0xda, Buffer.from([3, 1, 0, 2, 0, 3, 0, 0, 0, 0])), Buffer.from([0]));
  for (let i = 1; i < scans; i++) parts.push(segment(0xda, Buffer.from([1, 1, 0, 1, 63, 0])), Buffer.from([0]));
  parts.push(Buffer.from([0xff, 0xd9]));
  return Buffer.concat(parts);
}

/**
 * An AFCP trailer (header, directory, data, end record) that starts at
 * absolute offset `start` of its file, as the AFCP layout in
 * src/core/formats/afcp.ts describes it; `recordedStart` lets a test store
 * offsets that are off, as an editor unaware of AFCP leaves them.
 */
export function afcpTrailer(start: number, items: ReadonlyArray<{ tag: string; data: Uint8Array }>, options: { littleEndian?: boolean; recordedStart?: number } = {}): Buffer {
  const le = options.littleEndian ?? false;
  const recorded = options.recordedStart ?? start;
  const u16 = (n: number) => (le ? Buffer.from([n & 0xff, n >> 8]) : u16be(n));
  const u32 = (n: number) => (le ? u32le(n) : u32be(n));
  const signature = latin1(le ? 'AXS*' : 'AXS!');
  let dataAt = recorded + 12 + 12 * items.length;
  const directory = items.map(({ tag, data }) => {
    const entry = Buffer.concat([latin1(tag), u32(data.length), u32(dataAt)]);
    dataAt += data.length;
    return entry;
  });
  return Buffer.concat([signature, u16(1), u16(items.length), u32(0), ...directory, ...items.map((i) => i.data), signature, u32(recorded), u32(0)]);
}

/**
 * A PNG (8 x 8, real pixels) whose XMP is about `bytes` of ordinary markup:
 * keywords, one element each, the costliest kind of packet to parse per
 * byte that no rule refuses before the end. With `broken`, its last element
 * is never closed, so the whole packet is read before it is refused
 * (invalid_xmp): what a hostile client sends to have the server work for
 * nothing.
 */
export function pngWithLongXmp(bytes: number, broken: boolean): Buffer {
  const ihdr = Buffer.concat([u32be(8), u32be(8), Buffer.from([8, 2, 0, 0, 0])]);
  const png = Buffer.concat([PNG_SIGNATURE, chunk('IHDR', ihdr), chunk('IDAT', deflateSync(Buffer.alloc(8 * (1 + 8 * 3), 0x40))), chunk('IEND', Buffer.alloc(0))]);
  const item = '<rdf:li>keyword</rdf:li>';
  const items = item.repeat(Math.max(1, Math.floor(bytes / item.length)));
  const packet = xmpPacket(
    `<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:subject><rdf:Bag>${items}${broken ? '<rdf:li>' : ''}</rdf:Bag></dc:subject></rdf:Description>`,
  );
  const [head, tail] = afterIhdr(png);
  return Buffer.concat([head, chunk('iTXt', Buffer.concat([latin1('XML:com.adobe.xmp\0\0\0\0\0'), enc(packet)])), tail]);
}
