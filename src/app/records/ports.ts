/**
 * Dated service records (docs/records.md): what the dashboard's marking
 * leaves behind, signed by the service, and what the use cases need from the
 * database (adapters/db/record-store.ts) and from a certificate maker
 * (adapters/certificate-pdf.ts).
 */

/** A layer applied on top of the opt-out and its provenance tag: today the experimental fingerprint. */
export interface RecordLayer {
  readonly name: 'fingerprint';
  /** `added` by this marking, or `found` already in the pixels (and not added again). */
  readonly state: 'added' | 'found';
  /** The version of the fingerprint secret of the mark (null when the detector did not say). */
  readonly keyVersion: number | null;
}

export interface ServiceRecord {
  readonly id: string;
  readonly accountId: string;
  readonly userId: string;
  /** The person who marked, as they were then. */
  readonly userEmail: string;
  /** The dashboard's batch the file was marked in (null: a marking outside a batch, such as the page without JavaScript). */
  readonly batchId: string | null;
  /** When the record was made (UTC, to the millisecond); the JWS's `iat` is its second. */
  readonly createdAt: Date;
  /** The uploaded file's name, as sent ('' when none). */
  readonly fileName: string;
  readonly sha256Original: string;
  readonly sha256Marked: string;
  /** The DMI-PROHIBITED* code the marked file carries. */
  readonly value: string;
  readonly layers: readonly RecordLayer[];
  /** The key id of the provenance tag in the marked file. */
  readonly kid: string;
  /** Compact JWS: `{recordId, iat, sha256Marked, value, layers, kid, iss}`. */
  readonly publicJws: string;
  /** Compact JWS: `{recordId, iat, account, user, fileName, sha256Original, batchId, publicJwsSha256, kid, iss}`. */
  readonly privateJws: string;
}

/** A record with the small JPEG of the marked image its certificate shows (null when none could be made). */
export interface StoredRecord extends ServiceRecord {
  readonly thumbnail: Uint8Array | null;
}

/** What a public lookup shows: when, with which value, and the public JWS; nothing else. */
export interface PublicRecord {
  readonly createdAt: Date;
  readonly value: string;
  readonly publicJws: string;
}

/** A search of an account's records; every part optional. */
export interface RecordFilter {
  /** Part of the file name (any case). */
  readonly name?: string;
  /** A whole SHA-256, original or marked. */
  readonly hash?: string;
  /** The start of a SHA-256 (at least 6 hexadecimal characters), original or marked; matched beside `name`. */
  readonly hashPrefix?: string;
  /** From this moment on (inclusive). */
  readonly from?: Date;
  /** Before this moment (exclusive). */
  readonly until?: Date;
}

/** Where a page of records ends: the next page starts after it (newest first). */
export interface RecordCursor {
  readonly createdAt: Date;
  readonly id: string;
}

export interface RecordStore {
  insert(record: StoredRecord): Promise<void>;
  /** Keep the thumbnail of a record made without one (once: a second is ignored). */
  putThumbnail(recordId: string, thumbnail: Uint8Array): Promise<void>;
  /** The account's records whose original or marked hash is `sha256`, oldest first. */
  byHash(accountId: string, sha256: string, limit: number): Promise<ServiceRecord[]>;
  /** Newest first: `limit` records after `after` (or from the newest), and how many match in all. */
  search(accountId: string, filter: RecordFilter, page: { readonly limit: number; readonly offset?: number; readonly after?: RecordCursor }): Promise<{ records: ServiceRecord[]; total: number }>;
  find(accountId: string, id: string): Promise<StoredRecord | undefined>;
  /** The account's records of one batch, oldest first. */
  inBatch(accountId: string, batchId: string, limit: number): Promise<StoredRecord[]>;
  /** Records whose marked hash is `sha256`, of accounts that turned public lookup on; oldest first. */
  publicByMarkedHash(sha256: string, limit: number): Promise<PublicRecord[]>;
  publicLookup(accountId: string): Promise<boolean>;
  setPublicLookup(accountId: string, enabled: boolean): Promise<void>;
}

/** Everything a certificate shows of one record. */
export interface CertificateRecord {
  readonly record: StoredRecord;
  /** The IPTC label of the record's value. */
  readonly valueLabel: string;
  /** The account's name as the record signed it (an account renamed since keeps its old name here). */
  readonly accountName: string;
}

export interface CertificateContext {
  /** This deployment's address, where the JWKS is. */
  readonly issuer: string;
  /** When the certificate is made. */
  readonly madeAt: Date;
}

/** Makes the PDF certificates (adapters/certificate-pdf.ts). */
export interface CertificateMaker {
  record(entry: CertificateRecord, context: CertificateContext): Promise<Uint8Array>;
  batch(batchId: string, entries: readonly CertificateRecord[], context: CertificateContext): Promise<Uint8Array>;
}
