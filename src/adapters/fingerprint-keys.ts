/**
 * The deployment's fingerprint secrets, in one JSON file (mode 0600), by
 * version: the newest marks, and every version still in the file is looked
 * for on verify, so images marked before a rotation stay detectable. Created
 * with one secret on first use; shared by servers like the signing key ring.
 * A version is removed (and no longer detected) only on purpose.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { loadIfExists, loadOrCreate, writePrivateJson } from './exclusive-file.js';

export interface FingerprintSecret {
  readonly version: number;
  readonly secret: Buffer;
}

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

function write(path: string, file: SecretsFile, exclusive = false): void {
  writePrivateJson(path, file, exclusive ? 'create' : 'replace');
}

const fresh = (version: number, now: Date): StoredSecret => ({ version, createdAt: now.toISOString(), secret: randomBytes(32).toString('base64') });

export class FingerprintKeys {
  private file!: SecretsFile;
  private mtimeMs = 0;
  private checkedAt = 0;

  private constructor(readonly path: string) {}

  /** Open the file at `path`, creating it with one secret when it does not exist. */
  static open(path: string, now: Date = new Date()): FingerprintKeys {
    const keys = new FingerprintKeys(path);
    loadOrCreate(
      () => keys.load(),
      () => write(path, { format: 'optmark-fingerprint-keys', secrets: [fresh(1, now)] }, true),
    );
    return keys;
  }

  /** Open an existing file; undefined when there is none at `path`. */
  static openExisting(path: string): FingerprintKeys | undefined {
    const keys = new FingerprintKeys(path);
    return loadIfExists(() => keys.load()) ? keys : undefined;
  }

  private load(): void {
    const file = JSON.parse(readFileSync(this.path, 'utf8')) as SecretsFile;
    const valid =
      file.format === 'optmark-fingerprint-keys' &&
      Array.isArray(file.secrets) &&
      file.secrets.length > 0 &&
      file.secrets.every((s) => Number.isInteger(s.version) && s.version > 0 && Buffer.from(s.secret, 'base64').length === 32);
    if (!valid) throw new Error(`${this.path} is not an optmark fingerprint key file`);
    this.file = { ...file, secrets: [...file.secrets].sort((a, b) => b.version - a.version) };
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
      // Keep what we have; a broken file must not stop verification.
    }
  }

  /** The secret new marks are made with: the newest version. */
  get marking(): FingerprintSecret {
    this.refresh();
    return decode(this.file.secrets[0]!);
  }

  /** Every version a verify looks for, newest first. */
  get detecting(): readonly FingerprintSecret[] {
    this.refresh();
    return this.file.secrets.map(decode);
  }

  list(): FingerprintKeyInfo[] {
    this.refresh();
    return this.file.secrets.map((s, i) => ({ version: s.version, createdAt: s.createdAt, marking: i === 0 }));
  }

  /** Add a new newest version; older ones are still detected. */
  rotate(now: Date = new Date()): FingerprintKeyInfo {
    this.load();
    const next = fresh(this.file.secrets[0]!.version + 1, now);
    write(this.path, { ...this.file, secrets: [next, ...this.file.secrets] });
    this.load();
    return { version: next.version, createdAt: next.createdAt, marking: true };
  }

  /** Stop detecting a version (never the one that marks). */
  remove(version: number): void {
    this.load();
    if (this.file.secrets[0]!.version === version) throw new Error(`version ${version} is the one new marks are made with; rotate first`);
    if (!this.file.secrets.some((s) => s.version === version)) throw new Error(`there is no fingerprint key version ${version}`);
    write(this.path, { ...this.file, secrets: this.file.secrets.filter((s) => s.version !== version) });
    this.load();
  }
}

function decode(stored: StoredSecret): FingerprintSecret {
  return { version: stored.version, secret: Buffer.from(stored.secret, 'base64') };
}
