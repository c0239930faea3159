/**
 * Dated service records over SQL (Kysely; the same statements on PGlite and
 * PostgreSQL). Rows are only ever inserted: the database itself refuses an
 * update, and a delete other than the cascade of the account's deletion
 * (migration 006-records).
 */
import { sql, type Kysely, type Selectable } from 'kysely';
import type { PublicRecord, RecordCursor, RecordFilter, RecordLayer, RecordStore, ServiceRecord, StoredRecord } from '../../app/records/ports.js';
import type { Database, RecordsTable } from './schema.js';
import { guarded } from './unavailable.js';

const COLUMNS = ['id', 'account_id', 'user_id', 'user_email', 'batch_id', 'created_at', 'file_name', 'sha256_original', 'sha256_marked', 'value', 'layers', 'kid', 'public_jws', 'private_jws'] as const;

type Row = Omit<Selectable<RecordsTable>, 'thumbnail'>;

function toRecord(row: Row): ServiceRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    userId: row.user_id,
    userEmail: row.user_email,
    batchId: row.batch_id,
    createdAt: row.created_at,
    fileName: row.file_name,
    sha256Original: row.sha256_original,
    sha256Marked: row.sha256_marked,
    value: row.value,
    layers: JSON.parse(row.layers) as RecordLayer[],
    kid: row.kid,
    publicJws: row.public_jws,
    privateJws: row.private_jws,
  };
}

const toStored = (row: Row & { thumbnail: Uint8Array | null }): StoredRecord => ({ ...toRecord(row), thumbnail: row.thumbnail === null ? null : new Uint8Array(row.thumbnail) });

export class SqlRecordStore implements RecordStore {
  constructor(private readonly db: Kysely<Database>) {}

  insert(record: StoredRecord): Promise<void> {
    return guarded(async () => {
      await this.db
        .insertInto('records')
        .values({
          id: record.id,
          account_id: record.accountId,
          user_id: record.userId,
          user_email: record.userEmail,
          batch_id: record.batchId,
          created_at: record.createdAt,
          file_name: record.fileName,
          sha256_original: record.sha256Original,
          sha256_marked: record.sha256Marked,
          value: record.value,
          layers: JSON.stringify(record.layers),
          kid: record.kid,
          public_jws: record.publicJws,
          private_jws: record.privateJws,
          thumbnail: record.thumbnail,
        })
        .execute();
    });
  }

  byHash(accountId: string, sha256: string, limit: number): Promise<ServiceRecord[]> {
    return guarded(async () => {
      const rows = await this.db
        .selectFrom('records')
        .select(COLUMNS)
        .where('account_id', '=', accountId)
        .where((eb) => eb.or([eb('sha256_marked', '=', sha256), eb('sha256_original', '=', sha256)]))
        .orderBy('created_at')
        .orderBy('id')
        .limit(limit)
        .execute();
      return rows.map(toRecord);
    });
  }

  search(accountId: string, filter: RecordFilter, page: { limit: number; offset?: number; after?: RecordCursor }): Promise<{ records: ServiceRecord[]; total: number }> {
    return guarded(async () => {
      let query = this.db.selectFrom('records').where('account_id', '=', accountId);
      if (filter.hash !== undefined) {
        const hash = filter.hash;
        query = query.where((eb) => eb.or([eb('sha256_marked', '=', hash), eb('sha256_original', '=', hash)]));
      } else if (filter.name !== undefined) {
        // position() rather than LIKE: nothing typed is a pattern.
        const name = filter.name.toLowerCase();
        const prefix = filter.hashPrefix;
        query = query.where((eb) =>
          eb.or([
            eb(sql<number>`position(${name} in lower(file_name))`, '>', 0),
            ...(prefix !== undefined ? [eb(sql<string>`left(sha256_marked, ${prefix.length})`, '=', prefix), eb(sql<string>`left(sha256_original, ${prefix.length})`, '=', prefix)] : []),
          ]),
        );
      }
      if (filter.from !== undefined) query = query.where('created_at', '>=', filter.from);
      if (filter.until !== undefined) query = query.where('created_at', '<', filter.until);
      const counted = page.after === undefined ? query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow() : Promise.resolve({ n: 0 });
      let rows = query.select(COLUMNS);
      if (page.after !== undefined) {
        const { createdAt, id } = page.after;
        rows = rows.where((eb) => eb.or([eb('created_at', '<', createdAt), eb.and([eb('created_at', '=', createdAt), eb('id', '<', id)])]));
      }
      const [found, total] = await Promise.all([
        rows
          .orderBy('created_at', 'desc')
          .orderBy('id', 'desc')
          .limit(page.limit)
          .offset(page.offset ?? 0)
          .execute(),
        counted,
      ]);
      return { records: found.map(toRecord), total: Number(total.n) };
    });
  }

  putThumbnail(recordId: string, thumbnail: Uint8Array): Promise<void> {
    return guarded(async () => {
      await this.db.insertInto('record_thumbnails').values({ record_id: recordId, bytes: thumbnail }).onConflict((oc) => oc.column('record_id').doNothing()).execute();
    });
  }

  /** Records with their thumbnails: the record's own column (records made before thumbnails were kept apart), else the one made after. */
  private async withThumbnails(rows: ReadonlyArray<Row & { thumbnail: Uint8Array | null }>): Promise<StoredRecord[]> {
    const missing = rows.filter((r) => r.thumbnail === null).map((r) => r.id);
    const made = missing.length ? await this.db.selectFrom('record_thumbnails').select(['record_id', 'bytes']).where('record_id', 'in', missing).execute() : [];
    const byId = new Map(made.map((t) => [t.record_id, t.bytes]));
    return rows.map((row) => toStored({ ...row, thumbnail: row.thumbnail ?? byId.get(row.id) ?? null }));
  }

  find(accountId: string, id: string): Promise<StoredRecord | undefined> {
    return guarded(async () => {
      const row = await this.db.selectFrom('records').select([...COLUMNS, 'thumbnail']).where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
      return row && (await this.withThumbnails([row]))[0];
    });
  }

  inBatch(accountId: string, batchId: string, limit: number): Promise<StoredRecord[]> {
    return guarded(async () => {
      const rows = await this.db
        .selectFrom('records')
        .select([...COLUMNS, 'thumbnail'])
        .where('account_id', '=', accountId)
        .where('batch_id', '=', batchId)
        .orderBy('created_at')
        .orderBy('id')
        .limit(limit)
        .execute();
      return this.withThumbnails(rows);
    });
  }

  publicByMarkedHash(sha256: string, limit: number): Promise<PublicRecord[]> {
    return guarded(async () => {
      const rows = await this.db
        .selectFrom('records as r')
        .innerJoin('accounts as a', 'a.id', 'r.account_id')
        .select(['r.created_at', 'r.value', 'r.public_jws'])
        .where('r.sha256_marked', '=', sha256)
        .where('a.public_record_lookup', '=', true)
        .orderBy('r.created_at')
        .orderBy('r.id')
        .limit(limit)
        .execute();
      return rows.map((r) => ({ createdAt: r.created_at, value: r.value, publicJws: r.public_jws }));
    });
  }

  publicLookup(accountId: string): Promise<boolean> {
    return guarded(async () => {
      const row = await this.db.selectFrom('accounts').select('public_record_lookup').where('id', '=', accountId).executeTakeFirst();
      return row?.public_record_lookup ?? false;
    });
  }

  setPublicLookup(accountId: string, enabled: boolean): Promise<void> {
    return guarded(async () => {
      await this.db.updateTable('accounts').set({ public_record_lookup: enabled }).where('id', '=', accountId).execute();
    });
  }
}
