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
 *
 * Nor anything after the image (a JPEG's bytes after EOI, a PNG's or WebP's
 * after its end): the new file is the one picture just encoded. So the
 * metadata that indexes such secondary images is not carried either; it
 * would point at bytes that are now something else:
 * - JPEG APP2 carries only ICC_PROFILE segments. Its other uses index or
 *   hold images beside the primary one: MPF ("MPF\0", the index of the
 *   camera previews, stereo views and gain maps stored after EOI, by offset)
 *   and FlashPix extensions ("FPXR").
 * - JPEG XMP that declares a container (Google's Container:Directory, whose
 *   items, motion photo video or Ultra HDR gain map, are found by their
 *   lengths counted from the end of the file; or the older
 *   Camera:MicroVideoOffset, the same from the end) is dropped, standard
 *   packet and Extended XMP together: kept, it would make readers take the
 *   tail of the new image for a video or gain map. Only the directory is
 *   wrong, but removing it would mean rewriting the packet, and this step
 *   copies blocks byte for byte; such packets are written by the camera to
 *   describe the container, the photographer's EXIF and IPTC (APP13) are
 *   carried regardless, and protect then writes the opt-out into a packet of
 *   its own.
 */
import { assemble, type Piece } from '../bytes/assemble.js';
import { startsWithAt } from '../bytes/view.js';
import { CorruptImageError } from '../../errors.js';
import { parseXmp, type XmpDocument } from '../xmp/document.js';
import { extendedXmpGuid } from '../xmp/facts.js';
import { findProperty } from '../xmp/properties.js';
import { declaredDimensions } from './dimensions.js';
import { assembleExtendedXmp } from './extended-xmp.js';
import type { Block, ContainerHandler, ExtendedXmpChunk, RawXmp } from './handler.js';
import { sniff } from './sniff.js';

const JPEG_CARRIED = /^(APP([1-9]|1[0-35])|COM)$/;
const ICC_PROFILE = 'ICC_PROFILE\0';
/** Google's container and camera namespaces (motion photos, Ultra HDR). */
const CONTAINER_NS = 'http://ns.google.com/photos/1.0/container/';
const CAMERA_NS = 'http://ns.google.com/photos/1.0/camera/';
/** caBX: a C2PA manifest store. Carried, as a JPEG's APP11 is, though the new pixels break its hard binding: protect reports it invalidated, and verify still reads its assertions. */
const PNG_CARRIED = new Set(['iCCP', 'sRGB', 'gAMA', 'cHRM', 'cICP', 'pHYs', 'eXIf', 'tEXt', 'zTXt', 'iTXt', 'tIME', 'caBX']);
const WEBP_FLAGS = { ICCP: 0x20, EXIF: 0x08, 'XMP ': 0x04 } as const;

export function carryMetadata(original: Uint8Array, encoded: Uint8Array): Uint8Array {
  const from = sniff(original);
  const to = sniff(encoded);
  if (from.format !== to.format) throw new Error(`cannot carry ${from.format} metadata into ${to.format}`);
  const source = from.blocks(original);
  const target = to.blocks(encoded);
  switch (from.format) {
    case 'jpeg':
      return carryJpeg(original, source.filter(jpegCarried(from, original)), encoded, target);
    case 'png':
      return carryPng(original, source, encoded, target);
    case 'webp':
      return carryWebp(original, source, encoded, target);
  }
}

const range = (b: Block): Piece => ({ from: b.offset, to: b.offset + b.length });
const copy = (bytes: Uint8Array, b: Block): Uint8Array => bytes.subarray(b.offset, b.offset + b.length);

/**
 * Which of the original JPEG's blocks may be carried, besides the rule by
 * marker: APP2 only as ICC_PROFILE, and no XMP that declares a container.
 */
function jpegCarried(handler: ContainerHandler, original: Uint8Array): (b: Block) => boolean {
  const dropped = new Set<number>();
  let xmp: RawXmp | undefined;
  try {
    xmp = handler.readXmp(original);
  } catch {
    // An XMP block that cannot be decoded is carried as it is and left to
    // protect, which refuses it as it would refuse the original.
  }
  if (xmp && xmp.packets.some((p) => declaresContainer(p.text, xmp.extendedChunks))) {
    for (const p of xmp.packets) dropped.add(p.block.offset);
    for (const c of xmp.extendedChunks) dropped.add(c.block.offset);
  }
  return (b) => !dropped.has(b.offset) && (b.type !== 'APP2' || startsWithAt(original, b.offset + 4, ICC_PROFILE));
}

/**
 * The standard packet `text`, or the Extended XMP it names, lists items
 * stored after the image. XMP that does not parse is carried (and left to
 * protect, as above).
 */
function declaresContainer(text: string, chunks: readonly ExtendedXmpChunk[]): boolean {
  const lists = (doc: XmpDocument) => findProperty(doc, CONTAINER_NS, 'Directory').length > 0 || findProperty(doc, CAMERA_NS, 'MicroVideoOffset').length > 0;
  try {
    const standard = parseXmp(text);
    if (lists(standard)) return true;
    const guid = extendedXmpGuid(standard);
    return guid !== undefined && lists(parseXmp(new TextDecoder().decode(assembleExtendedXmp(chunks, guid))));
  } catch {
    return false;
  }
}

/** After the new file's SOI and APP0: the original's carried APPn (n >= 1, not 14) and COM, in their order. */
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
 * chunks (ALPH, VP8/VP8L), then the original's EXIF, XMP and C2PA manifest
 * store (carried as for PNG; no VP8X flag announces it).
 */
function carryWebp(original: Uint8Array, source: Block[], encoded: Uint8Array, target: Block[]): Uint8Array {
  const pick = (fourcc: string) => source.filter((b) => b.type === fourcc).map((b) => copy(original, b));
  const [icc, exif, xmp, c2pa] = [pick('ICCP'), pick('EXIF'), [...pick('XMP '), ...pick('XMP\0')], pick('C2PA')];
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
  const chunks = [vp8x, ...icc, ...image, ...exif, ...xmp, ...c2pa];
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
