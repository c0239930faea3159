/**
 * The pixel size an image declares in its header, read without validating
 * or walking the rest of the file: enough to refuse a decompression bomb (a
 * 50 KB PNG that says 20000x20000) before a decoder allocates anything.
 * `undefined` when the header cannot be read; the container parser, which
 * runs next, then says what is wrong.
 */
import type { ImageFormat } from '../../errors.js';

export interface Dimensions {
  readonly width: number;
  readonly height: number;
}

const u16be = (b: Uint8Array, at: number) => (b[at]! << 8) | b[at + 1]!;
const u16le = (b: Uint8Array, at: number) => b[at]! | (b[at + 1]! << 8);
const u24le = (b: Uint8Array, at: number) => b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16);
const u32be = (b: Uint8Array, at: number) => ((b[at]! << 24) >>> 0) + ((b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!);
const ascii = (b: Uint8Array, at: number, length: number) => String.fromCharCode(...b.subarray(at, at + length));

export function declaredDimensions(bytes: Uint8Array, format: ImageFormat): Dimensions | undefined {
  switch (format) {
    case 'png':
      return bytes.length >= 24 && ascii(bytes, 12, 4) === 'IHDR' ? { width: u32be(bytes, 16), height: u32be(bytes, 20) } : undefined;
    case 'webp':
      return webpDimensions(bytes);
    case 'jpeg':
      return jpegDimensions(bytes);
  }
}

function webpDimensions(b: Uint8Array): Dimensions | undefined {
  if (b.length < 30) return undefined;
  switch (ascii(b, 12, 4)) {
    case 'VP8X':
      return { width: u24le(b, 24) + 1, height: u24le(b, 27) + 1 };
    case 'VP8 ':
      return { width: u16le(b, 26) & 0x3fff, height: u16le(b, 28) & 0x3fff };
    case 'VP8L': {
      const bits = (b[21]! | (b[22]! << 8) | (b[23]! << 16) | (b[24]! << 24)) >>> 0;
      return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
    }
    default:
      return undefined;
  }
}

function jpegDimensions(b: Uint8Array): Dimensions | undefined {
  const at = jpegFrameHeaderAt(b);
  return at !== undefined && at + 9 <= b.length ? { height: u16be(b, at + 5), width: u16be(b, at + 7) } : undefined;
}

/**
 * Where the first frame header (SOFn marker) of a JPEG starts: its
 * precision is at +4, height +5, width +7, component count +9. Walks the
 * marker segments from the start; undefined at SOS, EOI or anything
 * unreadable before a frame header.
 */
export function jpegFrameHeaderAt(b: Uint8Array): number | undefined {
  let at = 2;
  while (at + 4 <= b.length) {
    if (b[at] !== 0xff) return undefined;
    const marker = b[at + 1]!;
    if (marker === 0xff) {
      at++; // fill byte
      continue;
    }
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      at += 2;
      continue;
    }
    if (marker === 0xda || marker === 0xd9) return undefined;
    const length = u16be(b, at + 2);
    if (length < 2) return undefined;
    const isSof = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isSof) return at;
    at += 2 + length;
  }
  return undefined;
}
