/**
 * The Store over SQL (Kysely; the same statements on PGlite and PostgreSQL).
 * The request path is two statements per call: one that authenticates the key
 * and reserves a unit atomically, and one that settles the reservation.
 */
import { sql, type Insertable, type Kysely } from 'kysely';
import type { Operation } from '../../errors.js';
import type {
  Account,
  AccountDetails,
  AccountLimits,
  AccountReserveOutcome,
  AccountReserveRequest,
  KeyMatch,
  KeyRecord,
  LimitOverrides,
  Plan,
  ReserveOutcome,
  ReserveRequest,
  RevokedKey,
  Scope,
  ServiceSettings,
  Store,
} from '../../app/ports.js';
import { SCOPES } from '../../app/ports.js';
import type { ApiKeysTable, Database } from './schema.js';
import { lockedActiveKeys } from './active-keys.js';
import { guarded } from './unavailable.js';

interface PrincipalRow {
  key_id: string;
  account_id: string;
  account_name: string;
  plan: string;
  user_id: string | null;
  scopes: string;
}

export const parseScopes = (scopes: string): Scope[] => scopes.split(',').filter((s): s is Scope => (SCOPES as readonly string[]).includes(s));

const toMatch = (row: PrincipalRow): KeyMatch => ({
  principal: { keyId: row.key_id, accountId: row.account_id, accountName: row.account_name, plan: row.plan as Plan, userId: row.user_id, scopes: parseScopes(row.scopes) },
});

/** A key that is not revoked, with its expiry (which the caller checks). */
export interface ActiveKey extends KeyMatch {
  readonly expiresAt: Date | null;
}

/** The account's monthly allowance of an operation (accounts `a` joined to plan_limits `p`): its own, else its plan's. */
const monthlyLimitOf = (operation: Operation) =>
  sql`case when ${operation} = 'protect' then coalesce(a.protect_limit, p.protect_per_month) else coalesce(a.verify_limit, p.verify_per_month) end`;

/** Keys used in the last minute are not touched again: last_used_at is a hint, not a log. */
const TOUCH_INTERVAL = sql`interval '60 seconds'`;

/** Commits are written in batches: at most this many, or after this delay. */
const MAX_BATCH = 64;
const BATCH_DELAY_MS = 10;
/** While writing fails, try again this often. */
const RETRY_DELAY_MS = 1000;
/** Refunds kept for another try while the database is away (a few MB at most). */
const MAX_UNREFUNDED = 100_000;

export class SqlStore implements Store {
  private commits: Array<{ reservationId: string; keyId: string | null; now: Date }> = [];
  /** Refunds the database did not confirm (it was away): tried again until it does, since this server's own sweep never gives them back. */
  private readonly unrefunded = new Set<string>();
  /** Reservations committed whose row is not deleted yet (queued, or in a batch being written): a refund must not give them back. */
  private readonly committed = new Set<string>();
  private flushTimer: NodeJS.Timeout | undefined;
  private readonly flushing = new Set<Promise<void>>();

  /**
   * @param instanceId this server's id in the `instances` table: its
   *   reservations carry it, and are given back only once it stops renewing
   *   its lease (a server that reads and administers only may omit it).
   */
  constructor(
    private readonly db: Kysely<Database>,
    private readonly onFlushError: (error: unknown) => void = () => {},
    private readonly instanceId?: string,
  ) {}

  authenticateAndReserve(r: ReserveRequest): Promise<ReserveOutcome> {
    return guarded(async () => {
      // One statement, so the whole decision is atomic: find the key, and if
      // its plan has API access, increment this month's counter unless it is
      // at the limit (INSERT .. ON CONFLICT DO UPDATE .. WHERE re-checks the
      // locked row), and record the reservation.
      // The limit is the account's own for the operation, else its plan's.
      const { rows } = await sql<PrincipalRow & { used: number | null; monthly_limit: number }>`
        with k as (
          select k.id as key_id, a.id as account_id, a.name as account_name, a.plan, k.user_id, k.scopes,
            ${monthlyLimitOf(r.operation)} as monthly_limit
          from api_keys k join accounts a on a.id = k.account_id join plan_limits p on p.plan = a.plan
            left join users person on person.id = k.user_id
          -- The key's person, when it has one, still enabled: a key made while they were being disabled does not work.
          where k.digest = ${r.digest} and k.revoked_at is null and (k.expires_at is null or k.expires_at > ${r.now}) and person.disabled_at is null
        ),
        u as (
          insert into usage (account_id, period, operation, used)
          select account_id, ${r.period}, ${r.operation}, 1 from k
          where plan = any (string_to_array(${r.plans.join(',')}, ',')) and monthly_limit > 0
            and ${r.operation} = any (string_to_array(scopes, ','))
          on conflict (account_id, period, operation)
            do update set used = usage.used + 1 where usage.used < (select monthly_limit from k)
          returning used
        ),
        reserved as (
          insert into reservations (id, account_id, period, operation, created_at, instance_id)
          select ${r.reservationId}::uuid, k.account_id, ${r.period}, ${r.operation}, ${r.now}::timestamptz, ${this.instanceId ?? null}::uuid from k, u
        )
        select k.*, u.used from k left join u on true
      `.execute(this.db);
      const row = rows[0];
      if (!row) return { kind: 'invalid' };
      const match = toMatch(row);
      if (!(r.plans as string[]).includes(row.plan)) return { kind: 'forbidden', ...match };
      if (!match.principal.scopes.includes(r.operation)) return { kind: 'out-of-scope', ...match };
      const limit = Number(row.monthly_limit);
      if (row.used === null) return { kind: 'exhausted', ...match, limit, held: await this.held(match.principal.accountId, r.period, r.operation) };
      return { kind: 'reserved', ...match, used: Number(row.used), limit };
    });
  }

  /**
   * Units of the month reserved by calls still running (said with a refusal
   * at the allowance): the reservations, but those of this server's calls
   * that returned 200 and wait for the next batch of commits.
   */
  private async held(accountId: string, period: string, operation: string): Promise<number> {
    const rows = await this.db.selectFrom('reservations').select('id').where('account_id', '=', accountId).where('period', '=', period).where('operation', '=', operation).execute();
    return rows.filter((row) => !this.committed.has(row.id)).length;
  }

  reserveForAccount(r: AccountReserveRequest): Promise<AccountReserveOutcome> {
    return guarded(async () => {
      // The key statement's twin, for an account found by its id.
      const { rows } = await sql<{ plan: string; monthly_limit: number; used: number | null }>`
        with a as (
          select a.id as account_id, a.plan,
            ${monthlyLimitOf(r.operation)} as monthly_limit
          from accounts a join plan_limits p on p.plan = a.plan
          where a.id = ${r.accountId}
        ),
        u as (
          insert into usage (account_id, period, operation, used)
          select account_id, ${r.period}, ${r.operation}, 1 from a
          where plan = any (string_to_array(${r.plans.join(',')}, ',')) and monthly_limit > 0
          on conflict (account_id, period, operation)
            do update set used = usage.used + 1 where usage.used < (select monthly_limit from a)
          returning used
        ),
        reserved as (
          insert into reservations (id, account_id, period, operation, created_at, instance_id)
          select ${r.reservationId}::uuid, a.account_id, ${r.period}, ${r.operation}, ${r.now}::timestamptz, ${this.instanceId ?? null}::uuid from a, u
        )
        select a.plan, a.monthly_limit, u.used from a left join u on true
      `.execute(this.db);
      const row = rows[0];
      if (!row) return { kind: 'gone' };
      if (!(r.plans as string[]).includes(row.plan)) return { kind: 'forbidden', plan: row.plan as Plan };
      const limit = Number(row.monthly_limit);
      if (row.used === null) return { kind: 'exhausted', limit, held: await this.held(r.accountId, r.period, r.operation) };
      return { kind: 'reserved', used: Number(row.used), limit };
    });
  }

  async authenticate(digest: Uint8Array, now: Date): Promise<KeyMatch | undefined> {
    const key = await this.findKey(digest);
    return key && (key.expiresAt === null || key.expiresAt > now) ? { principal: key.principal } : undefined;
  }

  /** The key with this digest, unless revoked; the embedded store caches what this returns. */
  findKey(digest: Uint8Array): Promise<ActiveKey | undefined> {
    return guarded(async () => {
      const row = await this.db
        .selectFrom('api_keys as k')
        .innerJoin('accounts as a', 'a.id', 'k.account_id')
        .leftJoin('users as u', 'u.id', 'k.user_id')
        .select(['k.id as key_id', 'k.expires_at', 'k.user_id', 'k.scopes', 'a.id as account_id', 'a.name as account_name', 'a.plan'])
        .where('k.digest', '=', digest)
        .where('k.revoked_at', 'is', null)
        // The key's person, when it has one, still enabled (as authenticateAndReserve).
        .where('u.disabled_at', 'is', null)
        .executeTakeFirst();
      return row && { ...toMatch(row), expiresAt: row.expires_at };
    });
  }

  commit(reservationId: string, keyId: string | null, now: Date): Promise<void> {
    this.commits.push({ reservationId, keyId, now });
    this.committed.add(reservationId);
    if (this.commits.length >= MAX_BATCH) void this.flush();
    else this.flushTimer ??= setTimeout(() => void this.flush(), BATCH_DELAY_MS).unref();
    return Promise.resolve();
  }

  /**
   * Settle the queued commits in one statement: their reservations are
   * deleted, and their keys' last_used_at moved on (at most once a minute:
   * it is a hint, not a log). A commit whose reservation was swept (given
   * back by a server that judged this one gone while its call still ran)
   * counts its unit again: the call returned 200. A failed write is retried;
   * a retry after a write whose answer was lost finds the rows gone and
   * counts nothing twice. A crash before it succeeds loses no unit of a
   * failed call; it under-counts the few successful ones the sweep then
   * gives back. Refunds the database did not confirm are tried again here.
   */
  async flush(): Promise<void> {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    await this.retryRefunds().catch(() => {
      this.flushTimer ??= setTimeout(() => void this.flush(), RETRY_DELAY_MS).unref();
    });
    const batch = this.commits.splice(0);
    if (batch.length === 0) {
      await Promise.all(this.flushing);
      return;
    }
    const now = batch.at(-1)!.now;
    const flushing = guarded(async () => {
      await sql`
        with settled as (
          delete from reservations where id = any (string_to_array(${batch.map((c) => c.reservationId).join(',')}, ',')::uuid[])
          returning account_id, period, operation, swept
        ),
        recount as (
          select account_id, period, operation, count(*)::int as n from settled where swept group by account_id, period, operation
        ),
        recounted as (
          update usage set used = usage.used + recount.n from recount
          where usage.account_id = recount.account_id and usage.period = recount.period and usage.operation = recount.operation
        )
        update api_keys set last_used_at = ${now}
        where id = any (string_to_array(${[...new Set(batch.flatMap((c) => (c.keyId === null ? [] : [c.keyId])))].join(',')}, ','))
          and (last_used_at is null or last_used_at < ${now}::timestamptz - ${TOUCH_INTERVAL})
      `.execute(this.db);
      for (const c of batch) this.committed.delete(c.reservationId);
    }).catch((error: unknown) => {
      // Keep them for the next try: these calls did return 200.
      this.commits.unshift(...batch);
      this.flushTimer ??= setTimeout(() => void this.flush(), RETRY_DELAY_MS).unref();
      this.onFlushError(error);
    });
    this.flushing.add(flushing);
    await Promise.all(this.flushing);
    this.flushing.delete(flushing);
  }

  refund(reservationId: string): Promise<void> {
    // Committed but not written yet: its row still exists, and deleting it here would give back a unit of a 200.
    if (this.committed.has(reservationId)) return Promise.resolve();
    return guarded(async () => {
      // Deleting the reservation and decrementing happen together, and only
      // if the reservation was still open (a second refund finds nothing)
      // and not given back already by a sweep.
      await sql`
        with r as (delete from reservations where id = ${reservationId}::uuid returning account_id, period, operation, swept)
        update usage set used = usage.used - 1 from r
        where usage.account_id = r.account_id and usage.period = r.period and usage.operation = r.operation and not r.swept
      `.execute(this.db);
      this.unrefunded.delete(reservationId);
    }).catch((error: unknown) => {
      // Not confirmed: the statement may or may not have run. A refund is
      // safe to repeat, and nothing else would give the unit back while this
      // server lives: tried again (all of them in one statement) until the
      // database confirms it.
      if (this.unrefunded.size < MAX_UNREFUNDED) this.unrefunded.add(reservationId);
      this.flushTimer ??= setTimeout(() => void this.flush(), RETRY_DELAY_MS).unref();
      throw error;
    });
  }

  /** The refunds the database has not confirmed, in one statement; each gives its unit back once, and only if still reserved. */
  private async retryRefunds(): Promise<void> {
    const ids = [...this.unrefunded];
    if (ids.length === 0) return;
    await guarded(async () => {
      await sql`
        with r as (
          delete from reservations where id = any (string_to_array(${ids.join(',')}, ',')::uuid[])
          returning account_id, period, operation, swept
        ),
        c as (select account_id, period, operation, count(*)::int as n from r where not swept group by account_id, period, operation)
        update usage set used = usage.used - c.n from c
        where usage.account_id = c.account_id and usage.period = c.period and usage.operation = c.operation
      `.execute(this.db);
    });
    for (const id of ids) this.unrefunded.delete(id);
  }

  async heartbeat(now: Date): Promise<void> {
    if (!this.instanceId) return;
    await guarded(async () => {
      await sql`
        insert into instances (id, started_at, heartbeat_at) values (${this.instanceId}::uuid, ${now}, ${now})
        on conflict (id) do update set heartbeat_at = excluded.heartbeat_at
      `.execute(this.db);
    });
  }

  async sweepReservations(cutoff: Date, now: Date): Promise<number> {
    // Commits still queued here are calls that returned 200: write them first.
    await this.flush();
    // This server is alive: renewed first, so that its own calls are never given back.
    await this.heartbeat(now);
    const self = this.instanceId ?? null;
    // A reservation given back stays, marked swept, so that the commit of a
    // call still running counts it again, and a refund does not give it back
    // twice; it is forgotten once it is older than any call can last (the TTL
    // is more than twice the longest call), with a TTL's margin.
    const forgetBefore = new Date(cutoff.getTime() - (now.getTime() - cutoff.getTime()));
    return guarded(async () => {
      // Gone: a server whose lease ran out (or that left no lease: it never
      // started, or its row was swept); rows that name no server, by age.
      const { rows } = await sql<{ n: number }>`
        with gone as (
          delete from instances where heartbeat_at < ${cutoff} and id is distinct from ${self}::uuid
        ),
        r as (
          update reservations res set swept = true
          where not res.swept and (
            (res.instance_id is null and res.created_at < ${cutoff})
            or (res.instance_id is not null and res.instance_id is distinct from ${self}::uuid
                and not exists (select 1 from instances i where i.id = res.instance_id and i.heartbeat_at >= ${cutoff})))
          returning account_id, period, operation
        ),
        forgotten as (
          delete from reservations where swept and created_at < ${forgetBefore}
        ),
        c as (select account_id, period, operation, count(*)::int as n from r group by account_id, period, operation),
        u as (
          update usage set used = usage.used - c.n from c
          where usage.account_id = c.account_id and usage.period = c.period and usage.operation = c.operation
          returning c.n
        )
        select coalesce(sum(n), 0)::int as n from u
      `.execute(this.db);
      return Number(rows[0]?.n ?? 0);
    });
  }

  usage(accountId: string, period: string): Promise<Record<Operation, number>> {
    return guarded(async () => {
      const rows = await this.db.selectFrom('usage').select(['operation', 'used']).where('account_id', '=', accountId).where('period', '=', period).execute();
      const used: Record<Operation, number> = { protect: 0, verify: 0 };
      for (const row of rows) used[row.operation as Operation] = row.used;
      return used;
    });
  }

  createAccount(account: Account): Promise<boolean> {
    return guarded(async () => {
      const row = await this.db
        .insertInto('accounts')
        .values({ id: account.id, name: account.name, plan: account.plan, created_at: account.createdAt })
        .onConflict((oc) => oc.column('name').doNothing())
        .returning('id')
        .executeTakeFirst();
      return row !== undefined;
    });
  }

  findAccount(name: string): Promise<AccountDetails | undefined> {
    return guarded(async () => (await this.accounts({ name }))[0]);
  }

  findAccountById(id: string): Promise<AccountDetails | undefined> {
    return guarded(async () => (await this.accounts({ id }))[0]);
  }

  listAccounts(): Promise<AccountDetails[]> {
    return guarded(() => this.accounts());
  }

  /** Accounts with their plan's limits joined (one, by name or id, or all, ordered by name). */
  private async accounts(filter: { name?: string; id?: string } = {}): Promise<AccountDetails[]> {
    let query = this.db
      .selectFrom('accounts as a')
      .innerJoin('plan_limits as p', 'p.plan', 'a.plan')
      .select([
        'a.id',
        'a.name',
        'a.plan',
        'a.created_at',
        'a.protect_limit',
        'a.verify_limit',
        'a.scans_per_user_per_day',
        'a.vault_bytes',
        'p.protect_per_month',
        'p.verify_per_month',
        'p.scans_per_user_per_day as plan_scans',
        'p.vault_bytes as plan_vault_bytes',
        'p.report_retention_days',
      ])
      .orderBy('a.name');
    if (filter.name !== undefined) query = query.where('a.name', '=', filter.name);
    if (filter.id !== undefined) query = query.where('a.id', '=', filter.id);
    const rows = await query.execute();
    return rows.map((row) => {
      const overrides: LimitOverrides = {
        protectPerMonth: row.protect_limit,
        verifyPerMonth: row.verify_limit,
        scansPerUserPerDay: row.scans_per_user_per_day,
        vaultBytes: row.vault_bytes === null ? null : Number(row.vault_bytes),
      };
      const plan: AccountLimits = {
        protectPerMonth: row.protect_per_month,
        verifyPerMonth: row.verify_per_month,
        scansPerUserPerDay: row.plan_scans,
        vaultBytes: Number(row.plan_vault_bytes),
        reportRetentionDays: row.report_retention_days,
      };
      return { id: row.id, name: row.name, plan: row.plan as Plan, createdAt: row.created_at, overrides, limits: applyOverrides(plan, overrides) };
    });
  }

  accountLimits(accountId: string): Promise<AccountLimits> {
    return guarded(async () => {
      const row = await this.db
        .selectFrom('accounts as a')
        .innerJoin('plan_limits as p', 'p.plan', 'a.plan')
        .select((eb) => [
          eb.fn.coalesce('a.protect_limit', 'p.protect_per_month').as('protect'),
          eb.fn.coalesce('a.verify_limit', 'p.verify_per_month').as('verify'),
          eb.fn.coalesce('a.scans_per_user_per_day', 'p.scans_per_user_per_day').as('scans'),
          eb.fn.coalesce('a.vault_bytes', 'p.vault_bytes').as('vault'),
          'p.report_retention_days',
        ])
        .where('a.id', '=', accountId)
        .executeTakeFirst();
      // An account deleted under a running call: nothing left to allow.
      if (!row) return { protectPerMonth: 0, verifyPerMonth: 0, scansPerUserPerDay: 0, vaultBytes: 0, reportRetentionDays: 1 };
      return {
        protectPerMonth: Number(row.protect),
        verifyPerMonth: Number(row.verify),
        scansPerUserPerDay: Number(row.scans),
        vaultBytes: Number(row.vault),
        reportRetentionDays: row.report_retention_days,
      };
    });
  }

  setAccountPlan(accountId: string, plan: Plan): Promise<boolean> {
    return guarded(async () => {
      const result = await this.db.updateTable('accounts').set({ plan }).where('id', '=', accountId).executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    });
  }

  setAccountLimits(accountId: string, overrides: Partial<LimitOverrides>): Promise<void> {
    return guarded(async () => {
      const set: Record<string, number | null> = {};
      if (overrides.protectPerMonth !== undefined) set.protect_limit = overrides.protectPerMonth;
      if (overrides.verifyPerMonth !== undefined) set.verify_limit = overrides.verifyPerMonth;
      if (overrides.scansPerUserPerDay !== undefined) set.scans_per_user_per_day = overrides.scansPerUserPerDay;
      if (overrides.vaultBytes !== undefined) set.vault_bytes = overrides.vaultBytes;
      if (Object.keys(set).length === 0) return;
      await this.db.updateTable('accounts').set(set).where('id', '=', accountId).execute();
    });
  }

  deleteAccount(accountId: string): Promise<boolean> {
    return guarded(async () => {
      const deleted = await this.db.deleteFrom('accounts').where('id', '=', accountId).executeTakeFirst();
      return Number(deleted.numDeletedRows) > 0;
    });
  }

  listAllKeys(): Promise<Array<KeyRecord & { userEmail: string | null; accountName: string }>> {
    return guarded(async () => {
      const rows = await this.db
        .selectFrom('api_keys as k')
        .innerJoin('accounts as a', 'a.id', 'k.account_id')
        .leftJoin('users as u', 'u.id', 'k.user_id')
        .select(['k.id', 'k.account_id', 'a.name', 'k.user_id', 'k.scopes', 'u.email', 'k.prefix', 'k.created_at', 'k.expires_at', 'k.revoked_at', 'k.last_used_at', 'k.replaced_by'])
        .orderBy('a.name')
        .orderBy('k.created_at')
        .orderBy('k.id')
        .execute();
      return rows.map((r) => ({ ...toKeyRecord(r), accountName: r.name }));
    });
  }

  renameAccount(accountId: string, name: string): Promise<boolean> {
    return guarded(async () => {
      const taken = await this.db.selectFrom('accounts').select('id').where('name', '=', name).where('id', '<>', accountId).executeTakeFirst();
      if (taken) return false;
      try {
        await this.db.updateTable('accounts').set({ name }).where('id', '=', accountId).execute();
        return true;
      } catch (error) {
        // Another rename to the same name won the race (the unique index).
        if ((error as { code?: string }).code === '23505') return false;
        throw error;
      }
    });
  }

  planLimits(): Promise<Record<Plan, AccountLimits>> {
    return guarded(async () => {
      const rows = await this.db.selectFrom('plan_limits').selectAll().execute();
      return Object.fromEntries(
        rows.map((row) => [
          row.plan,
          {
            protectPerMonth: row.protect_per_month,
            verifyPerMonth: row.verify_per_month,
            scansPerUserPerDay: row.scans_per_user_per_day,
            vaultBytes: Number(row.vault_bytes),
            reportRetentionDays: row.report_retention_days,
          },
        ]),
      ) as Record<Plan, AccountLimits>;
    });
  }

  setPlanLimits(plan: Plan, limits: Partial<AccountLimits>): Promise<void> {
    return guarded(async () => {
      const set: Record<string, number> = {};
      if (limits.protectPerMonth !== undefined) set.protect_per_month = limits.protectPerMonth;
      if (limits.verifyPerMonth !== undefined) set.verify_per_month = limits.verifyPerMonth;
      if (limits.scansPerUserPerDay !== undefined) set.scans_per_user_per_day = limits.scansPerUserPerDay;
      if (limits.vaultBytes !== undefined) set.vault_bytes = limits.vaultBytes;
      if (limits.reportRetentionDays !== undefined) set.report_retention_days = limits.reportRetentionDays;
      if (Object.keys(set).length === 0) return;
      await this.db.updateTable('plan_limits').set(set).where('plan', '=', plan).execute();
    });
  }

  countAccounts(): Promise<number> {
    return guarded(async () => {
      const row = await this.db.selectFrom('accounts').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      return Number(row.n);
    });
  }

  insertKey(key: KeyRecord & { digest: Uint8Array }, maxActive: number): Promise<boolean> {
    return guarded(() =>
      this.db.transaction().execute(async (tx) => {
        if ((await lockedActiveKeys(tx, key.accountId, key.createdAt)) >= maxActive) return false;
        await tx.insertInto('api_keys').values(keyRow(key)).execute();
        return true;
      }),
    );
  }

  listKeys(accountId: string): Promise<Array<KeyRecord & { userEmail: string | null }>> {
    return guarded(async () => {
      const rows = await this.db
        .selectFrom('api_keys as k')
        .leftJoin('users as u', 'u.id', 'k.user_id')
        .select(['k.id', 'k.account_id', 'k.user_id', 'k.scopes', 'u.email', 'k.prefix', 'k.created_at', 'k.expires_at', 'k.revoked_at', 'k.last_used_at', 'k.replaced_by'])
        .where('k.account_id', '=', accountId)
        .orderBy('k.created_at')
        .orderBy('k.id')
        .execute();
      return rows.map(toKeyRecord);
    });
  }

  revokeKey(id: string, now: Date): Promise<RevokedKey | undefined> {
    return guarded(async () => {
      const row = await this.db
        .updateTable('api_keys')
        .set({ revoked_at: now })
        .where('id', '=', id)
        .where('revoked_at', 'is', null)
        .returning(['account_id', 'prefix'])
        .executeTakeFirst();
      return row && { accountId: row.account_id, prefix: row.prefix };
    });
  }

  serviceSettings(): Promise<ServiceSettings> {
    return guarded(async () => {
      const row = await this.db.selectFrom('service_settings').selectAll().executeTakeFirstOrThrow();
      return { scanCeilingPerDay: row.scan_ceiling_per_day, scansPaused: row.scans_paused };
    });
  }

  ping(): Promise<void> {
    return guarded(async () => {
      await sql`select 1`.execute(this.db);
    });
  }
}

/** A key as read with its user's email (api_keys joined to users). */
export function toKeyRecord(r: {
  id: string;
  account_id: string;
  user_id: string | null;
  email: string | null;
  scopes: string;
  prefix: string;
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  replaced_by: string | null;
}): KeyRecord & { userEmail: string | null } {
  return {
    id: r.id,
    accountId: r.account_id,
    userId: r.user_id,
    userEmail: r.email,
    scopes: parseScopes(r.scopes),
    prefix: r.prefix,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    revokedAt: r.revoked_at,
    lastUsedAt: r.last_used_at,
    replacedBy: r.replaced_by,
  };
}

/** The api_keys row of a key (its integration name and request, when it came from one: app/access). */
export function keyRow(key: KeyRecord & { readonly digest: Uint8Array; readonly name?: string | null; readonly requestId?: string | null }): Insertable<ApiKeysTable> {
  return {
    id: key.id,
    account_id: key.accountId,
    user_id: key.userId,
    scopes: key.scopes.join(','),
    prefix: key.prefix,
    digest: key.digest,
    created_at: key.createdAt,
    expires_at: key.expiresAt,
    revoked_at: key.revokedAt,
    last_used_at: key.lastUsedAt,
    name: key.name ?? null,
    request_id: key.requestId ?? null,
  };
}

/** A plan's limits with an account's overrides applied. */
export function applyOverrides(plan: AccountLimits, overrides: LimitOverrides): AccountLimits {
  return {
    protectPerMonth: overrides.protectPerMonth ?? plan.protectPerMonth,
    verifyPerMonth: overrides.verifyPerMonth ?? plan.verifyPerMonth,
    scansPerUserPerDay: overrides.scansPerUserPerDay ?? plan.scansPerUserPerDay,
    vaultBytes: overrides.vaultBytes ?? plan.vaultBytes,
    reportRetentionDays: plan.reportRetentionDays,
  };
}
