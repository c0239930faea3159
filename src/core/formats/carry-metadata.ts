/**
 * Carry an image's metadata over to a re-encoding of its pixels: the
 * fingerprint layer has to re-encode, and an encoder fed raw pixels writes
 * none of the original's colour profile, EXIF, IPTC, XMP or text. The blocks
 * that describe the image (not its encoding) are copied byte for byte from
 * the original into the new file, at the places the format wants them.
 *
 * Not carried, because they describe the old encoding, not the picture:
 * JPEG APP0 (JFIF) and APP14 (Adobe colour transform); PNG PLTE, tRNS, bKGD,
 * sBIT, hIST; WebP VP8X/ALPH/ANIM (the new file has its own).
 */
import { assemble, type Piece } from '../bytes/assemble.js';
import { CorruptImageError } from '../../errors.js';
import { declaredDimensions } from './dimensions.js';
import type { Block } from './handler.js';
import { sniff } from './sniff.js';

const JPEG_CARRIED = /^(APP([1-9]|1[0-35])|COM)$/;
const PNG_CARRIED = new Set(['iCCP', 'sRGB', 'gAMA', 'cHRM', 'cICP', 'pHYs', 'eXIf', 'tEXt', 'zTXt', 'iTXt', 'tIME']);
const WEBP_FLAGS = { ICCP: 0x20, EXIF: 0x08, 'XMP ': 0x04 } as const;

export function carryMetadata(original: Uint8Array, encoded: Uint8Array): Uint8Array {
  const from = sniff(original);
  const to = sniff(encoded);
  if (from.format !== to.format) throw new Error(`cannot carry ${from.format} metadata into ${to.format}`);
  const source = from.blocks(original);
  const target = to.blocks(encoded);
  switch (from.format) {
    case 'jpeg':
      return carryJpeg(original, source, encoded, target);
    case 'png':
      return carryPng(original, source, encoded, target);
    case 'webp':
      return carryWebp(original, source, encoded, target);
  }
}

const range = (b: Block): Piece => ({ from: b.offset, to: b.offset + b.length });
const copy = (bytes: Uint8Array, b: Block): Uint8Array => bytes.subarray(b.offset, b.offset + b.length);

/** After the new file's SOI and APP0: the original's APPn (n >= 1, not 14) and COM, in their order. */
function carryJpeg(original: Uint8Array, source: Block[], encoded: Uint8Array, target: Block[]): Uint8Array {
  const firstScan = source.findIndex((b) => b.type === 'SOS');
  const carried = source.slice(0, firstScan < 0 ? source.length : firstScan).filter((b) => JPEG_CARRIED.test(b.type));
  const kept = target.filter((b) => !JPEG_CARRIED.test(b.type));
  const anchor = kept.findIndex((b) => b.type !== 'SOI' && b.type !== 'APP0');
  const pieces: Piece[] = [...kept.slice(0, anchor).map(range), ...carried.map((b) => copy(original, b)), ...kept.slice(anchor).map(range)];
  return assemble(encoded, pieces);
}

/** After the new file's IHDR: the original's colour, EXIF, text and time chunks (the new file's own of those kinds are dropped). */
function carryPng(original: Uint8Array, source: Block[], encoded: Uint8Array, target: Block[]): Uint8Array {
  const carried = source.filter((b) => PNG_CARRIED.has(b.type));
  const kept = target.filter((b) => !PNG_CARRIED.has(b.type));
  const anchor = kept.findIndex((b) => b.type === 'IHDR') + 1;
  const pieces: Piece[] = [...kept.slice(0, anchor).map(range), ...carried.map((b) => copy(original, b)), ...kept.slice(anchor).map(range)];
  return assemble(encoded, pieces);
}

/**
 * RIFF, a VP8X naming what is there, the original's ICCP, the new image
 * chunks (ALPH, VP8/VP8L), then the original's EXIF and XMP.
 */
function carryWebp(original: Uint8Array, source: Block[], encoded: Uint8Array, target: Block[]): Uint8Array {
  const pick = (fourcc: string) => source.filter((b) => b.type === fourcc).map((b) => copy(original, b));
  const [icc, exif, xmp] = [pick('ICCP'), pick('EXIF'), [...pick('XMP '), ...pick('XMP\0')]];
  const image = target.filter((b) => b.type === 'ALPH' || b.type === 'VP8 ' || b.type === 'VP8L').map((b) => copy(encoded, b));
  const size = declaredDimensions(encoded, 'webp');
  if (!size || image.length === 0) throw new CorruptImageError('webp', 'the re-encoded image has no still bitstream');
  let flags = 0;
  if (icc.length) flags |= WEBP_FLAGS.ICCP;
  if (exif.length) flags |= WEBP_FLAGS.EXIF;
  if (xmp.length) flags |= WEBP_FLAGS['XMP '];
  if (target.some((b) => b.type === 'ALPH') || vp8lHasAlpha(encoded, target)) flags |= 0x10;
  const vp8x = new Uint8Array(18);
  vp8x.set([0x56, 0x50, 0x38, 0x58, 10, 0, 0, 0, flags, 0, 0, 0]);
  const dv = new DataView(vp8x.buffer);
  dv.setUint16(12, (size.width - 1) & 0xffff, true);
  vp8x[14] = ((size.width - 1) >>> 16) & 0xff;
  dv.setUint16(15, (size.height - 1) & 0xffff, true);
  vp8x[17] = ((size.height - 1) >>> 16) & 0xff;
  const chunks = [vp8x, ...icc, ...image, ...exif, ...xmp];
  const length = 12 + chunks.reduce((n, c) => n + c.length, 0);
  const out = new Uint8Array(length);
  out.set([0x52, 0x49, 0x46, 0x46]);
  new DataView(out.buffer).setUint32(4, length - 8, true);
  out.set([0x57, 0x45, 0x42, 0x50], 8);
  let at = 12;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

function vp8lHasAlpha(bytes: Uint8Array, blocks: Block[]): boolean {
  const vp8l = blocks.find((b) => b.type === 'VP8L');
  return vp8l !== undefined && ((bytes[vp8l.offset + 8 + 4]! >>> 4) & 1) === 1;
}
