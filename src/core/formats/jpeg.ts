/**
 * JPEG container handler.
 *
 * Layout (ITU T.81 annex B): SOI, then marker segments `FF xx` + u16 BE length
 * (counting itself) + payload, then after each SOS header entropy-coded data in
 * which `FF 00` is a stuffed byte and `FF D0`..`FF D7` are restart markers,
 * until EOI. Anything after EOI (MPF images, gain maps, vendor trailers) is kept
 * as a `trailer` block.
 *
 * XMP (XMP Specification Part 3, 1.1.3): standard packet in APP1 after the
 * 29-byte signature `http://ns.adobe.com/xap/1.0/\0`; Extended XMP in APP1
 * segments after `http://ns.adobe.com/xmp/extension/\0` + 32-byte GUID +
 * u32 BE full length + u32 BE offset (75-byte header, at most 65458 data bytes).
 */
import { InvalidXmpError } from '../../errors.js';
import { assemble, decodeXmpText, utf8, views, type Piece } from '../bytes/assemble.js';
import { ByteView, latin1, startsWithAt } from '../bytes/view.js';
import { afcpOffsetFields, shiftAfcpOffsets, type AfcpOffsetField } from './afcp.js';
import {
  MAX_XMP_BYTES,
  type Block,
  defineHandler,
  type ContainerHandler,
  type ExtendedXmpChunk,
  type RawXmp,
  type RawXmpPacket,
} from './handler.js';

const SOI = 0xd8;
const EOI = 0xd9;
const SOS = 0xda;
const DHT = 0xc4;
const JPG = 0xc8;
const DAC = 0xcc;
const TEM = 0x01;
const APP0 = 0xe0;
const APP1 = 0xe1;

export const JPEG_XMP_SIGNATURE = 'http://ns.adobe.com/xap/1.0/\0';
/** Some writers put a space where the NUL belongs; readers accept it (as c2pa-rs does). */
const JPEG_XMP_SIGNATURE_SPACE = 'http://ns.adobe.com/xap/1.0/ ';
export const JPEG_XMP_EXTENSION_SIGNATURE = 'http://ns.adobe.com/xmp/extension/\0';
const EXIF_SIGNATURE = 'Exif\0';
const EXTENSION_HEADER_BYTES = JPEG_XMP_EXTENSION_SIGNATURE.length + 32 + 4 + 4;

/** A segment's payload can hold at most 65535 - 2 bytes. */
const MAX_SEGMENT_PAYLOAD = 0xffff - 2;
/** Adobe's XMPUtils keeps the standard packet at or under 65000 bytes; so do we. */
export const JPEG_MAX_STANDARD_PACKET = 65000;
/** ExifTool's chunk size for Extended XMP: the largest that fits one segment. */
export const JPEG_EXTENSION_CHUNK_BYTES = MAX_SEGMENT_PAYLOAD - EXTENSION_HEADER_BYTES;
/** More markers than any real file has; bounds the work a hostile file can cause. */
const MAX_SEGMENTS = 65536;

interface Segment extends Block {
  readonly marker: number;
  /** First payload byte (after the length field) and end of the payload. */
  readonly payloadStart: number;
  readonly payloadEnd: number;
}

interface JpegLayout {
  readonly blocks: Block[];
  readonly segments: Segment[];
  /** The absolute offsets an AFCP trailer after EOI holds (afcp.ts): they move with the trailer. */
  readonly afcp: readonly AfcpOffsetField[];
}

const MARKER_NAMES: Record<number, string> = {
  0xc4: 'DHT',
  0xcc: 'DAC',
  0xd8: 'SOI',
  0xd9: 'EOI',
  0xda: 'SOS',
  0xdb: 'DQT',
  0xdc: 'DNL',
  0xdd: 'DRI',
  0xde: 'DHP',
  0xdf: 'EXP',
  0xfe: 'COM',
};

function markerName(marker: number): string {
  if (marker >= 0xe0 && marker <= 0xef) return `APP${marker - 0xe0}`;
  if (marker >= 0xd0 && marker <= 0xd7) return `RST${marker - 0xd0}`;
  if (isSof(marker)) return `SOF${marker - 0xc0}`;
  return MARKER_NAMES[marker] ?? `0x${marker.toString(16).toUpperCase()}`;
}

function isSof(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== DHT && marker !== JPG && marker !== DAC;
}

function isStandardXmp(bytes: Uint8Array, segment: Segment): boolean {
  return (
    segment.marker === APP1 &&
    (startsWithAt(bytes, segment.payloadStart, JPEG_XMP_SIGNATURE) ||
      startsWithAt(bytes, segment.payloadStart, JPEG_XMP_SIGNATURE_SPACE))
  );
}

function isExtendedXmp(bytes: Uint8Array, segment: Segment): boolean {
  return segment.marker === APP1 && startsWithAt(bytes, segment.payloadStart, JPEG_XMP_EXTENSION_SIGNATURE);
}

/**
 * Walk the whole file: every marker segment, every entropy-coded run, up to EOI.
 * Throws CorruptImageError for anything a decoder would refuse at container level.
 *
 * Metadata lives before the first SOS: segments after it are never XMP
 * (ExifTool and exiv2 stop reading metadata there too).
 *
 * With `headersOnly` (reading and writing metadata), the walk stops after
 * the first SOS header when the file ends with the EOI marker: everything
 * from there on is one opaque block, copied as is, and the scan data is not
 * walked (it is the bulk of the file, and metadata is never in it). A file
 * that does not end so (a trailer, a truncation) gets the full walk, which
 * finds its trailer or says where it is cut. `blocks()` always walks it all.
 */
function scan(bytes: Uint8Array, headersOnly = false): JpegLayout {
  const view = new ByteView(bytes, 'jpeg');
  const blocks: Block[] = [];
  const segments: Segment[] = [];
  const search = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

  if (bytes.length < 2 || bytes[0] !== 0xff || bytes[1] !== SOI) throw view.corrupt('missing the SOI marker');
  blocks.push({ kind: 'other', type: 'SOI', offset: 0, length: 2 });

  let pos = 2;
  let frame = false;
  let scans = 0;
  for (;;) {
    if (segments.length > MAX_SEGMENTS) throw view.corrupt(`more than ${MAX_SEGMENTS} marker segments`);
    if (pos >= bytes.length) {
      throw view.corrupt(scans > 0 ? 'the file ends before the EOI marker (truncated?)' : 'the file ends before any image data');
    }
    if (bytes[pos] !== 0xff) throw view.corrupt(`expected a marker at offset ${pos}, found 0x${bytes[pos]!.toString(16)}`);
    // Any number of 0xFF fill bytes may precede a marker; they belong to its block.
    let at = pos + 1;
    while (at < bytes.length && bytes[at] === 0xff) at++;
    const marker = view.u8(at, 'marker');
    const type = markerName(marker);

    if (marker === EOI) {
      if (scans === 0) throw view.corrupt('EOI before any scan: there is no image data');
      blocks.push({ kind: 'other', type, offset: pos, length: at + 1 - pos });
      pos = at + 1;
      break;
    }
    if (marker === SOI) throw view.corrupt(`a second SOI marker at offset ${pos}`);
    if (marker === 0x00) throw view.corrupt(`a stuffed byte (FF 00) outside entropy-coded data at offset ${pos}`);
    if (marker === TEM || (marker >= 0xd0 && marker <= 0xd7)) {
      // Standalone markers: no length field.
      blocks.push({ kind: 'other', type, offset: pos, length: at + 1 - pos });
      pos = at + 1;
      continue;
    }

    const declared = view.u16be(at + 1, `${type} length`);
    if (declared < 2) throw view.corrupt(`${type} at offset ${pos} declares length ${declared}`);
    const payloadStart = at + 3;
    const end = at + 1 + declared;
    view.need(at + 1, declared, `${type} segment at offset ${pos}`);
    const segment: Segment = { kind: 'other', type, offset: pos, length: end - pos, marker, payloadStart, payloadEnd: end };
    const kind = scans === 0 && (isStandardXmp(bytes, segment) || isExtendedXmp(bytes, segment)) ? 'xmp' : 'other';
    const block: Segment = kind === 'xmp' ? { ...segment, kind } : segment;
    segments.push(block);
    blocks.push(block);
    pos = end;

    if (isSof(marker)) {
      // Inside the segment, not from the bytes after it.
      if (end - payloadStart < 6) throw view.corrupt(`${type} at offset ${pos} holds ${end - payloadStart} bytes, fewer than a frame header`);
      const height = view.u16be(payloadStart + 1, 'frame height');
      const width = view.u16be(payloadStart + 3, 'frame width');
      if (width === 0 || height === 0) {
        throw view.corrupt(`frame size ${width}x${height} (a zero height needs a DNL marker, which is not supported)`);
      }
      frame = true;
    } else if (marker === SOS) {
      if (!frame) throw view.corrupt('SOS before any SOF frame header');
      scans++;
      if (headersOnly && scans === 1 && endsWithEoi(bytes, pos)) {
        blocks.push({ kind: 'other', type: 'image data', offset: pos, length: bytes.length - pos });
        return { blocks, segments, afcp: [] };
      }
      // Entropy-coded data runs to the next marker that is not FF00 or RSTn.
      let cursor = pos;
      for (;;) {
        const ff = search.indexOf(0xff, cursor);
        if (ff < 0 || ff + 1 >= bytes.length) throw view.corrupt('the file ends inside scan data, before the EOI marker (truncated?)');
        const next = bytes[ff + 1]!;
        if (next === 0x00 || (next >= 0xd0 && next <= 0xd7)) cursor = ff + 2;
        else if (next === 0xff) cursor = ff + 1;
        else {
          if (ff > pos) blocks.push({ kind: 'other', type: 'ECS', offset: pos, length: ff - pos });
          pos = ff;
          break;
        }
      }
    }
  }
  // Bytes after EOI: a `trailer`, in which the offset fields of an AFCP trailer
  // are `header` blocks of their own (an XMP edit moves what they point at).
  // A file that ends with the EOI marker is not searched for one (the
  // metadata walk does not reach its end; an AFCP trailer ends with its own record).
  const afcp = pos < bytes.length && !endsWithEoi(bytes, pos) ? afcpOffsetFields(bytes, pos, bytes.length) : [];
  for (const field of afcp) {
    if (field.at > pos) blocks.push({ kind: 'other', type: 'trailer', offset: pos, length: field.at - pos });
    blocks.push({ kind: 'header', type: 'AFCP offset', offset: field.at, length: 4 });
    pos = field.at + 4;
  }
  if (pos < bytes.length) blocks.push({ kind: 'other', type: 'trailer', offset: pos, length: bytes.length - pos });
  return { blocks, segments, afcp };
}

/** The file ends with the EOI marker (after the first SOS header at `from`). */
function endsWithEoi(bytes: Uint8Array, from: number): boolean {
  const n = bytes.length;
  return n - from >= 2 && bytes[n - 2] === 0xff && bytes[n - 1] === EOI;
}

function readExtendedChunk(bytes: Uint8Array, segment: Segment): ExtendedXmpChunk {
  const view = new ByteView(bytes, 'jpeg');
  const start = segment.payloadStart + JPEG_XMP_EXTENSION_SIGNATURE.length;
  if (segment.payloadEnd - segment.payloadStart < EXTENSION_HEADER_BYTES) {
    throw new InvalidXmpError(`Extended XMP segment at offset ${segment.offset} is shorter than its 75-byte header`);
  }
  return {
    guid: latin1(bytes, start, start + 32),
    fullLength: view.u32be(start + 32, 'Extended XMP length'),
    offset: view.u32be(start + 36, 'Extended XMP offset'),
    data: bytes.subarray(start + 40, segment.payloadEnd),
    block: segment,
  };
}

function readPacket(bytes: Uint8Array, segment: Segment): RawXmpPacket {
  const data = bytes.subarray(segment.payloadStart + JPEG_XMP_SIGNATURE.length, segment.payloadEnd);
  const text = decodeXmpText(data);
  if (text === undefined) throw new InvalidXmpError(`the XMP packet at offset ${segment.offset} is not valid UTF-8 or UTF-16`);
  return { text, block: segment };
}

function segmentBytes(marker: number, payload: Uint8Array[]): Uint8Array {
  const size = payload.reduce((n, p) => n + p.length, 0);
  if (size > MAX_SEGMENT_PAYLOAD) throw new RangeError(`APP segment payload of ${size} bytes does not fit`);
  const head = new Uint8Array([0xff, marker, ((size + 2) >> 8) & 0xff, (size + 2) & 0xff]);
  return assemble(new Uint8Array(0), [head, ...payload]);
}

/** Encode the standard packet as one APP1 segment. The caller has made it fit. */
function standardSegment(packet: string): Uint8Array {
  const data = utf8(packet);
  if (data.length > MAX_SEGMENT_PAYLOAD - JPEG_XMP_SIGNATURE.length) {
    throw new InvalidXmpError(`the standard XMP packet is ${data.length} bytes, more than one JPEG segment holds`);
  }
  return segmentBytes(APP1, [utf8(JPEG_XMP_SIGNATURE), data]);
}

/** Split an Extended XMP serialisation into APP1 segments of at most 65458 data bytes. */
function extensionSegments(guid: string, data: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  const signature = utf8(JPEG_XMP_EXTENSION_SIGNATURE);
  const id = utf8(guid);
  for (let offset = 0; offset < data.length || offset === 0; offset += JPEG_EXTENSION_CHUNK_BYTES) {
    const header = new Uint8Array(8);
    const dv = new DataView(header.buffer);
    dv.setUint32(0, data.length, false);
    dv.setUint32(4, offset, false);
    out.push(segmentBytes(APP1, [signature, id, header, data.subarray(offset, offset + JPEG_EXTENSION_CHUNK_BYTES)]));
    if (data.length === 0) break;
  }
  return out;
}

/**
 * Where a new standard XMP segment goes: after the leading APP0 (JFIF/JFXX) and
 * APP1 Exif segments, before every other segment. This is where ExifTool and
 * exiv2 put it: readers that stop at the first non-APP0/Exif segment still
 * find it, and it always precedes SOF.
 */
function insertionOffset(bytes: Uint8Array, layout: JpegLayout): number {
  let offset = 2;
  for (const segment of layout.segments) {
    const leading =
      segment.marker === APP0 || (segment.marker === APP1 && startsWithAt(bytes, segment.payloadStart, EXIF_SIGNATURE));
    if (!leading || segment.offset !== offset) break;
    offset = segment.offset + segment.length;
  }
  return offset;
}

export const jpeg: ContainerHandler = defineHandler({
  format: 'jpeg',
  mimeType: 'image/jpeg',
  extension: 'jpg',
  maxPacketBytes: JPEG_MAX_STANDARD_PACKET,
  supportsExtendedXmp: true,

  canHandle(bytes) {
    return bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;
  },

  scan: (bytes) => scan(bytes),
  scanMetadata: (bytes) => scan(bytes, true),

  read(bytes, layout): RawXmp {
    const packets: RawXmpPacket[] = [];
    const extendedChunks: ExtendedXmpChunk[] = [];
    let total = 0;
    for (const segment of layout.segments) {
      if (segment.kind !== 'xmp') continue;
      total += segment.length;
      if (total > MAX_XMP_BYTES + 2 * 65536) throw new InvalidXmpError(`more than ${MAX_XMP_BYTES} bytes of XMP`);
      if (isStandardXmp(bytes, segment)) packets.push(readPacket(bytes, segment));
      else extendedChunks.push(readExtendedChunk(bytes, segment));
    }
    return { packets, extendedChunks, warnings: [], misplaced: false };
  },

  write(bytes, layout, xmp) {
    const standard = standardSegment(xmp.packet);
    const replaced = xmp.extended?.replaces;
    const extension = xmp.extended ? extensionSegments(xmp.extended.guid, xmp.extended.data) : [];

    const existing = layout.segments.filter((s) => s.kind === 'xmp' && isStandardXmp(bytes, s));
    // The new standard segment (and any new extension segments after it) takes
    // the place of the existing one, or goes to the canonical insertion point.
    const anchor = existing[0]?.offset ?? insertionOffset(bytes, layout);
    const drop = new Set<number>(existing.map((s) => s.offset));
    const extensions = layout.segments.filter((s) => s.kind === 'xmp' && isExtendedXmp(bytes, s));
    if (replaced !== undefined) {
      for (const segment of extensions) if (readExtendedChunk(bytes, segment).guid === replaced) drop.add(segment.offset);
    }
    // Extension segments kept as they are but lying before the standard one
    // move behind it, byte for byte: readers that take the first XMP segment
    // they meet (libvips) must meet the standard packet.
    const earlier = extensions.filter((s) => s.offset < anchor && !drop.has(s.offset));
    for (const segment of earlier) drop.add(segment.offset);
    const moved = earlier.map((s) => bytes.subarray(s.offset, s.offset + s.length));
    const pieces = splice(bytes, layout, drop, anchor, [standard, ...extension, ...moved]);
    // An AFCP trailer's offsets change with the file's length: those files are built whole, the offsets shifted.
    return layout.afcp.length > 0 ? [build(bytes, layout, pieces)] : views(bytes, pieces);
  },

  remove(bytes, layout) {
    const drop = new Set(layout.segments.filter((s) => s.kind === 'xmp').map((s) => s.offset));
    return build(bytes, layout, splice(bytes, layout, drop, -1, []));
  },
});

/** The file's pieces, leaving out the blocks at `drop` and putting `insert` at `anchor`. */
function splice(bytes: Uint8Array, layout: JpegLayout, drop: Set<number>, anchor: number, insert: Uint8Array[]): Piece[] {
  const pieces: Piece[] = [];
  let copyFrom = 0;
  const flush = (to: number): void => {
    if (to > copyFrom) pieces.push({ from: copyFrom, to });
  };
  let inserted = anchor < 0;
  for (const block of layout.blocks) {
    if (!inserted && block.offset === anchor) {
      flush(block.offset);
      pieces.push(...insert);
      copyFrom = block.offset;
      inserted = true;
    }
    if (drop.has(block.offset)) {
      flush(block.offset);
      copyFrom = block.offset + block.length;
    }
  }
  flush(bytes.length);
  if (!inserted) throw new Error(`internal: JPEG insertion point ${anchor} is not a block boundary`);
  return pieces;
}

/** The new file built from its pieces, with the offsets an AFCP trailer holds moved along. */
function build(bytes: Uint8Array, layout: JpegLayout, pieces: readonly Piece[]): Uint8Array {
  const out = assemble(bytes, pieces);
  // Everything after the scan moved by the change in length: so do the offsets an AFCP trailer holds.
  if (layout.afcp.length > 0) shiftAfcpOffsets(bytes, out, layout.afcp, out.length - bytes.length);
  return out;
}
