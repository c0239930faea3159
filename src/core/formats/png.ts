/**
 * PNG container handler.
 *
 * Layout (PNG spec, 5.3): 8-byte signature, then chunks of u32 BE data length,
 * 4-byte type, data, u32 BE CRC-32 over type + data. IHDR first, IEND last;
 * anything after IEND is kept as a `trailer` block.
 *
 * XMP (XMP Specification Part 3, 1.1.5): an `iTXt` chunk with keyword
 * `XML:com.adobe.xmp`, compression flag 0, empty language and translated
 * keyword. We write exactly that, right after IHDR (where Adobe's toolkit and
 * exiv2 put it; always legal, APNG included). We also read what other tools
 * write: compressed iTXt, zTXt and tEXt with the same keyword, before or after
 * IDAT.
 */
import { inflateSync } from 'node:zlib';
import { InvalidXmpError } from '../../errors.js';
import { assemble, decodeXmpText, utf8, views, type Piece } from '../bytes/assemble.js';
import { crc32 } from '../bytes/digest.js';
import { ByteView, startsWithAt } from '../bytes/view.js';
import { defineHandler, MAX_XMP_BYTES, type Block, type ContainerHandler, type RawXmp, type RawXmpPacket } from './handler.js';

export const PNG_SIGNATURE = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
export const PNG_XMP_KEYWORD = 'XML:com.adobe.xmp';
/** Keyword, NUL, compression flag 0, method 0, empty language tag + NUL, empty translated keyword + NUL. */
const ITXT_XMP_HEADER = `${PNG_XMP_KEYWORD}\0\0\0\0\0`;
const XMP_TEXT_TYPES = new Set(['iTXt', 'zTXt', 'tEXt']);
/** The spec caps chunk data at 2^31 - 1 bytes. */
const MAX_CHUNK_LENGTH = 0x7fffffff;
/** Bounds the work and memory a hostile file of tiny chunks can cause. */
const MAX_CHUNKS = 200_000;

/** Valid (colour type -> bit depths) pairs, PNG spec table 11.1. */
const BIT_DEPTHS: Record<number, readonly number[]> = {
  0: [1, 2, 4, 8, 16],
  2: [8, 16],
  3: [1, 2, 4, 8],
  4: [8, 16],
  6: [8, 16],
};

interface Chunk extends Block {
  readonly dataStart: number;
  readonly dataLength: number;
}

interface PngLayout {
  readonly blocks: Block[];
  readonly chunks: Chunk[];
  readonly firstIdat: number;
}

function isLetter(byte: number): boolean {
  return (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a);
}

/** True when the chunk is a text chunk whose keyword is the XMP keyword. */
function isXmpChunk(bytes: Uint8Array, type: string, dataStart: number, dataLength: number): boolean {
  return (
    XMP_TEXT_TYPES.has(type) &&
    dataLength > PNG_XMP_KEYWORD.length &&
    startsWithAt(bytes, dataStart, PNG_XMP_KEYWORD) &&
    bytes[dataStart + PNG_XMP_KEYWORD.length] === 0
  );
}

function scan(bytes: Uint8Array): PngLayout {
  const view = new ByteView(bytes, 'png');
  for (let i = 0; i < PNG_SIGNATURE.length; i++) {
    if (bytes[i] !== PNG_SIGNATURE[i]) {
      throw view.corrupt('damaged PNG signature (typical of a file sent through a text-mode transfer)');
    }
  }
  const blocks: Block[] = [{ kind: 'other', type: 'signature', offset: 0, length: 8 }];
  const chunks: Chunk[] = [];
  let pos = 8;
  let firstIdat = -1;
  let ended = false;
  while (!ended) {
    if (chunks.length >= MAX_CHUNKS) throw view.corrupt(`more than ${MAX_CHUNKS} chunks`);
    if (pos >= bytes.length) throw view.corrupt('the file ends before the IEND chunk (truncated?)');
    const dataLength = view.u32be(pos, 'chunk length');
    const type = view.ascii(pos + 4, 4, 'chunk type');
    if (!(isLetter(bytes[pos + 4]!) && isLetter(bytes[pos + 5]!) && isLetter(bytes[pos + 6]!) && isLetter(bytes[pos + 7]!))) {
      throw view.corrupt(`invalid chunk type ${JSON.stringify(type)} at offset ${pos}`);
    }
    if (dataLength > MAX_CHUNK_LENGTH) throw view.corrupt(`chunk ${type} at offset ${pos} declares ${dataLength} bytes`);
    view.need(pos + 8, dataLength + 4, `chunk ${type} at offset ${pos}`);
    const dataStart = pos + 8;
    const stored = view.u32be(dataStart + dataLength, `${type} CRC`);
    const computed = crc32(bytes.subarray(pos + 4, dataStart + dataLength));
    if (stored !== computed) {
      throw view.corrupt(`CRC error in chunk ${type} at offset ${pos} (stored ${hex32(stored)}, computed ${hex32(computed)})`);
    }
    if (chunks.length === 0 && type !== 'IHDR') throw view.corrupt(`the first chunk is ${type}, not IHDR`);
    if (type === 'IHDR') {
      if (chunks.length > 0) throw view.corrupt('a second IHDR chunk');
      checkHeader(view, dataStart, dataLength);
    }
    if (type === 'IDAT' && firstIdat < 0) firstIdat = chunks.length;
    if (type === 'IEND') {
      if (firstIdat < 0) throw view.corrupt('no IDAT chunk: the file holds no image data');
      ended = true;
    }
    const kind = isXmpChunk(bytes, type, dataStart, dataLength) ? 'xmp' : 'other';
    const chunk: Chunk = { kind, type, offset: pos, length: dataLength + 12, dataStart, dataLength };
    chunks.push(chunk);
    blocks.push(chunk);
    pos = dataStart + dataLength + 4;
  }
  if (pos < bytes.length) blocks.push({ kind: 'other', type: 'trailer', offset: pos, length: bytes.length - pos });
  return { blocks, chunks, firstIdat };
}

function checkHeader(view: ByteView, start: number, length: number): void {
  if (length !== 13) throw view.corrupt(`IHDR is ${length} bytes, not 13`);
  const width = view.u32be(start, 'IHDR width');
  const height = view.u32be(start + 4, 'IHDR height');
  const depth = view.u8(start + 8, 'IHDR bit depth');
  const colour = view.u8(start + 9, 'IHDR colour type');
  if (width === 0 || height === 0 || width > MAX_CHUNK_LENGTH || height > MAX_CHUNK_LENGTH) {
    throw view.corrupt(`invalid image size ${width}x${height}`);
  }
  const depths = BIT_DEPTHS[colour];
  if (!depths) throw view.corrupt(`invalid colour type ${colour}`);
  if (!depths.includes(depth)) throw view.corrupt(`invalid bit depth ${depth} for colour type ${colour}`);
  if (view.u8(start + 10, 'IHDR compression') !== 0) throw view.corrupt('unknown compression method');
  if (view.u8(start + 11, 'IHDR filter') !== 0) throw view.corrupt('unknown filter method');
  if (view.u8(start + 12, 'IHDR interlace') > 1) throw view.corrupt('unknown interlace method');
}

function hex32(n: number): string {
  return n.toString(16).padStart(8, '0');
}

function inflateXmp(data: Uint8Array, where: string): Uint8Array {
  try {
    return inflateSync(data, { maxOutputLength: MAX_XMP_BYTES });
  } catch (error) {
    const tooBig = (error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE';
    throw new InvalidXmpError(
      tooBig ? `compressed XMP in ${where} inflates to more than ${MAX_XMP_BYTES} bytes` : `compressed XMP in ${where} does not inflate`,
      { cause: error },
    );
  }
}

/** Decode the XMP text of one iTXt/zTXt/tEXt chunk whose keyword is the XMP keyword. */
function readPacket(bytes: Uint8Array, chunk: Chunk): RawXmpPacket {
  const where = `${chunk.type} at offset ${chunk.offset}`;
  const end = chunk.dataStart + chunk.dataLength;
  let at = chunk.dataStart + PNG_XMP_KEYWORD.length + 1;
  let payload: Uint8Array;
  if (chunk.type === 'tEXt') {
    payload = bytes.subarray(at, end);
  } else if (chunk.type === 'zTXt') {
    payload = inflateXmp(bytes.subarray(at + 1, end), where);
  } else {
    if (at + 2 > end) throw new InvalidXmpError(`${where} is cut short`);
    const compressed = bytes[at] === 1;
    at += 2;
    // Language tag and translated keyword, each NUL-terminated.
    for (let field = 0; field < 2; field++) {
      const nul = bytes.subarray(at, end).indexOf(0);
      if (nul < 0) throw new InvalidXmpError(`${where} has an unterminated language or keyword field`);
      at += nul + 1;
    }
    payload = compressed ? inflateXmp(bytes.subarray(at, end), where) : bytes.subarray(at, end);
  }
  if (payload.length > MAX_XMP_BYTES) throw new InvalidXmpError(`${where} holds more than ${MAX_XMP_BYTES} bytes of XMP`);
  const text = decodeXmpText(payload);
  if (text === undefined) throw new InvalidXmpError(`the XMP in ${where} is not valid UTF-8 or UTF-16`);
  return { text, block: chunk };
}

function chunkBytes(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, data.length, false);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  out.set(data, 8);
  dv.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)), false);
  return out;
}

export function xmpChunk(packet: string): Uint8Array {
  return chunkBytes('iTXt', assemble(new Uint8Array(0), [utf8(ITXT_XMP_HEADER), utf8(packet)]));
}

export const png: ContainerHandler = defineHandler({
  format: 'png',
  mimeType: 'image/png',
  extension: 'png',
  maxPacketBytes: MAX_XMP_BYTES,
  supportsExtendedXmp: false,

  canHandle(bytes) {
    return PNG_SIGNATURE.every((b, i) => bytes[i] === b);
  },

  scan,

  read(bytes, layout): RawXmp {
    const packets: RawXmpPacket[] = [];
    const warnings: string[] = [];
    layout.chunks.forEach((chunk, index) => {
      if (chunk.kind !== 'xmp') return;
      packets.push(readPacket(bytes, chunk));
      if (index > layout.firstIdat) warnings.push(`the XMP ${chunk.type} chunk comes after IDAT; some readers ignore it there`);
      if (chunk.type !== 'iTXt') warnings.push(`the XMP is in a ${chunk.type} chunk rather than the standard iTXt`);
    });
    // Every deviation above is one of place or chunk type.
    return { packets, extendedChunks: [], warnings, misplaced: warnings.length > 0 };
  },

  write(bytes, layout, xmp) {
    const chunk = xmpChunk(xmp.packet);
    const existing = layout.chunks.filter((c) => c.kind === 'xmp');
    const only = existing.length === 1 ? existing[0]! : undefined;
    // Replace in place when the one XMP chunk is already where and what we would
    // write; otherwise drop every XMP chunk and insert right after IHDR.
    const inPlace =
      only !== undefined &&
      only.type === 'iTXt' &&
      layout.chunks.indexOf(only) < layout.firstIdat &&
      startsWithAt(bytes, only.dataStart, ITXT_XMP_HEADER);
    const ihdr = layout.chunks[0]!;
    const anchor = inPlace ? only.offset : ihdr.offset + ihdr.length;
    return views(bytes, splice(bytes, layout, new Set(existing.map((c) => c.offset)), anchor, chunk));
  },

  remove(bytes, layout) {
    const xmp = layout.chunks.filter((c) => c.kind === 'xmp').map((c) => c.offset);
    return assemble(bytes, splice(bytes, layout, new Set(xmp), -1, new Uint8Array(0)));
  },
});

/** The file's pieces, leaving out the chunks at `drop` and putting `insert` at `anchor`. */
function splice(bytes: Uint8Array, layout: PngLayout, drop: Set<number>, anchor: number, insert: Uint8Array): Piece[] {
  const pieces: Piece[] = [];
  let copyFrom = 0;
  for (const block of layout.blocks) {
    if (block.offset === anchor) {
      pieces.push({ from: copyFrom, to: block.offset }, insert);
      copyFrom = block.offset;
    }
    if (drop.has(block.offset)) {
      pieces.push({ from: copyFrom, to: block.offset });
      copyFrom = block.offset + block.length;
    }
  }
  pieces.push({ from: copyFrom, to: bytes.length });
  return pieces;
}

