/**
 * The deployment's Private Vault key, in one JSON file (mode 0600) kept
 * with the other key files (OPTMARK_VAULT_KEYS, default
 * DATA_DIR/vault-keys.json), by version: the newest names and seals new
 * objects; an older version stays in the file only while objects sealed
 * under it remain (a rotation re-seals them and then drops it: see
 * app/vault/rotation.ts). Created with one key on first use; shared by
 * servers like the signing key ring. Losing the file loses every file in
 * the vault: back it up with the database and the blobs (docs/operations.md).
 */
import { randomBytes } from 'node:crypto';
import type { VaultKey, VaultKeyRing } from '../app/vault/ports.js';
import { WatchedJsonFile } from './private-file.js';

interface StoredKey {
  readonly version: number;
  readonly createdAt: string;
  /** 32 random bytes, base64. */
  readonly key: string;
}

interface KeysFile {
  readonly format: 'optmark-vault-keys';
  /** Newest first: the first seals. */
  readonly keys: readonly StoredKey[];
}

interface Keys {
  readonly file: KeysFile;
  readonly decoded: readonly VaultKey[];
}

function parseKeys(json: unknown): Keys {
  const file = json as Partial<KeysFile> | null;
  if (typeof file !== 'object' || file === null || Array.isArray(file) || file.format !== 'optmark-vault-keys') {
    throw new Error('is not an optmark vault key file (it needs "format": "optmark-vault-keys")');
  }
  if (!Array.isArray(file.keys) || file.keys.length === 0) throw new Error('has no keys (its "keys" list is missing or empty)');
  for (const [i, k] of file.keys.entries()) {
    const version = (k as Partial<StoredKey> | null)?.version;
    if (!Number.isInteger(version) || version! <= 0) throw new Error(`has a key (number ${i + 1}) whose version is not a positive whole number`);
    if (typeof k.key !== 'string' || Buffer.from(k.key, 'base64').length !== 32) throw new Error(`has a version ${version} whose key is not 32 bytes in base64`);
  }
  const keys = [...file.keys].sort((a, b) => b.version - a.version);
  return { file: { format: 'optmark-vault-keys', keys }, decoded: keys.map((k) => ({ version: k.version, key: Buffer.from(k.key, 'base64') })) };
}

const KIND = 'vault key file';
const fresh = (version: number, now: Date): StoredKey => ({ version, createdAt: now.toISOString(), key: randomBytes(32).toString('base64') });

export interface VaultKeyInfo {
  readonly version: number;
  readonly createdAt: string;
  readonly active: boolean;
}

export class VaultKeys implements VaultKeyRing {
  private constructor(private readonly keys: WatchedJsonFile<Keys>) {}

  get path(): string {
    return this.keys.path;
  }

  /** Whether open() created the file rather than finding it. */
  get created(): boolean {
    return this.keys.created;
  }

  /**
   * Open the file at `path`, creating it with one key when it does not exist.
   * @throws InvalidKeyFileError when the file exists and is not a vault key file
   */
  static open(path: string, now: Date = new Date()): VaultKeys {
    return new VaultKeys(WatchedJsonFile.open(path, KIND, parseKeys, () => ({ format: 'optmark-vault-keys', keys: [fresh(1, now)] }) satisfies KeysFile));
  }

  /** Open an existing file; undefined when there is none. */
  static openExisting(path: string): VaultKeys | undefined {
    const keys = WatchedJsonFile.openExisting(path, KIND, parseKeys);
    return keys && new VaultKeys(keys);
  }

  get active(): VaultKey {
    return this.keys.current.decoded[0]!;
  }

  version(version: number): VaultKey | undefined {
    return this.keys.current.decoded.find((k) => k.version === version);
  }

  versions(): number[] {
    return this.keys.current.decoded.map((k) => k.version);
  }

  list(): VaultKeyInfo[] {
    return this.keys.current.file.keys.map((k, i) => ({ version: k.version, createdAt: k.createdAt, active: i === 0 }));
  }

  /** Add a new newest version, which seals from now on; older ones still open what they sealed. */
  rotate(now: Date = new Date()): VaultKeyInfo {
    const { file } = this.keys.reload();
    const next = fresh(file.keys[0]!.version + 1, now);
    this.keys.replace({ ...file, keys: [next, ...file.keys] } satisfies KeysFile);
    return { version: next.version, createdAt: next.createdAt, active: true };
  }

  /** Drop every version but the active one (once nothing sealed under them remains). */
  dropOlder(): number[] {
    const { file } = this.keys.reload();
    const dropped = file.keys.slice(1).map((k) => k.version);
    if (dropped.length > 0) this.keys.replace({ ...file, keys: [file.keys[0]!] } satisfies KeysFile);
    return dropped;
  }
}
