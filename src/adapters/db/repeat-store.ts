/**
 * Idempotency rows and browser batches over SQL (both back ends): a repeat
 * is recognised by every server, since the row is claimed in the database.
 */
import { sql, type Kysely } from 'kysely';
import type { IdempotencyRow, RepeatStore, StoredOutcome } from '../../app/repeats.js';
import type { Database } from './schema.js';
import { guarded } from './unavailable.js';

export class SqlRepeatStore implements RepeatStore {
  constructor(private readonly db: Kysely<Database>) {}

  claim(accountId: string, route: string, key: string, requestHash: string, now: Date, expiresAt: Date, staleBefore: Date): Promise<boolean> {
    return guarded(async () => {
      // A row past its 24 hours, or a running row left by a process that
      // stopped (older than twice the request timeout), is taken over.
      const { rows } = await sql<{ key: string }>`
        insert into idempotency (account_id, route, key, request_hash, state, created_at, expires_at)
        values (${accountId}, ${route}, ${key}, ${requestHash}, 'running', ${now}, ${expiresAt})
        on conflict (account_id, route, key) do update
          set request_hash = excluded.request_hash, state = 'running', status = null, outcome = null, created_at = excluded.created_at, expires_at = excluded.expires_at
          where idempotency.expires_at <= ${now} or (idempotency.state = 'running' and idempotency.created_at < ${staleBefore})
        returning key
      `.execute(this.db);
      return rows.length === 1;
    });
  }

  find(accountId: string, route: string, key: string, now: Date): Promise<IdempotencyRow | undefined> {
    return guarded(async () => {
      const row = await this.db
        .selectFrom('idempotency')
        .selectAll()
        .where('account_id', '=', accountId)
        .where('route', '=', route)
        .where('key', '=', key)
        .where('expires_at', '>', now)
        .executeTakeFirst();
      if (!row) return undefined;
      const outcome = row.state === 'done' && row.outcome !== null ? ({ status: row.status!, body: JSON.parse(row.outcome) } as StoredOutcome) : undefined;
      return { requestHash: row.request_hash, state: row.state as IdempotencyRow['state'], outcome, createdAt: row.created_at };
    });
  }

  finish(accountId: string, route: string, key: string, outcome: StoredOutcome): Promise<void> {
    return guarded(async () => {
      await this.db
        .updateTable('idempotency')
        .set({ state: 'done', status: outcome.status, outcome: JSON.stringify(outcome.body) })
        .where('account_id', '=', accountId)
        .where('route', '=', route)
        .where('key', '=', key)
        .execute();
    });
  }

  release(accountId: string, route: string, key: string): Promise<void> {
    return guarded(async () => {
      await this.db.deleteFrom('idempotency').where('account_id', '=', accountId).where('route', '=', route).where('key', '=', key).where('state', '=', 'running').execute();
    });
  }

  createBatch(batch: { id: string; accountId: string; userId: string; createdAt: Date; expiresAt: Date }): Promise<void> {
    return guarded(async () => {
      await this.db.insertInto('batches').values({ id: batch.id, account_id: batch.accountId, user_id: batch.userId, created_at: batch.createdAt, expires_at: batch.expiresAt }).execute();
    });
  }

  admitToBatch(batchId: string, accountId: string, token: string, limit: number, now: Date): Promise<'added' | 'known' | 'full' | 'missing'> {
    return guarded(() =>
      this.db.transaction().execute(async (tx) => {
        // The batch row, locked: two new files at once cannot both become the 25th.
        const { rows } = await sql<{ id: string }>`select id from batches where id = ${batchId} and account_id = ${accountId} and expires_at > ${now} for update`.execute(tx);
        if (rows.length === 0) return 'missing';
        const known = await tx.selectFrom('batch_items').select('token').where('batch_id', '=', batchId).where('token', '=', token).executeTakeFirst();
        if (known) return 'known';
        const count = await tx
          .selectFrom('batch_items')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('batch_id', '=', batchId)
          .executeTakeFirstOrThrow();
        if (Number(count.n) >= limit) return 'full';
        await tx.insertInto('batch_items').values({ batch_id: batchId, token }).execute();
        return 'added';
      }),
    );
  }

  sweep(now: Date): Promise<void> {
    return guarded(async () => {
      await this.db.deleteFrom('idempotency').where('expires_at', '<=', now).execute();
      await this.db.deleteFrom('batches').where('expires_at', '<=', now).execute();
    });
  }
}
