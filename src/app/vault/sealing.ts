/**
 * How the vault names and seals what it stores, so that a copied disk or
 * bucket reveals nothing (no file, no hash, no account):
 *
 * - an object's name is HMAC-SHA-256(vault key, account id ‖ SHA-256 of the
 *   file ‖ a random generation), in hexadecimal: the same file of one account
 *   is one object (its row, unique by account and hash), the same file of two
 *   accounts two unrelated ones, and a file removed and kept again gets a
 *   name of its own, so that no removal still under way for the old one
 *   (a check's sweep, a listing of orphans) can reach the new bytes;
 * - its bytes are AES-256-GCM under a key derived from the vault key (HKDF-
 *   SHA-256), with a random 96-bit nonce: `OMV1`, the key's version (4
 *   bytes, big-endian), the nonce, the ciphertext, the 16-byte tag. The
 *   header and the object's name are authenticated with it, so an object
 *   copied under another name, or cut, or changed, does not open.
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import type { VaultKey, VaultKeyRing } from './ports.js';

const MAGIC = Buffer.from('OMV1', 'ascii');
const HEADER = MAGIC.length + 4;
const NONCE = 12;
const TAG = 16;
/** Bytes a sealed object has beyond its plaintext. */
export const SEAL_OVERHEAD = HEADER + NONCE + TAG;

const derived = new WeakMap<Uint8Array, Buffer>();
function contentKey(key: VaultKey): Buffer {
  let made = derived.get(key.key);
  if (!made) {
    made = Buffer.from(hkdfSync('sha256', key.key, Buffer.alloc(0), 'optmark vault contents', 32));
    derived.set(key.key, made);
  }
  return made;
}

/** A new object's name: HMAC-SHA-256(vault key, account id ‖ sha256 ‖ 16 random bytes), hexadecimal. */
export function objectName(key: VaultKey, accountId: string, sha256: string): string {
  return createHmac('sha256', key.key).update(accountId, 'utf8').update(sha256, 'utf8').update(randomBytes(16)).digest('hex');
}

/** What the database keeps of a key to tell it from another of the same version: an HMAC of a fixed text, never the key. */
export function keyFingerprint(key: VaultKey): string {
  return createHmac('sha256', key.key).update('optmark vault key fingerprint', 'utf8').digest('hex').slice(0, 32);
}

function header(version: number): Buffer {
  const bytes = Buffer.alloc(HEADER);
  MAGIC.copy(bytes);
  bytes.writeUInt32BE(version, MAGIC.length);
  return bytes;
}

/** The sealed bytes of `plain`, stored under `name`. */
export function seal(key: VaultKey, name: string, plain: Uint8Array): Buffer {
  const head = header(key.version);
  const nonce = randomBytes(NONCE);
  const cipher = createCipheriv('aes-256-gcm', contentKey(key), nonce);
  cipher.setAAD(Buffer.concat([head, Buffer.from(name, 'utf8')]));
  const body = cipher.update(plain);
  const last = cipher.final();
  return Buffer.concat([head, nonce, body, last, cipher.getAuthTag()], SEAL_OVERHEAD + plain.byteLength);
}

export class SealError extends Error {}

/** The version of the key an object was sealed with. */
export function sealedVersion(sealed: Uint8Array): number {
  const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
  if (bytes.byteLength < SEAL_OVERHEAD || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) throw new SealError('not a sealed vault object');
  return bytes.readUInt32BE(MAGIC.length);
}

/**
 * The plaintext of an object read back from under `name`.
 * @throws SealError when it is not a sealed object, its key version is not in the ring, or it does not authenticate
 */
export function open(keys: VaultKeyRing, name: string, sealed: Uint8Array): Buffer {
  const version = sealedVersion(sealed);
  const key = keys.version(version);
  if (!key) throw new SealError(`sealed under vault key version ${version}, which the key file no longer has`);
  const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
  const nonce = bytes.subarray(HEADER, HEADER + NONCE);
  const decipher = createDecipheriv('aes-256-gcm', contentKey(key), nonce);
  decipher.setAAD(Buffer.concat([bytes.subarray(0, HEADER), Buffer.from(name, 'utf8')]));
  decipher.setAuthTag(bytes.subarray(bytes.byteLength - TAG));
  try {
    return Buffer.concat([decipher.update(bytes.subarray(HEADER + NONCE, bytes.byteLength - TAG)), decipher.final()]);
  } catch {
    throw new SealError('the object does not authenticate (changed, cut, or stored under another name)');
  }
}
