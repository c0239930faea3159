/**
 * Reading a seed's XMP packet out of its parts and putting a (mutated)
 * packet back in, in the canonical place or in one readers argue about;
 * and JPEG Extended XMP: building parts for a packet, and editing the
 * GUID, length and offset fields of existing parts.
 */
import { deflateSync } from 'node:zlib';
import { EXTENSION_SIGNATURE, XMP_SIGNATURE, u32be } from '../support/build.js';
import { pngChunk, type JpegParts, type JpegSegment, type Parts, type PngParts, type WebpParts } from './containers.js';

const APP1 = 0xe1;
const EXTENSION_HEADER = EXTENSION_SIGNATURE.length + 32 + 8;
const PNG_KEYWORD = 'XML:com.adobe.xmp\0';
const VP8X_XMP_FLAG = 0x04;

const startsWith = (data: Buffer, text: string) => data.subarray(0, text.length).toString('latin1') === text;
const isStandardApp1 = (s: JpegSegment) => s.marker === APP1 && startsWith(s.payload, XMP_SIGNATURE);
export const isExtensionApp1 = (s: JpegSegment) => s.marker === APP1 && startsWith(s.payload, EXTENSION_SIGNATURE);

/** The seed's first standard packet as text, if it has one we can read simply. */
export function existingPacket(parts: Parts): string | undefined {
  if (parts.format === 'jpeg') return parts.segments.find(isStandardApp1)?.payload.subarray(XMP_SIGNATURE.length).toString('utf8');
  if (parts.format === 'png') {
    const chunk = parts.chunks.find((c) => c.type === 'iTXt' && startsWith(c.data, PNG_KEYWORD) && c.data[PNG_KEYWORD.length] === 0);
    if (!chunk) return undefined;
    let at = PNG_KEYWORD.length + 2;
    for (let field = 0; field < 2; field++) at = chunk.data.indexOf(0, at) + 1;
    return at > 0 ? chunk.data.subarray(at).toString('utf8') : undefined;
  }
  return parts.chunks.find((c) => c.fourcc === 'XMP ')?.data.toString('utf8');
}

/** Text to bytes; `encoding` above 5 picks one of the odd ones real files or attackers use. */
export function encodePacket(text: string, encoding: number): Buffer {
  switch (encoding % 10) {
    case 6:
      return Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    case 7:
      return Buffer.from(text, 'utf16le').swap16();
    case 8: {
      const bytes = Buffer.from(text, 'utf8');
      const at = bytes.length >> 1;
      return Buffer.concat([bytes.subarray(0, at), Buffer.from([0xc3, 0x28, 0xff]), bytes.subarray(at)]);
    }
    case 9:
      return Buffer.from(text, 'latin1');
    default:
      return Buffer.from(text, 'utf8');
  }
}

/** Put `packet` into the parts; `placement` chooses where (0 = where a writer would). */
export function embedPacket(parts: Parts, packet: Buffer, placement: number): void {
  if (parts.format === 'jpeg') embedJpeg(parts, packet, placement);
  else if (parts.format === 'png') embedPng(parts, packet, placement);
  else embedWebp(parts, packet, placement);
}

function embedJpeg(parts: JpegParts, packet: Buffer, placement: number): void {
  const signature = placement % 6 === 4 ? XMP_SIGNATURE.replace('\0', ' ') : XMP_SIGNATURE;
  const segment: JpegSegment = { marker: APP1, payload: Buffer.concat([Buffer.from(signature, 'latin1'), packet]) };
  const list = parts.segments;
  const existing = list.findIndex(isStandardApp1);
  switch (placement % 6) {
    case 1:
      list.unshift(segment);
      return;
    case 2:
      list.splice(existing >= 0 ? existing + 1 : 0, 0, segment);
      return;
    case 3: {
      const sos = list.findIndex((s) => s.marker === 0xda);
      list.splice(sos >= 0 ? sos : list.length, 0, segment);
      return;
    }
    default: {
      if (existing >= 0) {
        list[existing] = segment;
        return;
      }
      let at = 0;
      while (at < list.length && (list[at]!.marker === 0xe0 || (list[at]!.marker === APP1 && startsWith(list[at]!.payload, 'Exif\0')))) at++;
      list.splice(at, 0, segment);
    }
  }
}

function isXmpChunk(type: string, data: Buffer): boolean {
  return ['iTXt', 'zTXt', 'tEXt'].includes(type) && startsWith(data, PNG_KEYWORD);
}

function embedPng(parts: PngParts, packet: Buffer, placement: number): void {
  const keyword = Buffer.from(PNG_KEYWORD, 'latin1');
  const variants = [
    () => pngChunk('iTXt', Buffer.concat([keyword, Buffer.from([0, 0, 0, 0]), packet])),
    () => pngChunk('iTXt', Buffer.concat([keyword, Buffer.from([1, 0, 0, 0]), deflateSync(packet)])),
    () => pngChunk('zTXt', Buffer.concat([keyword, Buffer.from([0]), deflateSync(packet)])),
    () => pngChunk('tEXt', Buffer.concat([keyword, packet])),
    () => pngChunk('iTXt', Buffer.concat([keyword, Buffer.from([0, 0]), Buffer.from('en\0XMP\0', 'latin1'), packet])),
  ];
  const chunk = variants[Math.floor(placement / 4) % variants.length]!();
  const list = parts.chunks;
  const existing = list.findIndex((c) => isXmpChunk(c.type, c.data));
  switch (placement % 4) {
    case 1:
      list.splice(Math.max(0, list.length - 1), 0, chunk);
      return;
    case 2:
      list.splice(existing >= 0 ? existing + 1 : Math.min(1, list.length), 0, chunk);
      return;
    case 3:
      list.unshift(chunk);
      return;
    default:
      if (existing >= 0) list[existing] = chunk;
      else list.splice(Math.min(1, list.length), 0, chunk);
  }
}

function embedWebp(parts: WebpParts, packet: Buffer, placement: number): void {
  const list = parts.chunks;
  const chunk = { fourcc: placement % 6 === 1 ? 'XMP\0' : 'XMP ', data: packet };
  const existing = list.findIndex((c) => c.fourcc === 'XMP ' || c.fourcc === 'XMP\0');
  const vp8x = list[0]?.fourcc === 'VP8X' ? list[0] : undefined;
  if (vp8x && vp8x.data.length > 0) {
    const data = Buffer.from(vp8x.data);
    data[0] = placement % 6 === 4 ? data[0]! & ~VP8X_XMP_FLAG : data[0]! | VP8X_XMP_FLAG;
    vp8x.data = data;
  }
  switch (placement % 6) {
    case 2:
      list.splice(existing >= 0 ? existing + 1 : list.length, 0, chunk);
      return;
    case 3:
      list.unshift(chunk);
      return;
    case 5:
      list.push(chunk);
      return;
    default:
      if (existing >= 0) list[existing] = chunk;
      else list.push(chunk);
  }
}


/** APP1 segments carrying `data` as Extended XMP under `guid`, `chunk` bytes each. */
export function extensionSegments(guid: string, data: Buffer, chunk: number): JpegSegment[] {
  const out: JpegSegment[] = [];
  for (let offset = 0; offset < data.length || offset === 0; offset += chunk) {
    const header = Buffer.concat([Buffer.from(EXTENSION_SIGNATURE + guid, 'latin1'), u32be(data.length), u32be(offset)]);
    out.push({ marker: APP1, payload: Buffer.concat([header, data.subarray(offset, offset + chunk)]) });
    if (data.length === 0) break;
  }
  return out;
}

/** Put Extended XMP parts into the file: after the standard packet, before it, before SOS, or reversed. */
export function placeExtension(parts: JpegParts, segments: JpegSegment[], place: number): void {
  const list = parts.segments;
  const standard = list.findIndex(isStandardApp1);
  const sos = list.findIndex((s) => s.marker === 0xda);
  switch (place % 4) {
    case 1:
      list.splice(Math.max(0, standard), 0, ...segments);
      return;
    case 2:
      list.splice(sos >= 0 ? sos : list.length, 0, ...segments);
      return;
    case 3:
      list.splice(standard + 1, 0, ...segments.reverse());
      return;
    default:
      list.splice(standard + 1, 0, ...segments);
  }
}

export interface PartEdit {
  part: number;
  kind: number;
  value: number;
}

export const LENGTH_LIES = [0, 1, 2, 0x7fff, 0xffff, 0x3fffffff, 0x7fffffff, 0xffffffff, 'actual+1', 'actual-1'] as const;
export type LengthLie = (typeof LENGTH_LIES)[number];

export function lie(actual: number, choice: LengthLie): number {
  if (choice === 'actual+1') return actual + 1;
  if (choice === 'actual-1') return Math.max(0, actual - 1);
  return choice;
}

/** Edit one Extended XMP part: its GUID, declared full length or offset, data, or its presence and order. */
export function editExtensionPart(parts: JpegParts, edit: PartEdit): void {
  const indexes = parts.segments.flatMap((s, i) => (isExtensionApp1(s) ? [i] : []));
  if (indexes.length === 0) return;
  const index = indexes[edit.part % indexes.length]!;
  const segment = parts.segments[index]!;
  const payload = Buffer.from(segment.payload);
  const guidAt = EXTENSION_SIGNATURE.length;
  const field = (at: number) => (payload.length >= at + 4 ? payload.readUInt32BE(at) : 0);
  switch (edit.kind % 13) {
    case 0:
      payload.write(payload.subarray(guidAt, guidAt + 32).toString('latin1').toLowerCase(), guidAt, 'latin1');
      break;
    case 1:
      if (payload.length > guidAt + 32) payload[guidAt + (edit.value % 32)] = '0123456789ABCDEFG'.charCodeAt(edit.value % 17);
      break;
    case 2:
      segment.payload = Buffer.concat([payload.subarray(0, guidAt + 31), payload.subarray(guidAt + 32)]);
      return;
    case 3:
      if (payload.length >= EXTENSION_HEADER) payload.writeUInt32BE(lie(field(guidAt + 32), LENGTH_LIES[edit.value % LENGTH_LIES.length]!) >>> 0, guidAt + 32);
      break;
    case 4:
      if (payload.length >= EXTENSION_HEADER) payload.writeUInt32BE(lie(field(guidAt + 36), LENGTH_LIES[edit.value % LENGTH_LIES.length]!) >>> 0, guidAt + 36);
      break;
    case 5:
      if (payload.length > EXTENSION_HEADER) payload[EXTENSION_HEADER + (edit.value % (payload.length - EXTENSION_HEADER))]! ^= 0x20;
      break;
    case 6:
      segment.payload = payload.subarray(0, Math.max(0, payload.length - 1 - (edit.value % 64)));
      return;
    case 7:
      segment.payload = payload.subarray(0, edit.value % EXTENSION_HEADER);
      return;
    case 8:
      parts.segments.splice(index, 1);
      return;
    case 9:
      parts.segments.splice(index, 0, { ...segment });
      return;
    case 10: {
      const other = indexes[(edit.part + 1 + edit.value) % indexes.length]!;
      [parts.segments[index], parts.segments[other]] = [parts.segments[other]!, segment];
      return;
    }
    case 11:
      parts.segments.splice(index, 1);
      parts.segments.unshift(segment);
      return;
    default:
      if (payload.length >= EXTENSION_HEADER) payload.writeUInt32BE(8 * 1024 * 1024 + 1, guidAt + 32);
  }
  segment.payload = payload;
}
