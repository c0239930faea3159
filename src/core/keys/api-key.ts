/**
 * API key format: `omk_` + 32 base62 characters (190 bits of randomness) +
 * 6 base62 characters of CRC-32 checksum over the rest, as GitHub's tokens
 * do: secret scanners can recognise a key and check it without a database,
 * and we can refuse a mistyped key before any lookup. "_" is not a base62
 * character, so a double click selects the whole key.
 *
 * Keys are stored only as their SHA-256 digest. Randomness is injected.
 */
import { createHash } from 'node:crypto';
import { crc32 } from '../bytes/digest.js';

export const API_KEY_PREFIX = 'omk_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SECRET_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const PATTERN = new RegExp(`^${API_KEY_PREFIX}[0-9A-Za-z]{${SECRET_LENGTH + CHECKSUM_LENGTH}}$`);
/** Characters of the key shown in listings, so people can tell keys apart. */
export const VISIBLE_PREFIX_LENGTH = API_KEY_PREFIX.length + 6;

function base62(value: number, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = BASE62[value % 62] + out;
    value = Math.floor(value / 62);
  }
  return out;
}

function checksum(body: string): string {
  return base62(crc32(Buffer.from(body, 'latin1')), CHECKSUM_LENGTH);
}

/** `count` uniform base62 characters from a source of random bytes (rejection sampling, no bias). */
export function randomBase62(count: number, randomBytes: (n: number) => Uint8Array): string {
  let out = '';
  while (out.length < count) {
    for (const byte of randomBytes(count * 2)) {
      if (byte < 248 && out.length < count) out += BASE62[byte % 62];
    }
  }
  return out;
}

export function generateApiKey(randomBytes: (n: number) => Uint8Array): string {
  const body = API_KEY_PREFIX + randomBase62(SECRET_LENGTH, randomBytes);
  return body + checksum(body);
}

/** True when the string has the key layout and its checksum holds. */
export function isWellFormedApiKey(candidate: string): boolean {
  if (!PATTERN.test(candidate)) return false;
  const body = candidate.slice(0, -CHECKSUM_LENGTH);
  return checksum(body) === candidate.slice(-CHECKSUM_LENGTH);
}

export function apiKeyDigest(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

export function visiblePrefix(key: string): string {
  return key.slice(0, VISIBLE_PREFIX_LENGTH);
}
