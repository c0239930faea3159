/**
 * Seed files taken apart into their container structure and put back
 * together, so that mutations act on segments and chunks instead of raw
 * bytes. Parsing is lenient (seeds are valid files; anything odd ends up in a
 * tail kept as is). Serialising writes whatever the structure says, lies
 * included: a length, size or CRC set on an item wins over the real one.
 */
import { crc32 } from '../../src/core/bytes/digest.js';
import { chunk, latin1, segment, u32le } from '../support/build.js';

export type Format = 'jpeg' | 'png' | 'webp';

/** `[marker, length, payload]`; `length` unset means the true one. */
export interface JpegSegment {
  marker: number;
  payload: Buffer;
  length?: number;
  /** RSTn and TEM: a marker with no length field. */
  standalone?: boolean;
}

/** Segments up to and including the first SOS; the scan data, EOI and any trailer stay one tail. */
export interface JpegParts {
  readonly format: 'jpeg';
  segments: JpegSegment[];
  tail: Buffer;
}

/** `[length, type, data, crc]`; `crc` is the stored one, `crcLie` one a mutation forced. */
export interface PngChunk {
  type: string;
  data: Buffer;
  crc: number;
  length?: number;
  crcLie?: number;
}

export interface PngParts {
  readonly format: 'png';
  signature: Buffer;
  chunks: PngChunk[];
  /** Bytes after IEND. */
  trailer: Buffer;
}

/** `[fourcc, size, data, pad]`; `pad` unset means one zero byte after odd data. */
export interface RiffChunk {
  fourcc: string;
  data: Buffer;
  size?: number;
  pad?: Buffer;
}

export interface WebpParts {
  readonly format: 'webp';
  riffSize?: number;
  form: string;
  chunks: RiffChunk[];
  /** Bytes past the last whole chunk. */
  trailing: Buffer;
}

export type Parts = JpegParts | PngParts | WebpParts;

export function formatOf(bytes: Uint8Array): Format | undefined {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (b[0] === 0xff && b[1] === 0xd8) return 'jpeg';
  if (b.subarray(1, 4).toString('latin1') === 'PNG') return 'png';
  if (b.subarray(0, 4).toString('latin1') === 'RIFF') return 'webp';
  return undefined;
}

export function parse(bytes: Buffer): Parts {
  const format = formatOf(bytes);
  if (format === 'jpeg') return parseJpeg(bytes);
  if (format === 'png') return parsePng(bytes);
  if (format === 'webp') return parseWebp(bytes);
  throw new Error('not a JPEG, PNG or WebP seed');
}

export function serialise(parts: Parts, options: { fixCrc: boolean } = { fixCrc: true }): Buffer {
  if (parts.format === 'jpeg') return serialiseJpeg(parts);
  if (parts.format === 'png') return serialisePng(parts, options.fixCrc);
  return serialiseWebp(parts);
}

/**
 * A copy whose item lists and items may be edited in place. Byte buffers
 * are shared: a mutation that changes bytes replaces the buffer with a new one.
 */
export function clone<P extends Parts>(parts: P): P {
  const copy = { ...parts } as Parts;
  if (copy.format === 'jpeg') copy.segments = copy.segments.map((s) => ({ ...s }));
  else copy.chunks = copy.chunks.map((c) => ({ ...c })) as never;
  return copy as P;
}

function parseJpeg(bytes: Buffer): JpegParts {
  const segments: JpegSegment[] = [];
  let pos = 2;
  while (pos + 1 < bytes.length && bytes[pos] === 0xff) {
    let at = pos + 1;
    while (at < bytes.length && bytes[at] === 0xff) at++;
    const marker = bytes[at]!;
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      segments.push({ marker, payload: Buffer.alloc(0), standalone: true });
      pos = at + 1;
      continue;
    }
    if (marker === 0xd9 || at + 3 > bytes.length) break;
    const length = bytes.readUInt16BE(at + 1);
    if (length < 2 || at + 1 + length > bytes.length) break;
    segments.push({ marker, payload: Buffer.from(bytes.subarray(at + 3, at + 1 + length)) });
    pos = at + 1 + length;
    if (marker === 0xda) break;
  }
  return { format: 'jpeg', segments, tail: Buffer.from(bytes.subarray(pos)) };
}

function serialiseJpeg(parts: JpegParts): Buffer {
  const pieces: Buffer[] = [Buffer.from([0xff, 0xd8])];
  for (const s of parts.segments) {
    pieces.push(s.standalone ? Buffer.from([0xff, s.marker]) : segment(s.marker, s.payload, s.length));
  }
  pieces.push(parts.tail);
  return Buffer.concat(pieces);
}

function parsePng(bytes: Buffer): PngParts {
  const chunks: PngChunk[] = [];
  let pos = 8;
  while (pos + 12 <= bytes.length) {
    const length = bytes.readUInt32BE(pos);
    if (pos + 12 + length > bytes.length) break;
    const type = bytes.subarray(pos + 4, pos + 8).toString('latin1');
    const data = Buffer.from(bytes.subarray(pos + 8, pos + 8 + length));
    chunks.push({ type, data, crc: bytes.readUInt32BE(pos + 8 + length) });
    pos += 12 + length;
    if (type === 'IEND') break;
  }
  return { format: 'png', signature: Buffer.from(bytes.subarray(0, 8)), chunks, trailer: Buffer.from(bytes.subarray(pos)) };
}

function serialisePng(parts: PngParts, fixCrc: boolean): Buffer {
  const pieces: Buffer[] = [parts.signature];
  for (const c of parts.chunks) {
    // No CRC given to chunk() means the right one.
    pieces.push(chunk(c.type, c.data, c.crcLie ?? (fixCrc ? undefined : c.crc), c.length ?? c.data.length));
  }
  pieces.push(parts.trailer);
  return Buffer.concat(pieces);
}

/** A chunk whose stored CRC is right, for chunks a mutation makes up. */
export function pngChunk(type: string, data: Buffer): PngChunk {
  return { type, data, crc: crc32(Buffer.concat([latin1(type), data])) };
}

function parseWebp(bytes: Buffer): WebpParts {
  const chunks: RiffChunk[] = [];
  let pos = 12;
  while (pos + 8 <= bytes.length) {
    const size = bytes.readUInt32LE(pos + 4);
    const padded = size + (size & 1);
    if (pos + 8 + padded > bytes.length) break;
    chunks.push({ fourcc: bytes.subarray(pos, pos + 4).toString('latin1'), data: Buffer.from(bytes.subarray(pos + 8, pos + 8 + size)) });
    pos += 8 + padded;
  }
  return { format: 'webp', form: bytes.subarray(8, 12).toString('latin1'), chunks, trailing: Buffer.from(bytes.subarray(pos)) };
}

function serialiseWebp(parts: WebpParts): Buffer {
  const body: Buffer[] = [latin1(parts.form)];
  for (const c of parts.chunks) {
    const pad = c.pad ?? (c.data.length % 2 ? Buffer.alloc(1) : Buffer.alloc(0));
    body.push(latin1(c.fourcc), u32le(c.size ?? c.data.length), c.data, pad);
  }
  body.push(parts.trailing);
  const content = Buffer.concat(body);
  return Buffer.concat([latin1('RIFF'), u32le(parts.riffSize ?? content.length), content]);
}
