/**
 * The Store for the embedded database. The data directory lock makes this
 * process the database's only user (administration reaches it through our
 * admin socket), so the request path can keep its bookkeeping in memory and
 * write it behind, instead of paying a database statement per call:
 *
 * - keys found by digest are cached (misses are not), and so are accounts'
 *   limits; revoking a key or changing an account or a plan through this
 *   store updates the caches at once;
 * - each monthly counter is loaded once, then checked and incremented in
 *   memory (one JavaScript thread: the check and the increment cannot
 *   interleave, so the limit is exact);
 * - only units of calls that returned 200 are written, in batches a few
 *   milliseconds apart. A crash loses no unit of a failed call and can never
 *   count one twice; it can under-count the calls of the last batch.
 *
 * Everything else goes to the SQL store. While writing fails (disk full,
 * read-only), calls get 503 rather than results the database would lose.
 */
import type { Kysely } from 'kysely';
import { ServiceUnavailableError, type Operation } from '../../errors.js';
import { monthlyLimit, type Account, type AccountDetails, type AccountLimits, type AccountReserveOutcome, type AccountReserveRequest, type KeyMatch, type KeyRecord, type LimitOverrides, type Plan, type ReserveOutcome, type ReserveRequest, type RevokedKey, type ServiceSettings, type Store } from '../../app/ports.js';
import type { Database } from './schema.js';
import type { ActiveKey, SqlStore } from './sql-store.js';
import { guarded } from './unavailable.js';

const FLUSH_DELAY_MS = 10;
/** While writing fails, try again this often. */
const RETRY_DELAY_MS = 1000;
/**
 * A batch is one small transaction (milliseconds). One still unanswered after
 * this long means the database is stuck (a disk gone read-only): calls are
 * refused from then on instead of getting 200s whose counts might never be
 * written. Not less: with both cores saturated (npm run load) batches were
 * seen to wait over 0.5 s for the database's thread.
 */
const MAX_WRITE_LAG_MS = 2000;
/** Bound on cached keys (the cache is rebuilt from the database on demand). */
const MAX_CACHED_KEYS = 10_000;
/** last_used_at is a hint: written at most once a minute per key. */
const TOUCH_INTERVAL_MS = 60_000;

interface Counter {
  readonly accountId: string;
  readonly period: string;
  readonly operation: Operation;
  /** Units of calls that returned 200 (what the database holds, or will after the next write). */
  committed: number;
  /** Units reserved by calls still running; never written. */
  inFlight: number;
}

export class EmbeddedStore implements Store {
  private readonly keys = new Map<string, ActiveKey>();
  private readonly limits = new Map<string, Promise<AccountLimits>>();
  private readonly counters = new Map<string, Counter>();
  private readonly loading = new Map<string, Promise<Counter>>();
  private readonly reservations = new Map<string, Counter>();
  /** Counters committed to since the last write. */
  private readonly dirty = new Set<Counter>();
  private readonly touched = new Map<string, Date>();
  private readonly lastWritten = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  private writingSince = 0;
  private failure: unknown;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly sqlStore: SqlStore,
    private readonly onWriteError: (error: unknown) => void = () => {},
  ) {}

  async authenticateAndReserve(r: ReserveRequest): Promise<ReserveOutcome> {
    this.refuseWhileFailing();
    const match = await this.findKey(r.digest, r.now);
    if (!match) return { kind: 'invalid' };
    const { principal } = match;
    if (!r.plans.includes(principal.plan)) return { kind: 'forbidden', ...match };
    if (!principal.scopes.includes(r.operation)) return { kind: 'out-of-scope', ...match };
    const limit = monthlyLimit(await this.accountLimits(principal.accountId), r.operation);
    const counter = await this.counter(principal.accountId, r.period, r.operation);
    if (limit <= 0 || counter.committed + counter.inFlight >= limit) return { kind: 'exhausted', ...match, limit, held: counter.inFlight };
    counter.inFlight++;
    this.reservations.set(r.reservationId, counter);
    return { kind: 'reserved', ...match, used: counter.committed + counter.inFlight, limit };
  }

  async reserveForAccount(r: AccountReserveRequest): Promise<AccountReserveOutcome> {
    this.refuseWhileFailing();
    const account = await this.sqlStore.findAccountById(r.accountId);
    if (!account) return { kind: 'gone' };
    if (!r.plans.includes(account.plan)) return { kind: 'forbidden', plan: account.plan };
    const limit = monthlyLimit(await this.accountLimits(r.accountId), r.operation);
    const counter = await this.counter(r.accountId, r.period, r.operation);
    if (limit <= 0 || counter.committed + counter.inFlight >= limit) return { kind: 'exhausted', limit, held: counter.inFlight };
    counter.inFlight++;
    this.reservations.set(r.reservationId, counter);
    return { kind: 'reserved', used: counter.committed + counter.inFlight, limit };
  }

  async authenticate(digest: Uint8Array, now: Date): Promise<KeyMatch | undefined> {
    return this.findKey(digest, now);
  }

  async commit(reservationId: string, keyId: string | null, now: Date): Promise<void> {
    const counter = this.reservations.get(reservationId);
    if (!counter) return;
    this.reservations.delete(reservationId);
    counter.inFlight--;
    counter.committed++;
    this.dirty.add(counter);
    if (keyId !== null) this.touched.set(keyId, now);
    this.schedule(FLUSH_DELAY_MS);
  }

  async refund(reservationId: string): Promise<void> {
    const counter = this.reservations.get(reservationId);
    if (!counter) return;
    this.reservations.delete(reservationId);
    counter.inFlight--;
  }

  async usage(accountId: string, period: string): Promise<Record<Operation, number>> {
    const used: Record<Operation, number> = { protect: 0, verify: 0 };
    for (const operation of ['protect', 'verify'] as const) {
      const counter = await this.counter(accountId, period, operation);
      used[operation] = counter.committed + counter.inFlight;
    }
    return used;
  }

  /** Reservations live only in memory here, so a crash leaves none to give back (and no lease to renew). */
  async sweepReservations(): Promise<number> {
    return 0;
  }

  createAccount(account: Account): Promise<boolean> {
    return this.sqlStore.createAccount(account);
  }

  findAccount(name: string): Promise<AccountDetails | undefined> {
    return this.sqlStore.findAccount(name);
  }

  findAccountById(id: string): Promise<AccountDetails | undefined> {
    return this.sqlStore.findAccountById(id);
  }

  listAccounts(): Promise<AccountDetails[]> {
    return this.sqlStore.listAccounts();
  }

  /** Loaded once per account; a failed load is not kept. */
  accountLimits(accountId: string): Promise<AccountLimits> {
    let limits = this.limits.get(accountId);
    if (!limits) {
      limits = this.sqlStore.accountLimits(accountId);
      limits.catch(() => this.limits.delete(accountId));
      if (this.limits.size >= MAX_CACHED_KEYS) this.limits.clear();
      this.limits.set(accountId, limits);
    }
    return limits;
  }

  async setAccountPlan(accountId: string, plan: Plan): Promise<boolean> {
    const changed = await this.sqlStore.setAccountPlan(accountId, plan);
    this.forgetAccounts();
    return changed;
  }

  async setAccountLimits(accountId: string, overrides: Partial<LimitOverrides>): Promise<void> {
    await this.sqlStore.setAccountLimits(accountId, overrides);
    this.limits.delete(accountId);
  }

  async renameAccount(accountId: string, name: string): Promise<boolean> {
    const renamed = await this.sqlStore.renameAccount(accountId, name);
    this.forgetAccounts();
    return renamed;
  }

  async deleteAccount(accountId: string): Promise<boolean> {
    const deleted = await this.sqlStore.deleteAccount(accountId);
    this.forgetAccounts();
    return deleted;
  }

  listAllKeys(): ReturnType<Store['listAllKeys']> {
    return this.sqlStore.listAllKeys();
  }

  planLimits(): Promise<Record<Plan, AccountLimits>> {
    return this.sqlStore.planLimits();
  }

  async setPlanLimits(plan: Plan, limits: Partial<AccountLimits>): Promise<void> {
    await this.sqlStore.setPlanLimits(plan, limits);
    this.limits.clear();
  }

  serviceSettings(): Promise<ServiceSettings> {
    return this.sqlStore.serviceSettings();
  }

  /** Keys were revoked other than through this store (a user disabled): look every key up again. */
  forgetKeys(): void {
    this.keys.clear();
  }

  /** Cached keys carry their account's name and plan, and limits follow the plan: after a change, both are loaded again. */
  private forgetAccounts(): void {
    this.keys.clear();
    this.limits.clear();
  }

  countAccounts(): Promise<number> {
    return this.sqlStore.countAccounts();
  }

  insertKey(key: KeyRecord & { digest: Uint8Array }, maxActive: number): Promise<boolean> {
    return this.sqlStore.insertKey(key, maxActive);
  }

  listKeys(accountId: string): Promise<Array<KeyRecord & { userEmail: string | null }>> {
    return this.sqlStore.listKeys(accountId);
  }

  async revokeKey(id: string, now: Date): Promise<RevokedKey | undefined> {
    const revoked = await this.sqlStore.revokeKey(id, now);
    for (const [digest, key] of this.keys) if (key.principal.keyId === id) this.keys.delete(digest);
    return revoked;
  }

  async ping(): Promise<void> {
    this.refuseWhileFailing();
    await this.sqlStore.ping();
  }

  /** Write what is pending (also used by tests and by close). */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.writing) await this.writing;
    const dirty = [...this.dirty];
    this.dirty.clear();
    const touched = [...this.touched].filter(([id, at]) => at.getTime() - (this.lastWritten.get(id) ?? 0) >= TOUCH_INTERVAL_MS);
    this.touched.clear();
    if (dirty.length === 0 && touched.length === 0) return;
    this.writingSince = performance.now();
    this.writing = this.write(dirty, touched).then(
      () => {
        this.failure = undefined;
        for (const [id, at] of touched) this.lastWritten.set(id, at.getTime());
      },
      (error: unknown) => {
        this.failure = error;
        for (const counter of dirty) this.dirty.add(counter);
        this.onWriteError(error);
        this.schedule(RETRY_DELAY_MS);
      },
    );
    try {
      await this.writing;
    } finally {
      this.writing = undefined;
    }
  }

  private refuseWhileFailing(): void {
    if (this.failure !== undefined) {
      throw new ServiceUnavailableError('The database cannot be written; try again shortly', 5, { cause: this.failure });
    }
    if (this.writing && performance.now() - this.writingSince > MAX_WRITE_LAG_MS) {
      throw new ServiceUnavailableError('The database is not keeping up with writes; try again shortly', 2);
    }
  }

  private schedule(delay: number): void {
    this.timer ??= setTimeout(() => void this.flush(), delay).unref();
  }

  private write(counters: readonly Counter[], touched: ReadonlyArray<[string, Date]>): Promise<void> {
    return guarded(async () => {
      await this.db.transaction().execute(async (tx) => {
        if (counters.length > 0) {
          // Absolute values: writing the same state twice is harmless.
          await tx
            .insertInto('usage')
            .values(counters.map((c) => ({ account_id: c.accountId, period: c.period, operation: c.operation, used: c.committed })))
            .onConflict((oc) => oc.columns(['account_id', 'period', 'operation']).doUpdateSet({ used: (eb) => eb.ref('excluded.used') }))
            .execute();
        }
        for (const [id, at] of touched) {
          await tx.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id).execute();
        }
      });
    });
  }

  private async findKey(digest: Uint8Array, now: Date): Promise<KeyMatch | undefined> {
    const id = hex(digest);
    let key = this.keys.get(id);
    if (!key) {
      key = await this.sqlStore.findKey(digest);
      if (!key) return undefined;
      if (this.keys.size >= MAX_CACHED_KEYS) this.keys.clear();
      this.keys.set(id, key);
    }
    if (key.expiresAt !== null && key.expiresAt <= now) return undefined;
    return { principal: key.principal };
  }

  /** The in-memory counter, loaded from the database once; concurrent first uses share one load. */
  private async counter(accountId: string, period: string, operation: Operation): Promise<Counter> {
    const id = `${accountId}|${period}|${operation}`;
    const known = this.counters.get(id);
    if (known) return known;
    let pending = this.loading.get(id);
    if (!pending) {
      pending = guarded(async () => {
        const row = await this.db
          .selectFrom('usage')
          .select('used')
          .where('account_id', '=', accountId)
          .where('period', '=', period)
          .where('operation', '=', operation)
          .executeTakeFirst();
        const counter: Counter = { accountId, period, operation, committed: row?.used ?? 0, inFlight: 0 };
        this.counters.set(id, counter);
        return counter;
      }).finally(() => this.loading.delete(id));
      this.loading.set(id, pending);
    }
    return pending;
  }
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

