/**
 * API access requests, their grants, and keys as people see them, over SQL
 * (Kysely; the same statements on PGlite and PostgreSQL). A reveal and a
 * roll each run in one transaction that first locks the account's row, so
 * that two at once cannot both pass the limit of active keys.
 */
import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import type { AccessRequest, AccessStore, Decision, KeyInfo, NewAccessRequest, NewKey, RequestState, RevealOutcome } from '../../app/access/ports.js';
import type { Plan } from '../../app/ports.js';
import type { AccessRequestsTable, Database } from './schema.js';
import { keyRow, parseScopes, toKeyRecord } from './sql-store.js';
import { lockedActiveKeys } from './active-keys.js';
import { guarded } from './unavailable.js';

type RequestRow = Selectable<AccessRequestsTable> & { account_name: string; plan: string; email: string };

const toRequest = (row: RequestRow): AccessRequest => ({
  id: row.id,
  accountId: row.account_id,
  accountName: row.account_name,
  plan: row.plan as Plan,
  userId: row.user_id,
  userEmail: row.email,
  name: row.name,
  purpose: row.purpose,
  monthlyVolume: row.monthly_volume,
  scopes: parseScopes(row.scopes),
  contact: row.contact,
  state: row.state as RequestState,
  createdAt: row.created_at,
  decidedAt: row.decided_at,
  decidedBy: row.decided_by,
  reason: row.reason,
  grantedScopes: row.granted_scopes === null ? null : parseScopes(row.granted_scopes),
  keyDays: row.key_days,
  revealBy: row.reveal_by,
  revealedAt: row.revealed_at,
  keyId: row.key_id,
});

export class SqlAccessStore implements AccessStore {
  constructor(
    private readonly db: Kysely<Database>,
    /** Told when a key's end changed here (the embedded store caches keys with their end). */
    private readonly onKeysChanged: () => void = () => {},
  ) {}

  private requests(db: Kysely<Database> = this.db) {
    return db
      .selectFrom('access_requests as r')
      .innerJoin('accounts as a', 'a.id', 'r.account_id')
      .innerJoin('users as u', 'u.id', 'r.user_id')
      .selectAll('r')
      .select(['a.name as account_name', 'a.plan', 'u.email']);
  }

  private keys(db: Kysely<Database> = this.db) {
    return db
      .selectFrom('api_keys as k')
      .innerJoin('accounts as a', 'a.id', 'k.account_id')
      .leftJoin('users as u', 'u.id', 'k.user_id')
      .select(['k.id', 'k.account_id', 'a.name as account_name', 'k.user_id', 'u.email', 'k.scopes', 'k.prefix', 'k.name', 'k.request_id', 'k.replaced_by', 'k.created_at', 'k.expires_at', 'k.revoked_at', 'k.last_used_at']);
  }

  insertRequest(request: NewAccessRequest): Promise<boolean> {
    return guarded(async () => {
      // The partial unique index (one pending request per name per account) decides under concurrency.
      const row = await this.db
        .insertInto('access_requests')
        .values({
          id: request.id,
          account_id: request.accountId,
          user_id: request.userId,
          name: request.name,
          purpose: request.purpose,
          monthly_volume: request.monthlyVolume,
          scopes: request.scopes.join(','),
          contact: request.contact,
          state: 'pending',
          created_at: request.createdAt,
        })
        .onConflict((oc) => oc.expression(sql`account_id, lower(name)`).where('state', '=', 'pending').doNothing())
        .returning('id')
        .executeTakeFirst();
      return row !== undefined;
    });
  }

  findRequest(id: string): Promise<AccessRequest | undefined> {
    return guarded(async () => {
      const row = await this.requests().where('r.id', '=', id).executeTakeFirst();
      return row && toRequest(row as RequestRow);
    });
  }

  listRequests(filter: { accountId?: string; userId?: string; state?: RequestState; pendingFirst?: boolean }, limit: number): Promise<AccessRequest[]> {
    return guarded(async () => {
      let query = this.requests();
      if (filter.accountId !== undefined) query = query.where('r.account_id', '=', filter.accountId);
      if (filter.userId !== undefined) query = query.where('r.user_id', '=', filter.userId);
      if (filter.state !== undefined) query = query.where('r.state', '=', filter.state);
      if (filter.pendingFirst) query = query.orderBy(sql`case when r.state = 'pending' then 0 else 1 end`).orderBy(sql`case when r.state = 'pending' then r.created_at end`, 'asc');
      const rows = await query.orderBy('r.created_at', 'desc').orderBy('r.id', 'desc').limit(limit).execute();
      return rows.map((row) => toRequest(row as RequestRow));
    });
  }

  decide(id: string, decision: Decision): Promise<boolean> {
    return guarded(async () => {
      const result = await this.db
        .updateTable('access_requests')
        .set({
          state: decision.state,
          decided_at: decision.at,
          decided_by: decision.by,
          ...(decision.state === 'denied' ? { reason: decision.reason } : {}),
          ...(decision.state === 'approved' ? { granted_scopes: decision.grantedScopes.join(','), key_days: decision.keyDays, reveal_by: decision.revealBy } : {}),
        })
        .where('id', '=', id)
        .where('state', '=', 'pending')
        .executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    });
  }

  private insertKey(tx: Transaction<Database>, key: NewKey) {
    return tx.insertInto('api_keys').values(keyRow(key)).execute();
  }

  reveal(requestId: string, key: NewKey, now: Date, maxActive: number): Promise<RevealOutcome> {
    return guarded(() =>
      this.db.transaction().execute(async (tx) => {
        const active = await lockedActiveKeys(tx, key.accountId, now);
        // A grant revealed already (or lapsed) says so before the account's limit does: the account's row is locked now.
        const grant = await tx
          .selectFrom('access_requests')
          .select('id')
          .where('id', '=', requestId)
          .where('account_id', '=', key.accountId)
          .where('state', '=', 'approved')
          .where('revealed_at', 'is', null)
          .where('reveal_by', '>', now)
          .forUpdate()
          .executeTakeFirst();
        if (!grant) return 'unavailable' as const;
        if (active >= maxActive) return 'too-many-keys' as const;
        // The grant's row is locked as found: claimed as it is.
        await tx.updateTable('access_requests').set({ revealed_at: now, key_id: key.id }).where('id', '=', requestId).execute();
        await this.insertKey(tx, key);
        return 'revealed' as const;
      }),
    );
  }

  roll(oldId: string, next: NewKey, oldEndsAt: Date, now: Date): Promise<boolean> {
    return guarded(async () => {
      const rolled = await this.db.transaction().execute(async (tx) => {
        await lockedActiveKeys(tx, next.accountId, now);
        const ended = await tx
          .updateTable('api_keys')
          .set({ replaced_by: next.id, expires_at: sql<Date>`case when expires_at is not null and expires_at < ${oldEndsAt} then expires_at else ${oldEndsAt} end` })
          .where('id', '=', oldId)
          .where('account_id', '=', next.accountId)
          .where('revoked_at', 'is', null)
          .where('replaced_by', 'is', null)
          .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
          .executeTakeFirst();
        if (Number(ended.numUpdatedRows) === 0) return false;
        // The key the rolled one replaced, still in its overlap, stops now: a chain of rolls keeps two keys
        // working (the newest and the one it replaces), not one more per roll, none of them counted in the five.
        await tx
          .updateTable('api_keys')
          .set({ expires_at: now })
          .where('replaced_by', '=', oldId)
          .where('account_id', '=', next.accountId)
          .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
          .execute();
        await this.insertKey(tx, next);
        return true;
      });
      if (rolled) this.onKeysChanged();
      return rolled;
    });
  }

  findKey(id: string): Promise<KeyInfo | undefined> {
    return guarded(async () => {
      const row = await this.keys().where('k.id', '=', id).executeTakeFirst();
      return row && toKey(row);
    });
  }

  listKeys(accountId: string | undefined, limit: number): Promise<KeyInfo[]> {
    return guarded(async () => {
      let query = this.keys();
      if (accountId !== undefined) query = query.where('k.account_id', '=', accountId);
      const rows = await query.orderBy('k.created_at', 'desc').orderBy('k.id', 'desc').limit(limit).execute();
      return rows.map(toKey);
    });
  }
}

function toKey(row: Parameters<typeof toKeyRecord>[0] & { account_name: string; name: string | null; request_id: string | null }): KeyInfo {
  return { ...toKeyRecord(row), accountName: row.account_name, name: row.name, requestId: row.request_id, replacedBy: row.replaced_by };
}
