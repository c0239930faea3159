/**
 * The deployment's Ed25519 key ring, in one JSON file (mode 0600): the active
 * signing key, and the public halves of retired keys so that tags signed
 * before a rotation stay verifiable. Created with one key on first use.
 * Several servers can share the file (OPTMARK_SIGNING_KEYS); each notices a
 * rotation within a second.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { loadIfExists, loadOrCreate, writePrivateJson } from './exclusive-file.js';

interface StoredKey {
  readonly kid: string;
  readonly createdAt: string;
  readonly retiredAt: string | null;
  readonly publicJwk: JsonWebKey;
  /** PKCS#8 PEM; only the active key keeps it. */
  readonly privateKey?: string;
}

interface KeyRingFile {
  readonly version: 1;
  readonly active: string;
  readonly keys: readonly StoredKey[];
}

export interface PublicJwk extends JsonWebKey {
  readonly kid: string;
  readonly alg: 'EdDSA';
  readonly use: 'sig';
}

export interface KeyInfo {
  readonly kid: string;
  readonly createdAt: string;
  readonly retiredAt: string | null;
  readonly active: boolean;
}

/** RFC 7638 thumbprint of an Ed25519 public JWK: the key id. */
function thumbprint(jwk: JsonWebKey): string {
  return createHash('sha256').update(JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x })).digest('base64url');
}

function newKey(now: Date): StoredKey {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const publicJwk = publicKey.export({ format: 'jwk' });
  return {
    kid: thumbprint(publicJwk),
    createdAt: now.toISOString(),
    retiredAt: null,
    publicJwk,
    privateKey: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
  };
}

/** Write through a temporary file and a rename, with owner-only permissions. */
function writeRing(path: string, ring: KeyRingFile, exclusive = false): void {
  writePrivateJson(path, ring, exclusive ? 'create' : 'replace');
}

export class SigningKeys {
  private publicKeys = new Map<string, KeyObject>();
  private activeKey!: { kid: string; privateKey: KeyObject };
  private ring!: KeyRingFile;
  private mtimeMs = 0;
  private checkedAt = 0;

  private constructor(readonly path: string) {}

  /** Open the key ring at `path`, creating it with one key when it does not exist. */
  static open(path: string, now: Date = new Date()): SigningKeys {
    const keys = new SigningKeys(path);
    loadOrCreate(
      () => keys.load(),
      () => {
        const first = newKey(now);
        writeRing(path, { version: 1, active: first.kid, keys: [first] }, true);
      },
    );
    return keys;
  }

  /** Open an existing key ring; undefined when there is none at `path`. */
  static openExisting(path: string): SigningKeys | undefined {
    const keys = new SigningKeys(path);
    return loadIfExists(() => keys.load()) ? keys : undefined;
  }

  private load(): void {
    const ring = JSON.parse(readFileSync(this.path, 'utf8')) as KeyRingFile;
    const active = ring.keys.find((k) => k.kid === ring.active);
    if (ring.version !== 1 || !active?.privateKey) throw new Error(`${this.path} is not an optmark key ring with an active key`);
    this.publicKeys = new Map(ring.keys.map((k) => [k.kid, createPublicKey({ key: k.publicJwk, format: 'jwk' })]));
    this.activeKey = { kid: active.kid, privateKey: createPrivateKey(active.privateKey) };
    this.ring = ring;
    this.mtimeMs = statSync(this.path).mtimeMs;
  }

  /** Re-read the file if it changed (looked at most once a second). */
  private refresh(): void {
    const now = Date.now();
    if (now - this.checkedAt < 1000) return;
    this.checkedAt = now;
    try {
      if (statSync(this.path).mtimeMs !== this.mtimeMs) this.load();
    } catch {
      // Keep the keys we have; a broken or missing file must not stop signing.
    }
  }

  get active(): { readonly kid: string; readonly privateKey: KeyObject } {
    this.refresh();
    return this.activeKey;
  }

  publicKey(kid: string): KeyObject | undefined {
    this.refresh();
    return this.publicKeys.get(kid);
  }

  /** The public keys, active and retired, as a JWKS (RFC 7517). */
  jwks(): { keys: PublicJwk[] } {
    this.refresh();
    return { keys: this.ring.keys.map((k) => ({ ...k.publicJwk, kid: k.kid, alg: 'EdDSA', use: 'sig' })) };
  }

  list(): KeyInfo[] {
    this.refresh();
    return this.ring.keys.map((k) => ({ kid: k.kid, createdAt: k.createdAt, retiredAt: k.retiredAt, active: k.kid === this.ring.active }));
  }

  /** Make a new active key; the old one is retired and keeps only its public half. */
  rotate(now: Date = new Date()): KeyInfo {
    this.load();
    const next = newKey(now);
    const keys = this.ring.keys.map((k) => (k.kid === this.ring.active ? { kid: k.kid, createdAt: k.createdAt, retiredAt: now.toISOString(), publicJwk: k.publicJwk } : k));
    writeRing(this.path, { version: 1, active: next.kid, keys: [...keys, next] });
    this.load();
    return { kid: next.kid, createdAt: next.createdAt, retiredAt: null, active: true };
  }
}
