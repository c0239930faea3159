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

/** The ring as found, or an Error saying what is wrong with it (completed by InvalidKeyFileError: "the signing key file PATH ..."). */
function parseRing(json: unknown): Ring {
  const file = json as Partial<KeyRingFile> | null;
  if (typeof file !== 'object' || file === null || Array.isArray(file) || file.version !== 1 || !Array.isArray(file.keys)) {
    throw new Error('is not an optmark signing key ring (it needs "version": 1 and a "keys" list)');
  }
  const active = file.keys.find((k) => k?.kid === file.active);
  if (!active) throw new Error('has no active key (no key has the "active" kid)');
  if (typeof active.privateKey !== 'string') throw new Error(`has no private key for its active key ${active.kid}`);
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(active.privateKey);
  } catch (error) {
    throw new Error(`has an active key ${active.kid} whose private key cannot be read (${(error as Error).message})`);
  }
  const publicKeys = new Map<string, KeyObject>();
  for (const k of file.keys) {
    try {
      publicKeys.set(k.kid, createPublicKey({ key: k.publicJwk, format: 'jwk' }));
    } catch (error) {
      throw new Error(`has a key ${String(k?.kid)} whose public key cannot be read (${(error as Error).message})`);
    }
  }
  return { file: file as KeyRingFile, active: { kid: active.kid, privateKey }, publicKeys };
}

const KIND = 'signing key file';

export class SigningKeys {
  private constructor(private readonly ring: WatchedJsonFile<Ring>) {}

  /** The file the keys live in. */
  get path(): string {
    return this.ring.path;
  }

  /** Whether open() created the key ring, with one key, rather than finding it. */
  get created(): boolean {
    return this.ring.created;
  }

  /**
   * Open the key ring at `path`, creating it with one key when it does not exist.
   * @throws InvalidKeyFileError when the file exists and is not a key ring with an active key
   */
  static open(path: string, now: Date = new Date()): SigningKeys {
    return new SigningKeys(
      WatchedJsonFile.open(path, KIND, parseRing, () => {
        const first = newKey(now);
        return { version: 1, active: first.kid, keys: [first] } satisfies KeyRingFile;
      }),
    );
  }

  /**
   * Open an existing key ring; undefined when there is none at `path`.
   * @throws InvalidKeyFileError when the file exists and is not a key ring with an active key
   */
  static openExisting(path: string): SigningKeys | undefined {
    const ring = WatchedJsonFile.openExisting(path, KIND, parseRing);
    return ring && new SigningKeys(ring);
  }

  get active(): { readonly kid: string; readonly privateKey: KeyObject } {
    return this.ring.current.active;
  }

  publicKey(kid: string): KeyObject | undefined {
    return this.ring.current.publicKeys.get(kid);
  }

  /** Every public key of the ring, active and retired, by kid. */
  publicKeys(): ReadonlyMap<string, KeyObject> {
    return this.ring.current.publicKeys;
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
