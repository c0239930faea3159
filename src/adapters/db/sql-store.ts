/**
 * The Store over SQL (Kysely; the same statements on PGlite and PostgreSQL).
 * The request path is two statements per call: one that authenticates the key
 * and reserves a unit atomically, and one that settles the reservation.
 */
import { sql, type Kysely } from 'kysely';
import type { Operation } from '../../errors.js';
import type { Account, KeyMatch, KeyRecord, Plan, ReserveOutcome, ReserveRequest, Store } from '../../app/ports.js';
import type { Database } from './schema.js';
import { guarded } from './unavailable.js';

interface PrincipalRow {
  key_id: string;
  account_id: string;
  account_name: string;
  plan: string;
}

const toMatch = (row: PrincipalRow): KeyMatch => ({
  principal: { keyId: row.key_id, accountId: row.account_id, accountName: row.account_name, plan: row.plan as Plan },
});

/** A key that is not revoked, with its expiry (which the caller checks). */
export interface ActiveKey extends KeyMatch {
  readonly expiresAt: Date | null;
}

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
  private commits: Array<{ reservationId: string; keyId: string; now: Date }> = [];
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
      const { rows } = await sql<PrincipalRow & { used: number | null }>`
        with k as (
          select k.id as key_id, a.id as account_id, a.name as account_name, a.plan
          from api_keys k join accounts a on a.id = k.account_id
          where k.digest = ${r.digest} and k.revoked_at is null and (k.expires_at is null or k.expires_at > ${r.now})
        ),
        u as (
          insert into usage (account_id, period, operation, used)
          select account_id, ${r.period}, ${r.operation}, 1 from k
          where plan = any (string_to_array(${r.plans.join(',')}, ',')) and ${r.limit}::int > 0
          on conflict (account_id, period, operation)
            do update set used = usage.used + 1 where usage.used < ${r.limit}::int
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
      if (row.used === null) return { kind: 'exhausted', ...match };
      return { kind: 'reserved', ...match, used: Number(row.used) };
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
        .select(['k.id as key_id', 'k.expires_at', 'a.id as account_id', 'a.name as account_name', 'a.plan'])
        .where('k.digest', '=', digest)
        .where('k.revoked_at', 'is', null)
        .executeTakeFirst();
      return row && { ...toMatch(row), expiresAt: row.expires_at };
    });
  }

  commit(reservationId: string, keyId: string, now: Date): Promise<void> {
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
        where id = any (string_to_array(${[...new Set(batch.map((c) => c.keyId))].join(',')}, ','))
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

  findAccount(name: string): Promise<Account | undefined> {
    return guarded(async () => {
      const row = await this.db.selectFrom('accounts').selectAll().where('name', '=', name).executeTakeFirst();
      return row && { id: row.id, name: row.name, plan: row.plan as Plan, createdAt: row.created_at };
    });
  }

  countAccounts(): Promise<number> {
    return guarded(async () => {
      const row = await this.db.selectFrom('accounts').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      return Number(row.n);
    });
  }

  insertKey(key: KeyRecord & { digest: Uint8Array }): Promise<void> {
    return guarded(async () => {
      await this.db
        .insertInto('api_keys')
        .values({
          id: key.id,
          account_id: key.accountId,
          prefix: key.prefix,
          digest: key.digest,
          created_at: key.createdAt,
          expires_at: key.expiresAt,
          revoked_at: key.revokedAt,
          last_used_at: key.lastUsedAt,
        })
        .execute();
    });
  }

  listKeys(accountId: string): Promise<KeyRecord[]> {
    return guarded(async () => {
      const rows = await this.db
        .selectFrom('api_keys')
        .select(['id', 'account_id', 'prefix', 'created_at', 'expires_at', 'revoked_at', 'last_used_at'])
        .where('account_id', '=', accountId)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      return rows.map((r) => ({
        id: r.id,
        accountId: r.account_id,
        prefix: r.prefix,
        createdAt: r.created_at,
        expiresAt: r.expires_at,
        revokedAt: r.revoked_at,
        lastUsedAt: r.last_used_at,
      }));
    });
  }

  revokeKey(id: string, now: Date): Promise<boolean> {
    return guarded(async () => {
      const result = await this.db.updateTable('api_keys').set({ revoked_at: now }).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    });
  }

  ping(): Promise<void> {
    return guarded(async () => {
      await sql`select 1`.execute(this.db);
    });
  }
}
