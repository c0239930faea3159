/**
 * The deployment's fingerprint secrets, in one JSON file (mode 0600), by
 * version: the newest marks, and every version still in the file is looked
 * for on verify, so images marked before a rotation stay detectable. Created
 * with one secret on first use; shared by servers like the signing key ring.
 * A version is removed (and no longer detected) only on purpose.
 */
import { randomBytes } from 'node:crypto';
import type { FingerprintSecret } from '../app/fingerprint.js';
import { WatchedJsonFile } from './private-file.js';

export interface FingerprintKeyInfo {
  readonly version: number;
  readonly createdAt: string;
  readonly marking: boolean;
}

interface StoredSecret {
  readonly version: number;
  readonly createdAt: string;
  /** 32 random bytes, base64. */
  readonly secret: string;
}

interface SecretsFile {
  readonly format: 'optmark-fingerprint-keys';
  readonly secrets: readonly StoredSecret[];
}

/** The file as used: its versions newest first, and their secrets decoded once per change (verify reads them on every call). */
interface Secrets {
  readonly file: SecretsFile;
  readonly decoded: readonly FingerprintSecret[];
}

/** The file as found, or an Error saying what is wrong with it (completed by InvalidKeyFileError: "the fingerprint key file PATH ..."). */
function parseSecrets(json: unknown): Secrets {
  const file = json as Partial<SecretsFile> | null;
  if (typeof file !== 'object' || file === null || Array.isArray(file) || file.format !== 'optmark-fingerprint-keys') {
    throw new Error('is not an optmark fingerprint key file (it needs "format": "optmark-fingerprint-keys")');
  }
  if (!Array.isArray(file.secrets) || file.secrets.length === 0) throw new Error('has no secrets (its "secrets" list is missing or empty)');
  for (const [i, s] of file.secrets.entries()) {
    const version = (s as Partial<StoredSecret> | null)?.version;
    if (!Number.isInteger(version) || version! <= 0) throw new Error(`has a secret (number ${i + 1}) whose version is not a positive whole number`);
    if (typeof s.secret !== 'string' || Buffer.from(s.secret, 'base64').length !== 32) throw new Error(`has a version ${version} whose secret is not 32 bytes in base64`);
  }
  const secrets = [...file.secrets].sort((a, b) => b.version - a.version);
  return { file: { ...(file as SecretsFile), secrets }, decoded: secrets.map((s) => ({ version: s.version, secret: Buffer.from(s.secret, 'base64') })) };
}

/** Why remove() refused, with the stable code the CLI reports: no such version, or the version that marks. */
export class FingerprintKeyRemovalError extends Error {
  constructor(
    message: string,
    readonly version: number,
    readonly code: 'fingerprint_key_not_found' | 'fingerprint_key_in_use',
  ) {
    super(message);
  }
}

const KIND = 'fingerprint key file';

const fresh = (version: number, now: Date): StoredSecret => ({ version, createdAt: now.toISOString(), secret: randomBytes(32).toString('base64') });

export class FingerprintKeys {
  private constructor(private readonly secrets: WatchedJsonFile<Secrets>) {}

  /** The file the keys live in. */
  get path(): string {
    return this.secrets.path;
  }

  /** Whether open() created the file, with one secret (version 1), rather than finding it. */
  get created(): boolean {
    return this.secrets.created;
  }

  /**
   * Open the file at `path`, creating it with one secret when it does not exist.
   * @throws InvalidKeyFileError when the file exists and is not a fingerprint key file
   */
  static open(path: string, now: Date = new Date()): FingerprintKeys {
    return new FingerprintKeys(WatchedJsonFile.open(path, KIND, parseSecrets, () => ({ format: 'optmark-fingerprint-keys', secrets: [fresh(1, now)] }) satisfies SecretsFile));
  }

  /**
   * Open an existing file; undefined when there is none at `path`.
   * @throws InvalidKeyFileError when the file exists and is not a fingerprint key file
   */
  static openExisting(path: string): FingerprintKeys | undefined {
    const secrets = WatchedJsonFile.openExisting(path, KIND, parseSecrets);
    return secrets && new FingerprintKeys(secrets);
  }

  /** The secret new marks are made with: the newest version. */
  get marking(): FingerprintSecret {
    return this.secrets.current.decoded[0]!;
  }

  /** Every version a verify looks for, newest first. */
  get detecting(): readonly FingerprintSecret[] {
    return this.secrets.current.decoded;
  }

  list(): FingerprintKeyInfo[] {
    return this.secrets.current.file.secrets.map((s, i) => ({ version: s.version, createdAt: s.createdAt, marking: i === 0 }));
  }

  /** Add a new newest version; older ones are still detected. */
  rotate(now: Date = new Date()): FingerprintKeyInfo {
    const { file } = this.secrets.reload();
    const next = fresh(file.secrets[0]!.version + 1, now);
    this.secrets.replace({ ...file, secrets: [next, ...file.secrets] } satisfies SecretsFile);
    return { version: next.version, createdAt: next.createdAt, marking: true };
  }

  /**
   * Stop detecting a version (never the one that marks).
   * @throws FingerprintKeyRemovalError when there is no such version, or it is the one that marks
   */
  remove(version: number): void {
    const { file } = this.secrets.reload();
    if (file.secrets[0]!.version === version) {
      throw new FingerprintKeyRemovalError(`fingerprint key version ${version} is the one new marks are made with, and cannot be removed; rotate first`, version, 'fingerprint_key_in_use');
    }
    if (!file.secrets.some((s) => s.version === version)) {
      const versions = file.secrets.map((s) => s.version).join(', ');
      throw new FingerprintKeyRemovalError(`there is no fingerprint key version ${version} (the versions are ${versions})`, version, 'fingerprint_key_not_found');
    }
    this.secrets.replace({ ...file, secrets: file.secrets.filter((s) => s.version !== version) } satisfies SecretsFile);
  }
}
