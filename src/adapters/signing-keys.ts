/**
 * The deployment's Ed25519 key ring, in one JSON file (mode 0600): the active
 * signing key, and the public halves of retired keys so that tags signed
 * before a rotation stay verifiable. Created with one key on first use.
 * Several servers can share the file (OPTMARK_SIGNING_KEYS); each notices a
 * rotation within a second.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject } from 'node:crypto';
import { WatchedJsonFile } from './private-file.js';

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

/** The ring as used: the file, the active private key and every public key, parsed once per change. */
interface Ring {
  readonly file: KeyRingFile;
  readonly active: { readonly kid: string; readonly privateKey: KeyObject };
  readonly publicKeys: ReadonlyMap<string, KeyObject>;
}

function parseRing(json: unknown, path: string): Ring {
  const file = json as KeyRingFile;
  const active = file.keys?.find((k) => k.kid === file.active);
  if (file.version !== 1 || !active?.privateKey) throw new Error(`${path} is not an optmark key ring with an active key`);
  return {
    file,
    active: { kid: active.kid, privateKey: createPrivateKey(active.privateKey) },
    publicKeys: new Map(file.keys.map((k) => [k.kid, createPublicKey({ key: k.publicJwk, format: 'jwk' })])),
  };
}

export class SigningKeys {
  private constructor(private readonly ring: WatchedJsonFile<Ring>) {}

  /** The file the keys live in. */
  get path(): string {
    return this.ring.path;
  }

  /** Open the key ring at `path`, creating it with one key when it does not exist. */
  static open(path: string, now: Date = new Date()): SigningKeys {
    return new SigningKeys(
      WatchedJsonFile.open(path, parseRing, () => {
        const first = newKey(now);
        return { version: 1, active: first.kid, keys: [first] } satisfies KeyRingFile;
      }),
    );
  }

  /** Open an existing key ring; undefined when there is none at `path`. */
  static openExisting(path: string): SigningKeys | undefined {
    const ring = WatchedJsonFile.openExisting(path, parseRing);
    return ring && new SigningKeys(ring);
  }

  get active(): { readonly kid: string; readonly privateKey: KeyObject } {
    return this.ring.current.active;
  }

  publicKey(kid: string): KeyObject | undefined {
    return this.ring.current.publicKeys.get(kid);
  }

  /** The public keys, active and retired, as a JWKS (RFC 7517). */
  jwks(): { keys: PublicJwk[] } {
    return { keys: this.ring.current.file.keys.map((k) => ({ ...k.publicJwk, kid: k.kid, alg: 'EdDSA', use: 'sig' })) };
  }

  list(): KeyInfo[] {
    const { file } = this.ring.current;
    return file.keys.map((k) => ({ kid: k.kid, createdAt: k.createdAt, retiredAt: k.retiredAt, active: k.kid === file.active }));
  }

  /** Make a new active key; the old one is retired and keeps only its public half. */
  rotate(now: Date = new Date()): KeyInfo {
    const { file } = this.ring.reload();
    const next = newKey(now);
    const keys = file.keys.map((k) => (k.kid === file.active ? { kid: k.kid, createdAt: k.createdAt, retiredAt: now.toISOString(), publicJwk: k.publicJwk } : k));
    this.ring.replace({ version: 1, active: next.kid, keys: [...keys, next] } satisfies KeyRingFile);
    return { kid: next.kid, createdAt: next.createdAt, retiredAt: null, active: true };
  }
}
