/**
 * The Private Vault (docs/vault.md): what the use cases need from the
 * storage of bytes (adapters/storage), from the database
 * (adapters/db/vault-store.ts) and from the key file (adapters/vault-keys.ts).
 */

/**
 * Where the sealed bytes live: a directory (the default) or an S3-compatible
 * bucket. Names are 64 lowercase hexadecimal characters; an object is
 * written whole or not at all, and is durable when `put` resolves.
 */
export interface BlobStore {
  /** 'filesystem' or 's3', for messages. */
  readonly kind: string;
  put(name: string, bytes: Uint8Array): Promise<void>;
  /**
   * The slow half of a `put` ahead of time: the bytes made durable where no
   * one looks for them (a temporary file a crash leaves is removed by the
   * check), so that `publish` only has to give them their name. A store that
   * cannot split the two does all of it in `publish`.
   */
  stage(name: string, bytes: Uint8Array): Promise<StagedBlob>;
  /** The object's bytes, or undefined when there is none of that name. */
  get(name: string): Promise<Uint8Array | undefined>;
  /** Remove the object (nothing when there is none). */
  delete(name: string): Promise<void>;
  /** Every object, with when it was last written. */
  list(): AsyncIterable<{ readonly name: string; readonly modifiedAt: Date }>;
  /**
   * This storage's id, made the first time it is asked for (kept beside the
   * objects, never listed as one): the same for every server that uses the
   * same directory or bucket, another for any other (app/vault/identity.ts).
   */
  identity(): Promise<string>;
  close(): Promise<void>;
}

export interface StagedBlob {
  /** Give the staged bytes their name: then, and only then, they are the object. */
  publish(): Promise<void>;
  /** Forget them (nothing when there is nothing to forget). */
  discard(): Promise<void>;
}

export interface VaultKey {
  readonly version: number;
  /** 32 bytes. */
  readonly key: Uint8Array;
}

export interface VaultKeyRing {
  /** The version that names and seals new objects. */
  readonly active: VaultKey;
  version(version: number): VaultKey | undefined;
  /** Every version the ring holds. */
  versions(): number[];
}

/** One stored file of a marking: the original or the marked one. */
export interface VaultBlob {
  readonly sha256: string;
  readonly size: number;
  readonly mimeType: string;
  readonly name: string;
}

/** One marking kept in the vault: its original and its marked file. */
export interface VaultFile {
  readonly id: string;
  readonly accountId: string;
  readonly userId: string;
  readonly userEmail: string;
  readonly recordId: string | null;
  readonly batchId: string | null;
  readonly createdAt: Date;
  readonly original: VaultBlob;
  readonly marked: VaultBlob;
}

/** An object of the vault as the database knows it: one distinct file of an account. */
export interface VaultObject {
  readonly accountId: string;
  readonly sha256: string;
  readonly size: number;
  readonly objectName: string;
  readonly keyVersion: number;
  readonly state: 'writing' | 'stored' | 'removing';
  readonly createdAt: Date;
}

export interface VaultStatus {
  readonly enabled: boolean;
  /** Plaintext bytes of the account's distinct stored files (original and marked). */
  readonly used: number;
  readonly limit: number;
  readonly files: number;
}

/** What a marking asks to keep: both files, with the names of their objects under the active key. */
export interface KeepRequest {
  readonly id: string;
  readonly accountId: string;
  readonly userId: string;
  readonly userEmail: string;
  readonly recordId: string | null;
  readonly batchId: string | null;
  readonly createdAt: Date;
  readonly original: VaultBlob & { readonly objectName: string };
  readonly marked: VaultBlob & { readonly objectName: string };
  readonly keyVersion: number;
}

/** Who is asking: members see the files they marked, owners every file of the account. */
export interface VaultViewer {
  readonly accountId: string;
  readonly userId: string;
  readonly owner: boolean;
}

export interface VaultSearch {
  /** Part of the file name (any case), or a whole SHA-256 or its first characters (6 or more), original or marked. */
  readonly name?: string;
  readonly hash?: string;
  readonly hashPrefix?: string;
}

export interface VaultStore {
  status(accountId: string): Promise<VaultStatus>;
  /** Whether the account's vault is on (a read, no transaction: most accounts keep nothing). */
  switchedOn(accountId: string): Promise<boolean>;
  setEnabled(accountId: string, enabled: boolean): Promise<void>;
  /**
   * First step of keeping a marking, in one transaction holding the account's
   * row: nothing when the vault is off; 'full' when the account's distinct
   * files would pass its limit; 'busy' when one of the objects is being
   * removed; else the objects not stored yet are written down as `writing`,
   * the file's row too, and the objects whose bytes must be written are
   * returned (new ones, and ones another marking is still writing).
   */
  begin(request: KeepRequest): Promise<{ outcome: 'off' } | { outcome: 'busy' } | { outcome: 'full'; used: number; limit: number; needed: number } | { outcome: 'write'; objects: VaultObject[] }>;
  /** Files still `writing` that were written down before `before` (the check finishes them when their bytes are whole). */
  unfinished(before: Date): Promise<VaultFile[]>;
  /** Last step, once the bytes are durable: the objects and the file are `stored`; the file names its record (when there is one). */
  commit(accountId: string, fileId: string, sha256s: readonly string[], recordId: string | null): Promise<void>;
  /** Undo a first step whose bytes could not be written: the file's row goes, and objects no row uses are to be removed (returned). */
  abandon(accountId: string, fileId: string): Promise<VaultObject[]>;
  search(viewer: VaultViewer, filter: VaultSearch, page: { readonly limit: number; readonly offset: number }): Promise<{ files: VaultFile[]; total: number }>;
  /** Stored files of the viewer's by id (those it may not see, or that are not stored, are left out). */
  find(viewer: VaultViewer, ids: readonly string[]): Promise<VaultFile[]>;
  object(accountId: string, sha256: string): Promise<VaultObject | undefined>;
  /** Remove the viewer's files named (every file of the account with `all`): their rows go; objects no row uses any more become `removing` and are returned. */
  remove(viewer: VaultViewer, ids: readonly string[] | 'all'): Promise<{ removed: number; objects: VaultObject[] }>;
  /** The last step of a removal, once the bytes are gone. */
  forget(objects: readonly VaultObject[]): Promise<void>;
  /**
   * The check: files still `writing` and written down before `before` go;
   * objects no file uses (and written down before `before`) become
   * `removing`. Returns every object `removing`.
   */
  sweep(before: Date): Promise<VaultObject[]>;
  /**
   * Write down each identity not written down yet (`storage`, `key-N`), and
   * give back what the database holds for each: the first server's, when
   * several start at once.
   */
  claimIdentities(entries: ReadonlyArray<{ readonly what: string; readonly fingerprint: string }>): Promise<Map<string, string>>;
  /** Every object name the database knows, with its state. */
  objectNames(): Promise<Map<string, VaultObject['state']>>;
  /** Stored objects, with the files that use them gone when their bytes are (a backup restored out of step). */
  dropMissing(names: readonly string[]): Promise<number>;
  /** Objects (not being removed) sealed under another version than `notVersion`, by name after `after`, a few at a time (rotation). */
  sealedUnder(notVersion: number, limit: number, after?: string): Promise<VaultObject[]>;
  /** Point an object at its re-sealed copy; false when the object changed meanwhile (removed). */
  moved(object: VaultObject, objectName: string, keyVersion: number): Promise<boolean>;
}
