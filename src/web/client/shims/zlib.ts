/**
 * What the shared container code asks of node:zlib, in the browser (the
 * bundle maps node:zlib here): PNG's CRC-32, and inflating a compressed
 * text chunk (fflate).
 */
import { unzlibSync } from 'fflate';

const TABLE = new Uint32Array(256).map((_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

export function crc32(bytes: Uint8Array, previous = 0): number {
  let c = ~previous >>> 0;
  for (let i = 0; i < bytes.length; i++) c = TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

export function inflateSync(bytes: Uint8Array): Uint8Array {
  return unzlibSync(bytes);
}
