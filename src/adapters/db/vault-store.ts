/**
 * The Private Vault's rows over SQL (Kysely; the same statements on PGlite
 * and PostgreSQL): its objects (one distinct file of an account, counted
 * once toward the account's vault_bytes) and its files (one marking kept:
 * an original and a marked file). Every change of an account's vault takes
 * the account's row first (FOR UPDATE), so two markings never count the
 * same free bytes twice.
 */
import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import type { KeepRequest, VaultFile, VaultObject, VaultSearch, VaultStatus, VaultStore, VaultViewer } from '../../app/vault/ports.js';
import type { Database, VaultFilesTable, VaultObjectsTable } from './schema.js';
import { guarded } from './unavailable.js';

type Db = Kysely<Database> | Transaction<Database>;

const toObject = (row: Selectable<VaultObjectsTable>): VaultObject => ({
  accountId: row.account_id,
  sha256: row.sha256,
  size: Number(row.size),
  objectName: row.object_name,
  keyVersion: row.key_version,
  state: row.state as VaultObject['state'],
  createdAt: row.created_at,
});

const toFile = (row: Selectable<VaultFilesTable>): VaultFile => ({
  id: row.id,
  accountId: row.account_id,
  userId: row.user_id,
  userEmail: row.user_email,
  recordId: row.record_id,
  batchId: row.batch_id,
  createdAt: row.created_at,
  original: { sha256: row.original_sha256, size: Number(row.original_size), mimeType: row.original_type, name: row.original_name },
  marked: { sha256: row.marked_sha256, size: Number(row.marked_size), mimeType: row.marked_type, name: row.marked_name },
});

/** The account's row, locked for this transaction: its switch and its limit (the plan's, or its own). */
async function lockAccount(tx: Db, accountId: string): Promise<{ enabled: boolean; limit: number } | undefined> {
  const { rows } = await sql<{ vault_enabled: boolean; limit: string | number }>`
    select a.vault_enabled, coalesce(a.vault_bytes, p.vault_bytes) as limit
    from accounts a join plan_limits p on p.plan = a.plan
    where a.id = ${accountId} for update of a`.execute(tx);
  const row = rows[0];
  return row && { enabled: row.vault_enabled, limit: Number(row.limit) };
}

async function usedBytes(tx: Db, accountId: string): Promise<number> {
  const row = await tx
    .selectFrom('vault_objects')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<string | number>('size'), sql<number>`0`).as('used'))
    .where('account_id', '=', accountId)
    .where('state', '<>', 'removing')
    .executeTakeFirstOrThrow();
  return Number(row.used);
}

/** The account's objects among `sha256s` that no file uses any more: now `removing`, returned. */
async function releaseUnused(tx: Db, accountId: string, sha256s: readonly string[]): Promise<VaultObject[]> {
  if (sha256s.length === 0) return [];
  const rows = await tx
    .updateTable('vault_objects as o')
    .set({ state: 'removing' })
    .where('o.account_id', '=', accountId)
    .where('o.sha256', 'in', [...new Set(sha256s)])
    .where('o.state', '<>', 'removing')
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('vault_files as f')
            .select(sql`1`.as('one'))
            .whereRef('f.account_id', '=', 'o.account_id')
            .where((eb) => eb.or([eb('f.original_sha256', '=', eb.ref('o.sha256')), eb('f.marked_sha256', '=', eb.ref('o.sha256'))])),
        ),
      ),
    )
    .returningAll()
    .execute();
  return rows.map(toObject);
}

export class SqlVaultStore implements VaultStore {
  constructor(private readonly db: Kysely<Database>) {}

  status(accountId: string): Promise<VaultStatus> {
    return guarded(async () => {
      const { rows } = await sql<{ vault_enabled: boolean; limit: string | number }>`
        select a.vault_enabled, coalesce(a.vault_bytes, p.vault_bytes) as limit
        from accounts a join plan_limits p on p.plan = a.plan where a.id = ${accountId}`.execute(this.db);
      const [used, files] = await Promise.all([
        usedBytes(this.db, accountId),
        this.db.selectFrom('vault_files').select((eb) => eb.fn.countAll<string | number>().as('n')).where('account_id', '=', accountId).where('state', '=', 'stored').executeTakeFirstOrThrow(),
      ]);
      return { enabled: rows[0]?.vault_enabled ?? false, limit: Number(rows[0]?.limit ?? 0), used, files: Number(files.n) };
    });
  }

  setEnabled(accountId: string, enabled: boolean): Promise<void> {
    return guarded(async () => {
      await this.db.updateTable('accounts').set({ vault_enabled: enabled }).where('id', '=', accountId).execute();
    });
  }

  switchedOn(accountId: string): Promise<boolean> {
    return guarded(async () => {
      const row = await this.db.selectFrom('accounts').select('vault_enabled').where('id', '=', accountId).executeTakeFirst();
      return row?.vault_enabled ?? false;
    });
  }

  begin(request: KeepRequest): ReturnType<VaultStore['begin']> {
    return guarded(async () => {
      return this.db.transaction().execute(async (tx) => {
        const wanted = new Map([request.original, request.marked].map((blob) => [blob.sha256, blob]));
        // The account's row locked first, in a statement of its own, with its switch and limit. What the account
        // holds is read in the next statement: under READ COMMITTED each statement sees what was committed when it
        // began, so that one sees what a marking that held the lock before this one wrote. Read in the locking
        // statement itself, it was as of that statement's start: a marking that waited for the lock did not see
        // the other's objects, wrote them again and failed on their key (a 500), and both could pass the limit.
        const { rows: locked } = await sql<{ vault_enabled: boolean; limit: string | number }>`
          select a.vault_enabled, coalesce(a.vault_bytes, p.vault_bytes) as limit
          from accounts a join plan_limits p on p.plan = a.plan
          where a.id = ${request.accountId} for update of a`.execute(tx);
        const account = locked[0];
        if (!account?.vault_enabled) return { outcome: 'off' as const };
        const limit = Number(account.limit);
        const { rows } = await sql<{ used: string | number; existing: Array<Selectable<VaultObjectsTable> & { created_at: string }> }>`
          select (select coalesce(sum(o.size), 0) from vault_objects o where o.account_id = ${request.accountId} and o.state <> 'removing') as used,
            (select coalesce(json_agg(o), '[]'::json) from vault_objects o where o.account_id = ${request.accountId} and o.sha256 in (${sql.join([...wanted.keys()])})) as existing`.execute(tx);
        const held = rows[0]!;
        const existing = (typeof held.existing === 'string' ? (JSON.parse(held.existing) as typeof held.existing) : held.existing).map((row) => toObject({ ...row, created_at: new Date(row.created_at) }));
        if (existing.some((o) => o.state === 'removing')) return { outcome: 'busy' as const };
        const fresh = [...wanted.values()].filter((blob) => !existing.some((o) => o.sha256 === blob.sha256));
        const used = Number(held.used);
        const needed = fresh.reduce((sum, blob) => sum + blob.size, 0);
        if (used + needed > limit) return { outcome: 'full' as const, used, limit, needed };
        const made: VaultObject[] = fresh.map((blob) => ({
          accountId: request.accountId,
          sha256: blob.sha256,
          size: blob.size,
          objectName: blob.objectName,
          keyVersion: request.keyVersion,
          state: 'writing',
          createdAt: request.createdAt,
        }));
        const { original, marked } = request;
        const file = {
          id: request.id,
          account_id: request.accountId,
          user_id: request.userId,
          user_email: request.userEmail,
          record_id: request.recordId,
          batch_id: request.batchId,
          created_at: request.createdAt,
          state: 'writing',
          original_sha256: original.sha256,
          original_size: original.size,
          original_type: original.mimeType,
          original_name: original.name.slice(0, 1024),
          marked_sha256: marked.sha256,
          marked_size: marked.size,
          marked_type: marked.mimeType,
          marked_name: marked.name.slice(0, 1024),
        };
        const objects = made.map((o) => ({ account_id: o.accountId, sha256: o.sha256, size: o.size, object_name: o.objectName, key_version: o.keyVersion, state: o.state, created_at: o.createdAt }));
        // The new objects and the file in one statement (the file's foreign keys are checked at its end).
        await (objects.length > 0
          ? tx
              .with('o', (db) => db.insertInto('vault_objects').values(objects).returning('sha256'))
              .insertInto('vault_files')
              .values(file)
              .execute()
          : tx.insertInto('vault_files').values(file).execute());
        // Bytes another marking is still writing are written again here: whichever finishes first stores them.
        return { outcome: 'write' as const, objects: [...made, ...existing.filter((o) => o.state === 'writing')] };
      });
    });
  }

  commit(accountId: string, fileId: string, sha256s: readonly string[], recordId: string | null): Promise<void> {
    return guarded(async () => {
      // One statement (its own transaction): the file, then its objects only if the file was still there.
      const { rows } = await sql<{ files: string | number }>`
        with f as (
          update vault_files set state = 'stored', record_id = coalesce(${recordId}, record_id)
          where id = ${fileId} and account_id = ${accountId} returning id
        ), o as (
          update vault_objects set state = 'stored'
          where account_id = ${accountId} and sha256 in (${sql.join([...sha256s])}) and state = 'writing' and exists (select 1 from f)
          returning sha256
        )
        select (select count(*) from f) as files, (select count(*) from o) as objects`.execute(this.db);
      if (Number(rows[0]?.files) !== 1) throw new Error('the vault file was removed before it was stored');
    });
  }

  unfinished(before: Date): Promise<VaultFile[]> {
    return guarded(async () => {
      const rows = await this.db.selectFrom('vault_files').selectAll().where('state', '=', 'writing').where('created_at', '<', before).orderBy('created_at').execute();
      return rows.map(toFile);
    });
  }

  abandon(accountId: string, fileId: string): Promise<VaultObject[]> {
    return guarded(() =>
      this.db.transaction().execute(async (tx) => {
        await lockAccount(tx, accountId);
        const gone = await tx.deleteFrom('vault_files').where('id', '=', fileId).where('account_id', '=', accountId).returning(['original_sha256', 'marked_sha256']).executeTakeFirst();
        return gone ? releaseUnused(tx, accountId, [gone.original_sha256, gone.marked_sha256]) : [];
      }),
    );
  }

  search(viewer: VaultViewer, filter: VaultSearch, page: { limit: number; offset: number }): Promise<{ files: VaultFile[]; total: number }> {
    return guarded(async () => {
      let query = this.db.selectFrom('vault_files').where('account_id', '=', viewer.accountId).where('state', '=', 'stored');
      if (!viewer.owner) query = query.where('user_id', '=', viewer.userId);
      if (filter.hash !== undefined) {
        const hash = filter.hash;
        query = query.where((eb) => eb.or([eb('original_sha256', '=', hash), eb('marked_sha256', '=', hash)]));
      } else if (filter.name !== undefined) {
        // position() rather than LIKE: nothing typed is a pattern.
        const name = filter.name.toLowerCase();
        const prefix = filter.hashPrefix;
        query = query.where((eb) =>
          eb.or([
            eb(sql<number>`position(${name} in lower(original_name))`, '>', 0),
            eb(sql<number>`position(${name} in lower(marked_name))`, '>', 0),
            ...(prefix !== undefined ? [eb(sql<string>`left(original_sha256, ${prefix.length})`, '=', prefix), eb(sql<string>`left(marked_sha256, ${prefix.length})`, '=', prefix)] : []),
          ]),
        );
      }
      const [rows, total] = await Promise.all([
        query.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute(),
        query.select((eb) => eb.fn.countAll<string | number>().as('n')).executeTakeFirstOrThrow(),
      ]);
      return { files: rows.map(toFile), total: Number(total.n) };
    });
  }

  find(viewer: VaultViewer, ids: readonly string[]): Promise<VaultFile[]> {
    return guarded(async () => {
      if (ids.length === 0) return [];
      let query = this.db.selectFrom('vault_files').selectAll().where('account_id', '=', viewer.accountId).where('state', '=', 'stored').where('id', 'in', [...ids]);
      if (!viewer.owner) query = query.where('user_id', '=', viewer.userId);
      const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
      return rows.map(toFile);
    });
  }

  object(accountId: string, sha256: string): Promise<VaultObject | undefined> {
    return guarded(async () => {
      const row = await this.db.selectFrom('vault_objects').selectAll().where('account_id', '=', accountId).where('sha256', '=', sha256).executeTakeFirst();
      return row && toObject(row);
    });
  }

  remove(viewer: VaultViewer, ids: readonly string[] | 'all'): Promise<{ removed: number; objects: VaultObject[] }> {
    return guarded(() =>
      this.db.transaction().execute(async (tx) => {
        await lockAccount(tx, viewer.accountId);
        let query = tx.deleteFrom('vault_files').where('account_id', '=', viewer.accountId);
        if (ids !== 'all') query = query.where('id', 'in', [...ids]).where('state', '=', 'stored');
        if (!viewer.owner) query = query.where('user_id', '=', viewer.userId);
        const gone = ids !== 'all' && ids.length === 0 ? [] : await query.returning(['original_sha256', 'marked_sha256']).execute();
        const sha256s = ids === 'all' ? (await tx.selectFrom('vault_objects').select('sha256').where('account_id', '=', viewer.accountId).execute()).map((r) => r.sha256) : gone.flatMap((g) => [g.original_sha256, g.marked_sha256]);
        return { removed: gone.length, objects: await releaseUnused(tx, viewer.accountId, sha256s) };
      }),
    );
  }

  forget(objects: readonly VaultObject[]): Promise<void> {
    return guarded(async () => {
      if (objects.length === 0) return;
      await this.db
        .deleteFrom('vault_objects')
        .where('state', '=', 'removing')
        .where(
          'object_name',
          'in',
          objects.map((o) => o.objectName),
        )
        .execute();
    });
  }

  sweep(before: Date): Promise<VaultObject[]> {
    return guarded(() =>
      this.db.transaction().execute(async (tx) => {
        await tx.deleteFrom('vault_files').where('state', '=', 'writing').where('created_at', '<', before).execute();
        await tx
          .updateTable('vault_objects as o')
          .set({ state: 'removing' })
          .where('o.state', '<>', 'removing')
          .where('o.created_at', '<', before)
          .where(({ not, exists, selectFrom }) =>
            not(
              exists(
                selectFrom('vault_files as f')
                  .select(sql`1`.as('one'))
                  .whereRef('f.account_id', '=', 'o.account_id')
                  .where((eb) => eb.or([eb('f.original_sha256', '=', eb.ref('o.sha256')), eb('f.marked_sha256', '=', eb.ref('o.sha256'))])),
              ),
            ),
          )
          .execute();
        return (await tx.selectFrom('vault_objects').selectAll().where('state', '=', 'removing').execute()).map(toObject);
      }),
    );
  }

  claimIdentities(entries: ReadonlyArray<{ readonly what: string; readonly fingerprint: string }>): Promise<Map<string, string>> {
    return guarded(async () => {
      if (entries.length === 0) return new Map();
      await this.db
        .insertInto('vault_identity')
        .values(entries.map((e) => ({ what: e.what, fingerprint: e.fingerprint })))
        .onConflict((oc) => oc.column('what').doNothing())
        .execute();
      const rows = await this.db.selectFrom('vault_identity').select(['what', 'fingerprint']).execute();
      return new Map(rows.map((r) => [r.what, r.fingerprint]));
    });
  }

  objectNames(): Promise<Map<string, VaultObject['state']>> {
    return guarded(async () => {
      const rows = await this.db.selectFrom('vault_objects').select(['object_name', 'state']).execute();
      return new Map(rows.map((r) => [r.object_name, r.state as VaultObject['state']]));
    });
  }

  dropMissing(names: readonly string[]): Promise<number> {
    return guarded(async () => {
      if (names.length === 0) return 0;
      // The files that use them go with them (the foreign keys cascade).
      const gone = await this.db.deleteFrom('vault_objects').where('state', '=', 'stored').where('object_name', 'in', [...names]).executeTakeFirst();
      return Number(gone.numDeletedRows);
    });
  }

  sealedUnder(notVersion: number, limit: number, after = ''): Promise<VaultObject[]> {
    return guarded(async () => {
      const rows = await this.db
        .selectFrom('vault_objects')
        .selectAll()
        .where('key_version', '<>', notVersion)
        .where('state', '<>', 'removing')
        .where('object_name', '>', after)
        .orderBy('object_name')
        .limit(limit)
        .execute();
      return rows.map(toObject);
    });
  }

  moved(object: VaultObject, objectName: string, keyVersion: number): Promise<boolean> {
    return guarded(async () => {
      const done = await this.db
        .updateTable('vault_objects')
        .set({ object_name: objectName, key_version: keyVersion })
        .where('account_id', '=', object.accountId)
        .where('sha256', '=', object.sha256)
        .where('object_name', '=', object.objectName)
        .where('state', '=', 'stored')
        .executeTakeFirst();
      return Number(done.numUpdatedRows) === 1;
    });
  }
}
