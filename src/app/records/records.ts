/**
 * Dated service records (docs/records.md). Every marking done through the
 * dashboard leaves one: when (UTC), the account and the person, the file's
 * name, the SHA-256 of the original and of the marked file, the value
 * written, the layers applied and the key id of the file's provenance tag.
 * The service signs it twice with the provenance key ring, so that the
 * deployment's JWKS checks both:
 *
 * - the public JWS `{recordId, iat, sha256Marked, value, layers, kid, iss}`,
 *   which anyone may be shown (the public lookup, when the account turns it on);
 * - the private JWS `{recordId, iat, account, user, fileName, sha256Original,
 *   batchId, publicJwsSha256, kid, iss}`, for the account's people: the rest,
 *   bound to the public one by its SHA-256.
 *
 * Records are append-only (the database refuses updates, and deletes other
 * than the cascade of the account's deletion). The API's protect makes none:
 * the specification says the marking call creates no hosted record.
 */
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../../core/bytes/digest.js';
import { randomBase62 } from '../../core/keys/api-key.js';
import { keptName } from '../filename.js';
import { DATA_MINING_LABELS, type DataMiningCode } from '../../core/xmp/vocabulary.js';
import { InvalidOptionError, InvalidSha256Error, RecordNotFoundError, RoleNotAllowedError } from '../../errors.js';
import type { AuditEntry, User } from '../people/ports.js';
import type { Clock } from '../ports.js';
import type { Provenance } from '../provenance.js';
import type { ThumbnailQueue } from './thumbnails.js';
import type { CertificateMaker, CertificateRecord, PublicRecord, RecordCursor, RecordFilter, RecordLayer, RecordStore, ServiceRecord, StoredRecord } from './ports.js';

/** The longest side of the thumbnail a record keeps for its certificate. */
export const THUMBNAIL_SIDE = 320;
/** Records an API lookup answers at most (the oldest first). */
export const LOOKUP_LIMIT = 100;
/** Records one page of the dashboard's list shows. */
export const PAGE_SIZE = 50;
/** Records one batch certificate lists at most (a batch takes 25 files; a retried file with another token is another). */
const BATCH_CERTIFICATE_LIMIT = 100;
const SHA256 = /^[0-9a-fA-F]{64}$/;
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;
const DAY_MS = 86_400_000;

/** A SHA-256 as asked for: 64 hexadecimal characters, any case; lower case from here on. */
export function checkSha256(text: string): string {
  if (!SHA256.test(text)) throw new InvalidSha256Error(text);
  return text.toLowerCase();
}

export const valueLabel = (value: string): string => DATA_MINING_LABELS[value as DataMiningCode] ?? value;

/** What a marking through the dashboard hands over for its record. */
export interface Marking {
  readonly account: { readonly id: string; readonly name: string };
  readonly user: Pick<User, 'id' | 'email'>;
  readonly batchId: string | null;
  readonly fileName: string;
  readonly sha256Original: string;
  readonly marked: {
    readonly bytes: Uint8Array;
    readonly sha256: string;
    readonly value: string;
    /** The key id of the provenance tag the marked file carries. */
    readonly tagKid: string | undefined;
    readonly fingerprint?: 'added' | 'found';
    readonly fingerprintKeyVersion?: number | null;
  };
}

/** The dashboard's search, as typed: text (a file name, or a whole or partial SHA-256), dates YYYY-MM-DD (UTC, both inclusive), the page. */
export interface SearchInput {
  readonly q?: string;
  readonly from?: string;
  readonly to?: string;
  readonly page?: string | number;
}

export interface RecordsDeps {
  readonly store: RecordStore;
  readonly provenance: Pick<Provenance, 'signStatement' | 'activeKid'>;
  readonly clock: Clock;
  /** Where a record's thumbnail is made, after the marking's answer (thumbnails.ts). */
  readonly thumbnails: ThumbnailQueue;
  readonly certificates: CertificateMaker;
  readonly audit: (entry: AuditEntry) => Promise<void>;
  /** This deployment's address (where its JWKS is). */
  readonly issuer: () => string;
}

function day(text: string | undefined, name: string): Date | undefined {
  const trimmed = (text ?? '').trim();
  if (trimmed === '') return undefined;
  const match = DAY.exec(trimmed);
  const date = match ? new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]))) : undefined;
  if (!date || date.toISOString().slice(0, 10) !== trimmed) throw new InvalidOptionError(name, 'a date as YYYY-MM-DD', text, `The "${name === 'from' ? 'From' : 'To'}" date is not a date of the calendar: give it as YYYY-MM-DD, such as 2026-01-31`);
  return date;
}

/** The filter a search typed on the dashboard means. */
export function filterOf(input: SearchInput): { filter: RecordFilter; page: number } {
  const q = (input.q ?? '').trim();
  if (q.length > 200) throw new InvalidOptionError('q', 'a file name or a SHA-256 (at most 200 characters)', `${q.slice(0, 40)}…`, 'Search for a file name or a SHA-256 of at most 200 characters');
  const from = day(input.from, 'from');
  const to = day(input.to, 'to');
  if (from && to && to < from) throw new InvalidOptionError('to', 'a date on or after the "from" date', input.to, `The "To" date (${input.to}) is before the "From" date (${input.from}): choose a "To" on or after it`);
  const pageText = String(input.page ?? '1').trim() || '1';
  const page = /^\d{1,6}$/.test(pageText) ? Math.max(1, Number(pageText)) : Number.NaN;
  if (!Number.isFinite(page)) throw new InvalidOptionError('page', 'a page number', input.page);
  const filter: RecordFilter = {
    ...(SHA256.test(q) ? { hash: q.toLowerCase() } : q !== '' ? { name: q, ...(/^[0-9a-fA-F]{6,63}$/.test(q) ? { hashPrefix: q.toLowerCase() } : {}) } : {}),
    ...(from ? { from } : {}),
    ...(to ? { until: new Date(to.getTime() + DAY_MS) } : {}),
  };
  return { filter, page };
}

export function createRecords(deps: RecordsDeps) {
  const { store, clock } = deps;

  function context() {
    return { issuer: deps.issuer(), madeAt: clock.now() };
  }

  /** The account's name the record's private JWS signed when it was made (the JWS is ours: read, not verified again). */
  const signedAccountName = (record: StoredRecord): string => {
    const claims = JSON.parse(Buffer.from(record.privateJws.split('.')[1] ?? '', 'base64url').toString('utf8')) as { account?: { name?: unknown } };
    if (typeof claims.account?.name !== 'string') throw new Error(`internal: record ${record.id} has no account name in its private JWS`);
    return claims.account.name;
  };
  const forCertificate = (record: StoredRecord): CertificateRecord => ({ record, valueLabel: valueLabel(record.value), accountName: signedAccountName(record) });

  return {
    /** The record of a marking just done through the dashboard: signed twice, stored, returned. */
    async create(marking: Marking): Promise<ServiceRecord> {
      const { marked } = marking;
      const fileName = keptName(marking.fileName);
      const id = `rec_${randomBase62(20, randomBytes)}`;
      // Kept to the millisecond (records of one batch list in the order they were made); the JWS's iat is its second.
      const createdAt = clock.now();
      const iat = Math.floor(createdAt.getTime() / 1000);
      const layers: RecordLayer[] = marked.fingerprint ? [{ name: 'fingerprint', state: marked.fingerprint, keyVersion: marked.fingerprintKeyVersion ?? null }] : [];
      const kid = marked.tagKid ?? deps.provenance.activeKid();
      if (kid === undefined) throw new Error('internal: a marking without a provenance tag');
      // The public statement: what anyone may be shown. `kid` is the tag's key; the JWS's header names the
      // key that signs the record (the ring's active key: the same one, unless the file kept an older tag).
      const publicJws = deps.provenance.signStatement({ recordId: id, iat, sha256Marked: marked.sha256, value: marked.value, layers, kid }).jws;
      const privateJws = deps.provenance.signStatement({
        recordId: id,
        iat,
        account: { id: marking.account.id, name: marking.account.name },
        user: { id: marking.user.id, email: marking.user.email },
        fileName,
        sha256Original: marking.sha256Original,
        batchId: marking.batchId,
        publicJwsSha256: sha256Hex(publicJws),
        kid,
      }).jws;
      const record: StoredRecord = {
        id,
        accountId: marking.account.id,
        userId: marking.user.id,
        userEmail: marking.user.email,
        batchId: marking.batchId,
        createdAt,
        fileName,
        sha256Original: marking.sha256Original,
        sha256Marked: marked.sha256,
        value: marked.value,
        layers,
        kid,
        publicJws,
        privateJws,
        // Made after the answer (thumbnails.ts), and kept apart: the record itself is never changed.
        thumbnail: null,
      };
      await store.insert(record);
      deps.thumbnails.add(id, marked.bytes);
      const { thumbnail: _thumbnail, ...plain } = record;
      return plain;
    },

    /** The API's lookup: the account's records whose original or marked hash is `sha256`; none is RecordNotFoundError. */
    async lookup(accountId: string, sha256: string): Promise<ServiceRecord[]> {
      const found = await store.byHash(accountId, checkSha256(sha256), LOOKUP_LIMIT);
      if (found.length === 0) throw new RecordNotFoundError('There is no service record with this SHA-256 in your account');
      return found;
    },

    /** The record a checked file belongs to: one of the account's whose marked (first) or original hash is `sha256`. */
    async matchFor(accountId: string, sha256: string): Promise<{ record: ServiceRecord; as: 'marked' | 'original' } | undefined> {
      if (!SHA256.test(sha256)) return undefined;
      const found = await store.byHash(accountId, sha256.toLowerCase(), LOOKUP_LIMIT);
      const marked = found.filter((r) => r.sha256Marked === sha256).at(-1);
      if (marked) return { record: marked, as: 'marked' };
      const original = found.at(-1);
      return original && { record: original, as: 'original' };
    },

    /** A page of the account's records, newest first, as the dashboard's search asks. */
    async search(accountId: string, input: SearchInput): Promise<{ records: ServiceRecord[]; total: number; page: number; pageSize: number }> {
      const { filter, page } = filterOf(input);
      const { records, total } = await store.search(accountId, filter, { limit: PAGE_SIZE, offset: (page - 1) * PAGE_SIZE });
      return { records, total, page, pageSize: PAGE_SIZE };
    },

    /** Every record the search matches, newest first, a chunk at a time (the CSV export). */
    async *all(accountId: string, input: SearchInput): AsyncGenerator<ServiceRecord> {
      const { filter } = filterOf(input);
      let after: RecordCursor | undefined;
      for (;;) {
        const { records } = await store.search(accountId, filter, { limit: 500, ...(after ? { after } : {}) });
        yield* records;
        if (records.length < 500) return;
        const last = records.at(-1)!;
        after = { createdAt: last.createdAt, id: last.id };
      }
    },

    /** One record's certificate (PDF); another account's record is RecordNotFoundError. */
    async certificate(account: { readonly id: string; readonly name: string }, recordId: string): Promise<{ record: ServiceRecord; pdf: Uint8Array }> {
      let record = /^rec_[A-Za-z0-9]{1,64}$/.test(recordId) ? await store.find(account.id, recordId) : undefined;
      if (!record) throw new RecordNotFoundError('There is no such record in your account');
      // Its thumbnail, if it still waits, is made now.
      if (record.thumbnail === null && deps.thumbnails.waiting > 0) {
        await deps.thumbnails.complete([recordId]);
        record = (await store.find(account.id, recordId)) ?? record;
      }
      return { record, pdf: await deps.certificates.record(forCertificate(record), context()) };
    },

    /** The certificate of a batch (PDF): every record marked in it; a batch without records of the account is RecordNotFoundError. */
    async batchCertificate(account: { readonly id: string; readonly name: string }, batchId: string): Promise<Uint8Array> {
      let records = /^bat_[A-Za-z0-9_-]{1,64}$/.test(batchId) ? await store.inBatch(account.id, batchId, BATCH_CERTIFICATE_LIMIT) : [];
      if (records.length === 0) throw new RecordNotFoundError('There is no record of such a batch in your account');
      // The thumbnails that still wait are made now.
      const without = records.filter((r) => r.thumbnail === null).map((r) => r.id);
      if (without.length > 0 && deps.thumbnails.waiting > 0) {
        await deps.thumbnails.complete(without);
        records = await store.inBatch(account.id, batchId, BATCH_CERTIFICATE_LIMIT);
      }
      return deps.certificates.batch(batchId, records.map(forCertificate), context());
    },

    /** The public lookup: by the marked file's hash only, of accounts that turned it on. */
    async publicLookup(sha256: string): Promise<PublicRecord[]> {
      const found = await store.publicByMarkedHash(checkSha256(sha256), 20);
      if (found.length === 0) throw new RecordNotFoundError('This service has no public record of a file with this SHA-256');
      return found;
    },

    publicLookupEnabled: (accountId: string): Promise<boolean> => store.publicLookup(accountId),

    /** An owner turns the public lookup of the account's marked files on or off (a line of the audit log). */
    async setPublicLookup(actor: User, enabled: boolean, address: string | null): Promise<void> {
      if (actor.role !== 'owner') throw new RoleNotAllowedError("Only the account's owners may turn the public lookup on or off");
      await store.setPublicLookup(actor.accountId, enabled);
      await deps.audit({ at: clock.now(), actor: actor.id, accountId: actor.accountId, action: 'records.public-lookup', detail: { by: actor.email, enabled }, address });
    },
  };
}

export type Records = ReturnType<typeof createRecords>;
