import { createHash } from 'node:crypto';
import * as zlib from 'node:zlib';

/** SHA-256 as 64 lowercase hex characters. */
export function sha256Hex(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** MD5 as 32 uppercase hex characters: the form of an Extended XMP GUID. */
export function md5HexUpper(bytes: Uint8Array): string {
  return createHash('md5').update(bytes).digest('hex').toUpperCase();
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function tableCrc32(bytes: Uint8Array, previous = 0): number {
  let c = ~previous >>> 0;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

/**
 * CRC-32 (ISO 3309, as PNG uses it). node:zlib has a native crc32 from Node
 * 20.15; earlier Node 20 releases fall back to the table version.
 */
const nativeCrc32 = (zlib as { crc32?: (data: Uint8Array, value?: number) => number }).crc32;
export const crc32: (bytes: Uint8Array, previous?: number) => number =
  typeof nativeCrc32 === 'function' ? (bytes, previous = 0) => nativeCrc32(bytes, previous) : tableCrc32;

/** Exposed for the test that holds the fallback to the native result. */
export const crc32Fallback = tableCrc32;
