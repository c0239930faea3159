import { createHash } from 'node:crypto';
import * as zlib from 'node:zlib';

/** SHA-256 as 64 lowercase hex characters (of the parts put together, when given parts). */
export function sha256Hex(bytes: Uint8Array | string | readonly Uint8Array[]): string {
  if (typeof bytes === 'string' || bytes instanceof Uint8Array) return createHash('sha256').update(bytes).digest('hex');
  const hash = createHash('sha256');
  for (const part of bytes) hash.update(part);
  return hash.digest('hex');
}

/** MD5 as 32 uppercase hex characters: the form of an Extended XMP GUID. */
export function md5HexUpper(bytes: Uint8Array): string {
  return createHash('md5').update(bytes).digest('hex').toUpperCase();
}

/** CRC-32 (ISO 3309, as PNG uses it), native in node:zlib. */
export function crc32(bytes: Uint8Array, previous = 0): number {
  return zlib.crc32(bytes, previous);
}
