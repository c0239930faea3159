/**
 * Lies told in header fields, per format: a JPEG frame size and the end of
 * the scan data; PNG IHDR fields, a stored CRC and bytes after IEND; the
 * RIFF size, VP8X flags and canvas, padding, and the VP8/VP8L frame header.
 * `kind` picks the field and `value` what goes in it.
 */
import type { Parts } from './containers.js';
import { LENGTH_LIES, lie } from './embed-xmp.js';

export function applyField(parts: Parts, kind: number, value: number): void {
  if (parts.format === 'jpeg') jpegField(parts, kind, value);
  else if (parts.format === 'png') pngField(parts, kind, value);
  else webpField(parts, kind, value);
}

function jpegField(parts: Extract<Parts, { format: 'jpeg' }>, kind: number, value: number): void {
  const sof = parts.segments.find((s) => s.marker >= 0xc0 && s.marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(s.marker));
  const tail = parts.tail;
  switch (kind % 6) {
    case 0:
    case 1:
      if (sof && sof.payload.length >= 5) {
        const payload = Buffer.from(sof.payload);
        payload.writeUInt16BE(value & 0xffff, kind % 6 === 0 ? 3 : 1);
        sof.payload = payload;
      }
      return;
    case 2: // the EOI marker, or more, cut off
      parts.tail = tail.subarray(0, Math.max(0, tail.length - 1 - (value % 4)));
      return;
    case 3: // data after EOI: a trailer, or another image's start
      parts.tail = Buffer.concat([tail, value % 2 ? Buffer.from([0xff, 0xd8, 0xff, 0xe1, 0, 4, 0, 0]) : Buffer.alloc(value % 64, 0xff)]);
      return;
    case 4: {
      // a marker inside the entropy-coded data
      const at = tail.length ? value % tail.length : 0;
      parts.tail = Buffer.concat([tail.subarray(0, at), Buffer.from([0xff, (value >>> 8) & 0xff]), tail.subarray(at)]);
      return;
    }
    default:
      parts.tail = tail.subarray(0, tail.length ? value % tail.length : 0);
  }
}

function pngField(parts: Extract<Parts, { format: 'png' }>, kind: number, value: number): void {
  const ihdr = parts.chunks.find((c) => c.type === 'IHDR');
  const field = kind % 9;
  if (field < 7 && ihdr && ihdr.data.length >= 13) {
    // width, height, then bit depth, colour type, compression, filter, interlace
    const data = Buffer.from(ihdr.data);
    if (field < 2) data.writeUInt32BE(value >>> 0, field * 4);
    else data[6 + field] = value & 0xff;
    ihdr.data = data;
  } else if (field === 7 && parts.chunks.length) {
    parts.chunks[value % parts.chunks.length]!.crcLie = (value * 2654435761) >>> 0;
  } else if (field === 8) {
    parts.trailer = Buffer.concat([parts.trailer, Buffer.alloc(1 + (value % 32), value & 0xff)]);
  }
}

function webpField(parts: Extract<Parts, { format: 'webp' }>, kind: number, value: number): void {
  const vp8x = parts.chunks[0]?.fourcc === 'VP8X' ? parts.chunks[0] : undefined;
  const chunk = parts.chunks.length ? parts.chunks[value % parts.chunks.length] : undefined;
  switch (kind % 8) {
    case 0:
      parts.riffSize = lie(0, LENGTH_LIES[value % LENGTH_LIES.length]!) || value;
      return;
    case 1:
    case 2:
    case 3:
      // flags, canvas width - 1, canvas height - 1
      if (vp8x && vp8x.data.length >= 10) {
        const data = Buffer.from(vp8x.data);
        if (kind % 8 === 1) data[0] = data[0]! ^ (value & 0xff);
        else data.writeUIntLE(value & 0xffffff, kind % 8 === 2 ? 4 : 7, 3);
        vp8x.data = data;
      }
      return;
    case 4:
      if (chunk) chunk.pad = Buffer.alloc(0);
      return;
    case 5:
      if (chunk) chunk.pad = Buffer.from([1 + (value % 255)]);
      return;
    case 6:
      parts.trailing = Buffer.concat([parts.trailing, Buffer.alloc(1 + (value % 9), value & 0xff)]);
      return;
    default:
      if (chunk && (chunk.fourcc === 'VP8 ' || chunk.fourcc === 'VP8L') && chunk.data.length >= 10) {
        const data = Buffer.from(chunk.data);
        data[chunk.fourcc === 'VP8 ' ? 6 + (value % 4) : 1 + (value % 4)] = (value >>> 8) & 0xff;
        chunk.data = data;
      }
  }
}
