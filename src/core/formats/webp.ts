/**
 * WebP container handler.
 *
 * Layout (WebP container spec = RFC 9649): `RIFF` + u32 LE size (file length
 * minus 8) + `WEBP`, then chunks of FourCC + u32 LE payload size + payload +
 * one pad byte when the size is odd. A simple file holds one `VP8 ` (lossy) or
 * `VP8L` (lossless) chunk, possibly followed by unknown chunks; the extended
 * format starts with a 10-byte `VP8X` chunk whose flags announce ICC (0x20),
 * alpha (0x10), EXIF (0x08), XMP (0x04) and animation (0x02).
 *
 * XMP lives in an `XMP ` chunk and needs the extended format: a simple file is
 * converted to VP8X (canvas size from the bitstream, alpha flag from the VP8L
 * header), the XMP flag is set and the RIFF size fixed. Every other chunk,
 * unknown ones included, is kept in its order, byte for byte.
 */
import { decodeXmpText, join, utf8, views, type Piece } from '../bytes/assemble.js';
import { ByteView } from '../bytes/view.js';
import { InvalidXmpError } from '../../errors.js';
import { defineHandler, MAX_XMP_BYTES, type Block, type ContainerHandler, type RawXmp, type RawXmpPacket } from './handler.js';

const FLAG_ICC = 0x20;
const FLAG_ALPHA = 0x10;
const FLAG_EXIF = 0x08;
const FLAG_XMP = 0x04;
const FLAG_ANIMATION = 0x02;
const VP8X_PAYLOAD = 10;
/** ImageMagick writes `XMP\0`; ExifTool still reads it, and so do we. */
const XMP_FOURCCS = new Set(['XMP ', 'XMP\0']);
/** Chunks that make up or describe the image; a new `XMP ` chunk goes after the last of them. */
const IMAGE_FOURCCS = new Set(['VP8X', 'ICCP', 'ANIM', 'ANMF', 'ALPH', 'VP8 ', 'VP8L', 'EXIF']);
/** Chunks that may not follow the bitstream of a simple file (RFC 9649 allows only one image there). */
const SIMPLE_FORBIDDEN_AFTER = new Set(['VP8X', 'ANIM', 'ANMF', 'ALPH', 'VP8 ', 'VP8L']);
const MAX_CHUNKS = 200_000;

interface Chunk extends Block {
  readonly fourcc: string;
  readonly payloadStart: number;
  readonly payloadSize: number;
}

interface Canvas {
  readonly width: number;
  readonly height: number;
  readonly alpha: boolean;
}

interface WebpLayout {
  readonly blocks: Block[];
  readonly chunks: Chunk[];
  /** The VP8X chunk, or undefined for a simple file. */
  readonly vp8x: Chunk | undefined;
  /** Size of the still image's bitstream (simple files and still VP8X files). */
  readonly bitstream: Canvas | undefined;
}

function readBitstream(view: ByteView, chunk: Chunk): Canvas {
  const at = chunk.payloadStart;
  // The header must lie inside the chunk: read past it, the size would come
  // from the next chunk's bytes, and change when that chunk does.
  const header = chunk.fourcc === 'VP8 ' ? 10 : 5;
  if (chunk.payloadSize < header) throw view.corrupt(`the ${printable(chunk.fourcc)} chunk holds ${chunk.payloadSize} bytes, fewer than its ${header}-byte header`);
  if (chunk.fourcc === 'VP8 ') {
    if ((view.bytes[at]! & 1) !== 0) throw view.corrupt('the VP8 bitstream does not start with a key frame');
    if (view.bytes[at + 3] !== 0x9d || view.bytes[at + 4] !== 0x01 || view.bytes[at + 5] !== 0x2a) {
      throw view.corrupt('the VP8 bitstream lacks its start code');
    }
    const width = view.u16le(at + 6, 'VP8 width') & 0x3fff;
    const height = view.u16le(at + 8, 'VP8 height') & 0x3fff;
    if (width === 0 || height === 0) throw view.corrupt(`VP8 frame size ${width}x${height}`);
    return { width, height, alpha: false };
  }
  if (view.bytes[at] !== 0x2f) throw view.corrupt('the VP8L bitstream lacks its 0x2F signature');
  const bits = view.u32le(at + 1, 'VP8L header');
  if (bits >>> 29 !== 0) throw view.corrupt(`unknown VP8L version ${bits >>> 29}`);
  return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1, alpha: ((bits >>> 28) & 1) === 1 };
}

function scan(bytes: Uint8Array): WebpLayout {
  const view = new ByteView(bytes, 'webp');
  if (view.ascii(0, 4, 'RIFF header') !== 'RIFF' || view.ascii(8, 4, 'RIFF form type') !== 'WEBP') {
    throw view.corrupt('missing the RIFF/WEBP header');
  }
  const riffSize = view.u32le(4, 'RIFF size');
  if (riffSize + 8 !== bytes.length) {
    throw view.corrupt(`the RIFF header declares ${riffSize + 8} bytes but the file has ${bytes.length}`);
  }
  if (riffSize % 2 !== 0) throw view.corrupt(`odd RIFF size ${riffSize}`);

  const blocks: Block[] = [{ kind: 'header', type: 'RIFF', offset: 0, length: 12 }];
  const chunks: Chunk[] = [];
  let pos = 12;
  while (pos < bytes.length) {
    if (chunks.length >= MAX_CHUNKS) throw view.corrupt(`more than ${MAX_CHUNKS} chunks`);
    const fourcc = view.ascii(pos, 4, 'chunk FourCC');
    const payloadSize = view.u32le(pos + 4, `${printable(fourcc)} chunk size`);
    const padded = payloadSize + (payloadSize & 1);
    view.need(pos + 8, padded, `${printable(fourcc)} chunk at offset ${pos}`);
    const kind = XMP_FOURCCS.has(fourcc) ? 'xmp' : fourcc === 'VP8X' && chunks.length === 0 ? 'header' : 'other';
    const chunk: Chunk = { kind, type: fourcc, offset: pos, length: 8 + padded, fourcc, payloadStart: pos + 8, payloadSize };
    chunks.push(chunk);
    blocks.push(chunk);
    pos += 8 + padded;
  }

  const first = chunks[0];
  if (!first) throw view.corrupt('no chunks after the RIFF header');
  if (first.fourcc === 'VP8 ' || first.fourcc === 'VP8L') {
    // Decoders read a simple file's first chunk and ignore the rest, but the
    // VP8X header that XMP needs makes them read every chunk: a second image,
    // alpha or animation chunk would then stop the file from decoding.
    const stray = chunks.find((c, i) => i > 0 && SIMPLE_FORBIDDEN_AFTER.has(c.fourcc));
    if (stray) throw view.corrupt(`a simple WebP file holds a second image chunk ${printable(stray.fourcc)} at offset ${stray.offset}`);
    return { blocks, chunks, vp8x: undefined, bitstream: readBitstream(view, first) };
  }
  if (first.fourcc !== 'VP8X') throw view.corrupt(`the first chunk is ${printable(first.fourcc)}, not VP8 , VP8L or VP8X`);
  if (first.payloadSize < VP8X_PAYLOAD) throw view.corrupt(`VP8X chunk of ${first.payloadSize} bytes`);
  const flags = bytes[first.payloadStart]!;
  const width = view.u24le(first.payloadStart + 4, 'VP8X width') + 1;
  const height = view.u24le(first.payloadStart + 7, 'VP8X height') + 1;
  if (width * height > 0xffffffff) throw view.corrupt(`canvas ${width}x${height} is larger than the format allows`);

  if (flags & FLAG_ANIMATION) {
    if (!chunks.some((c) => c.fourcc === 'ANIM')) throw view.corrupt('the animation flag is set but there is no ANIM chunk');
    return { blocks, chunks, vp8x: first, bitstream: undefined };
  }
  const image = chunks.find((c) => c.fourcc === 'VP8 ' || c.fourcc === 'VP8L');
  if (!image) throw view.corrupt('no VP8 or VP8L image chunk');
  const bitstream = readBitstream(view, image);
  if (bitstream.width !== width || bitstream.height !== height) {
    throw view.corrupt(`the VP8X canvas is ${width}x${height} but the image is ${bitstream.width}x${bitstream.height}`);
  }
  return { blocks, chunks, vp8x: first, bitstream };
}

function printable(fourcc: string): string {
  return JSON.stringify(fourcc);
}

function chunkBytes(fourcc: string, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + payload.length + (payload.length & 1));
  for (let i = 0; i < 4; i++) out[i] = fourcc.charCodeAt(i);
  new DataView(out.buffer).setUint32(4, payload.length, true);
  out.set(payload, 8);
  return out;
}

/** The VP8X chunk of the output: the existing one with its XMP flag set or cleared, or a new one. */
function vp8xFor(bytes: Uint8Array, layout: WebpLayout, xmp: boolean): Uint8Array {
  if (layout.vp8x) {
    // A real copy: Buffer#slice would share the caller's memory.
    const copy = Uint8Array.from(bytes.subarray(layout.vp8x.offset, layout.vp8x.offset + layout.vp8x.length));
    copy[8] = xmp ? copy[8]! | FLAG_XMP : copy[8]! & ~FLAG_XMP;
    return copy;
  }
  const canvas = layout.bitstream!;
  const payload = new Uint8Array(VP8X_PAYLOAD);
  let flags = xmp ? FLAG_XMP : 0;
  if (canvas.alpha) flags |= FLAG_ALPHA;
  // A trailing EXIF chunk in a simple file is legal once announced; an ICCP
  // chunk after the bitstream would not be, so its flag stays clear.
  if (layout.chunks.some((c) => c.fourcc === 'EXIF')) flags |= FLAG_EXIF;
  payload[0] = flags;
  const dv = new DataView(payload.buffer);
  dv.setUint16(4, (canvas.width - 1) & 0xffff, true);
  payload[6] = ((canvas.width - 1) >>> 16) & 0xff;
  dv.setUint16(7, (canvas.height - 1) & 0xffff, true);
  payload[9] = ((canvas.height - 1) >>> 16) & 0xff;
  return chunkBytes('VP8X', payload);
}

/**
 * Rebuild the file: a fresh RIFF header, the VP8X chunk, then every chunk in
 * order except those in `drop`, with `insert` placed before the chunk at `anchor`
 * (or at the end when `anchor` is the file length); as the views that make it.
 */
function rebuild(bytes: Uint8Array, layout: WebpLayout, vp8x: Uint8Array, drop: Set<number>, anchor: number, insert: Uint8Array): Uint8Array[] {
  const header = new Uint8Array(12);
  const pieces: Piece[] = [header, vp8x];
  for (const chunk of layout.chunks) {
    if (chunk.offset === anchor) pieces.push(insert);
    if (chunk === layout.vp8x || drop.has(chunk.offset)) continue;
    pieces.push({ from: chunk.offset, to: chunk.offset + chunk.length });
  }
  if (anchor >= bytes.length) pieces.push(insert);
  const parts = views(bytes, pieces);
  const length = parts.reduce((n, part) => n + part.length, 0);
  header.set([0x52, 0x49, 0x46, 0x46], 0);
  new DataView(header.buffer).setUint32(4, length - 8, true);
  header.set([0x57, 0x45, 0x42, 0x50], 8);
  return parts;
}

export const webp: ContainerHandler = defineHandler({
  format: 'webp',
  mimeType: 'image/webp',
  extension: 'webp',
  maxPacketBytes: MAX_XMP_BYTES,
  supportsExtendedXmp: false,

  canHandle(bytes) {
    return (
      bytes.length >= 12 &&
      String.fromCharCode(...bytes.subarray(0, 4)) === 'RIFF' &&
      String.fromCharCode(...bytes.subarray(8, 12)) === 'WEBP'
    );
  },

  scan,

  read(bytes, layout): RawXmp {
    const packets: RawXmpPacket[] = [];
    const warnings: string[] = [];
    for (const chunk of layout.chunks) {
      if (chunk.kind !== 'xmp') continue;
      if (chunk.payloadSize > MAX_XMP_BYTES) throw new InvalidXmpError(`the XMP chunk holds more than ${MAX_XMP_BYTES} bytes`);
      const text = decodeXmpText(bytes.subarray(chunk.payloadStart, chunk.payloadStart + chunk.payloadSize));
      if (text === undefined) throw new InvalidXmpError(`the XMP chunk at offset ${chunk.offset} is not valid UTF-8 or UTF-16`);
      packets.push({ text, block: chunk });
      if (chunk.fourcc !== 'XMP ') warnings.push('the XMP chunk is named "XMP\\0" instead of "XMP "');
    }
    if (packets.length > 0 && !layout.vp8x) warnings.push('the XMP chunk is in a simple WebP file without a VP8X header');
    if (packets.length > 0 && layout.vp8x && (bytes[layout.vp8x.payloadStart]! & FLAG_XMP) === 0) {
      warnings.push('the VP8X header does not announce the XMP chunk');
    }
    // Every deviation above is one of place or announcement.
    return { packets, extendedChunks: [], warnings, misplaced: warnings.length > 0 };
  },

  write(bytes, layout, xmp) {
    const insert = chunkBytes('XMP ', utf8(xmp.packet));
    const existing = layout.chunks.filter((c) => c.kind === 'xmp');
    let anchor: number;
    if (existing.length > 0) {
      anchor = existing[0]!.offset;
    } else {
      // After the image data and EXIF, before unknown chunks (webpmux's choice;
      // it also keeps a C2PA chunk, which must come last, at the end).
      const last = layout.chunks.findLast((c) => IMAGE_FOURCCS.has(c.fourcc))!;
      anchor = last.offset + last.length;
    }
    return rebuild(bytes, layout, vp8xFor(bytes, layout, true), new Set(existing.map((c) => c.offset)), anchor, insert);
  },

  remove(bytes, layout) {
    const existing = layout.chunks.filter((c) => c.kind === 'xmp');
    if (existing.length === 0 && (!layout.vp8x || (bytes[layout.vp8x.payloadStart]! & FLAG_XMP) === 0)) return Uint8Array.from(bytes);
    const vp8x = layout.vp8x ? vp8xFor(bytes, layout, false) : new Uint8Array(0);
    return join(rebuild(bytes, layout, vp8x, new Set(existing.map((c) => c.offset)), -1, new Uint8Array(0)));
  },
});

export const WEBP_FLAGS = { ICC: FLAG_ICC, ALPHA: FLAG_ALPHA, EXIF: FLAG_EXIF, XMP: FLAG_XMP, ANIMATION: FLAG_ANIMATION } as const;
