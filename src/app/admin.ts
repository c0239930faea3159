/**
 * Accounts and API keys, for operators (the CLI, the admin socket). Keys are
 * shown once, at issue, and stored only as their SHA-256 digest.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { apiKeyDigest, generateApiKey, randomBase62, visiblePrefix } from '../core/keys/api-key.js';
import { periodOf } from '../core/quota/period.js';
import { AdminError, InvalidOptionError } from '../errors.js';
import { OVERRIDABLE_LIMITS, PLANS, SCOPES, type Account, type AccountDetails, type AccountLimits, type Clock, type KeyRecord, type LimitOverrides, type Plan, type Scope, type Store } from './ports.js';
import type { PeopleStore } from './people/ports.js';
import { usageReport, type UsageReport } from './usage.js';

/** Enough for a key per environment plus one being rolled in. */
export const MAX_ACTIVE_KEYS = 5;
/** The account a fresh installation creates, so a newcomer can call the API at once. */
export const LOCAL_ACCOUNT = 'local';

export interface IssuedKey {
  readonly id: string;
  /** The key itself: shown this once, never stored. */
  readonly key: string;
  readonly prefix: string;
  readonly account: string;
  /** The email of the key's user (null: the account has no users yet). */
  readonly user: string | null;
  readonly scopes: readonly Scope[];
  readonly expiresAt: Date | null;
}

export interface KeyView extends Omit<KeyRecord, 'accountId' | 'userId'> {
  /** The email of the key's user (null: made before the account had users). */
  readonly user: string | null;
  readonly active: boolean;
}

/** What deleting an account took with it. */
export interface DeletedAccount {
  readonly name: string;
  readonly plan: string;
  readonly users: number;
  readonly keys: number;
  readonly activeKeys: number;
}

export interface IssueKeyOptions {
  readonly expiresInDays?: number;
  /** The email of the user the key is for: required once the account has users. */
  readonly user?: string;
  /** What the key may call; default both. */
  readonly scopes?: readonly string[];
  /** Who issues it, for the audit log: `cli` (the default), or `system` (a first start). */
  readonly actor?: AdminActor;
}

/** Changes to an account's own limits: a number, or null for the plan's. */
export type LimitChanges = Partial<LimitOverrides>;

/** The largest value each limit takes (a monthly count, a daily count, bytes). */
const LIMIT_BOUNDS: Record<keyof AccountLimits, number> = {
  protectPerMonth: 1_000_000_000,
  verifyPerMonth: 1_000_000_000,
  scansPerUserPerDay: 1_000_000,
  vaultBytes: Number.MAX_SAFE_INTEGER,
  reportRetentionDays: 36_500,
};

/** Who made a change, for the audit log: `cli`, `system` (a first start), or an operator signed in to the console. */
export type AdminActor = 'cli' | 'system' | { readonly id: string; readonly email: string };

/**
 * What operators do to accounts, plans and keys from the command line (and
 * the server on a first start, an operator on the console). Every change is
 * a line of the audit log, its actor `cli` unless given (docs/api-access.md).
 */
export interface Admin {
  createAccount(name: string, plan: string, actor?: AdminActor): Promise<Account>;
  listAccounts(): Promise<AccountDetails[]>;
  /** One account with this month's usage. */
  showAccount(name: string): Promise<AccountDetails & { usage: UsageReport }>;
  setPlan(name: string, plan: string, actor?: AdminActor): Promise<AccountDetails>;
  setLimits(name: string, changes: LimitChanges, actor?: AdminActor): Promise<AccountDetails>;
  renameAccount(name: string, newName: string, actor?: AdminActor): Promise<AccountDetails>;
  /** Delete an account and all that is its; the audit log keeps a line saying what went. */
  deleteAccount(name: string, actor: AdminActor): Promise<DeletedAccount>;
  /** Every account's keys (operators). */
  listAllKeys(): Promise<Array<KeyView & { account: string }>>;
  /** The limits table: each plan's row. */
  planLimits(): Promise<Record<Plan, AccountLimits>>;
  setPlanLimits(plan: string, changes: Partial<AccountLimits>, actor?: AdminActor): Promise<Record<Plan, AccountLimits>>;
  issueKey(accountName: string, options?: IssueKeyOptions): Promise<IssuedKey>;
  listKeys(accountName: string): Promise<KeyView[]>;
  revokeKey(id: string, actor?: AdminActor): Promise<void>;
  usage(accountName: string): Promise<UsageReport & { account: string; plan: Plan }>;
}

/** An account's name, as a pattern the pages' fields check too (HTML's, which reads it with the v flag: the "-" escaped). */
export const ACCOUNT_NAME_PATTERN = '[A-Za-z0-9][A-Za-z0-9._\\-]{0,99}';
const ACCOUNT_NAME = new RegExp(`^${ACCOUNT_NAME_PATTERN}$`);

function checkPlan(plan: string): Plan {
  if (!(PLANS as readonly string[]).includes(plan)) throw new InvalidOptionError('plan', `one of: ${PLANS.join(', ')}`, plan);
  return plan as Plan;
}

function checkName(name: string): string {
  if (!ACCOUNT_NAME.test(name)) throw new InvalidOptionError('name', 'letters, digits, ".", "_" or "-" (at most 100, starting with a letter or digit)', name, 'An account name has letters, digits, ".", "_" or "-", starts with a letter or digit, and has at most 100 characters');
  return name;
}

function checkLimit(name: keyof AccountLimits, value: unknown, nullable: boolean): number | null {
  if (value === null && nullable) return null;
  const max = LIMIT_BOUNDS[name];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < (name === 'reportRetentionDays' ? 1 : 0) || value > max) {
    throw new InvalidOptionError(name, `a whole number from ${name === 'reportRetentionDays' ? 1 : 0} to ${max}${nullable ? ", or null for the plan's" : ''}`, value);
  }
  return value;
}

function checkScopes(scopes: readonly string[] | undefined): Scope[] {
  if (scopes === undefined) return [...SCOPES];
  const unique = [...new Set(scopes)];
  if (unique.length === 0 || unique.some((s) => !(SCOPES as readonly string[]).includes(s))) {
    throw new InvalidOptionError('scopes', `one or both of ${SCOPES.join(', ')}`, scopes.join(','));
  }
  return SCOPES.filter((s) => unique.includes(s));
}

export function createAdmin(deps: { store: Store; people: Pick<PeopleStore, 'findUserByEmail' | 'countUsers' | 'audit'>; clock: Clock }): Admin {
  const { store, clock } = deps;

  async function account(name: string): Promise<AccountDetails> {
    const found = await store.findAccount(name);
    if (!found) throw new AdminError('account_not_found', `There is no account named ${JSON.stringify(name)}`);
    return found;
  }

  /** A line of the audit log for a change made here. */
  const audit = (actor: AdminActor, accountId: string | null, action: string, detail: Record<string, unknown>, at = clock.now()) =>
    deps.people.audit({
      at,
      actor: typeof actor === 'string' ? actor : actor.id,
      accountId,
      action,
      detail: { by: typeof actor === 'string' ? actor : actor.email, ...detail },
      address: null,
    });

  const isActive = (key: KeyRecord, now: Date) => key.revokedAt === null && (key.expiresAt === null || key.expiresAt > now);

  const admin: Admin = {
    async createAccount(name, plan, actor = 'cli') {
      const created: Account = { id: randomUUID(), name: checkName(name), plan: checkPlan(plan), createdAt: clock.now() };
      if (!(await store.createAccount(created))) throw new AdminError('account_exists', `An account named ${JSON.stringify(name)} already exists`);
      await audit(actor, created.id, 'account.created', { name: created.name, plan: created.plan }, created.createdAt);
      return created;
    },

    listAccounts: () => store.listAccounts(),

    async showAccount(name) {
      const found = await account(name);
      const now = clock.now();
      return { ...found, usage: usageReport(await store.usage(found.id, periodOf(now).key), found.limits, now) };
    },

    async setPlan(name, plan, actor = 'cli') {
      const found = await account(name);
      await store.setAccountPlan(found.id, checkPlan(plan));
      await audit(actor, found.id, 'account.plan-set', { from: found.plan, to: plan });
      return account(name);
    },

    async setLimits(name, changes, actor = 'cli') {
      const found = await account(name);
      const checked: Record<string, number | null> = {};
      for (const [limit, value] of Object.entries(changes)) {
        if (!(OVERRIDABLE_LIMITS as readonly string[]).includes(limit)) throw new InvalidOptionError('limit', OVERRIDABLE_LIMITS.join(', '), limit);
        if (value !== undefined) checked[limit] = checkLimit(limit as keyof AccountLimits, value, true);
      }
      await store.setAccountLimits(found.id, checked);
      await audit(actor, found.id, 'account.limits-set', { changes: checked });
      return account(name);
    },

    async renameAccount(name, newName, actor = 'cli') {
      const found = await account(name);
      if (!(await store.renameAccount(found.id, checkName(newName)))) throw new AdminError('account_exists', `An account named ${JSON.stringify(newName)} already exists`);
      await audit(actor, found.id, 'account.renamed', { from: found.name, to: newName });
      return account(newName);
    },

    planLimits: () => store.planLimits(),

    async setPlanLimits(plan, changes, actor = 'cli') {
      const checked: Record<string, number> = {};
      for (const [limit, value] of Object.entries(changes)) {
        if (!(limit in LIMIT_BOUNDS)) throw new InvalidOptionError('limit', Object.keys(LIMIT_BOUNDS).join(', '), limit);
        if (value !== undefined) checked[limit] = checkLimit(limit as keyof AccountLimits, value, false)!;
      }
      await store.setPlanLimits(checkPlan(plan), checked);
      await audit(actor, null, 'plan.limits-set', { plan, changes: checked });
      return store.planLimits();
    },

    async issueKey(accountName, options = {}) {
      const owner = await account(accountName);
      const now = clock.now();
      const days = options.expiresInDays;
      if (days !== undefined && !(Number.isInteger(days) && days > 0 && days <= 3650)) {
        throw new InvalidOptionError('expiresInDays', 'a whole number of days from 1 to 3650', days);
      }
      const scopes = checkScopes(options.scopes);
      let user: { id: string; email: string } | null = null;
      if (options.user !== undefined) {
        const found = await deps.people.findUserByEmail(options.user.trim().toLowerCase());
        if (!found || found.accountId !== owner.id) throw new AdminError('user_not_found', `${owner.name} has no user with the email ${JSON.stringify(options.user.trim())}`);
        if (found.disabledAt !== null) throw new InvalidOptionError('user', 'a user who is not disabled', options.user);
        user = found;
      } else if ((await deps.people.countUsers(owner.id)) > 0) {
        throw new InvalidOptionError('user', `the email of the ${owner.name} user the key is for (every key belongs to a user once the account has users)`, undefined);
      }
      const key = generateApiKey(randomBytes);
      const record = {
        id: `key_${randomBase62(12, randomBytes)}`,
        accountId: owner.id,
        userId: user?.id ?? null,
        scopes,
        prefix: visiblePrefix(key),
        createdAt: now,
        expiresAt: days ? new Date(now.getTime() + days * 86_400_000) : null,
        revokedAt: null,
        lastUsedAt: null,
      };
      // A key being rolled out (replaced, working until its end) does not count.
      if (!(await store.insertKey({ ...record, digest: apiKeyDigest(key) }, MAX_ACTIVE_KEYS))) {
        throw new AdminError('too_many_keys', `The account already has ${MAX_ACTIVE_KEYS} active keys; revoke one first`);
      }
      await audit(options.actor ?? 'cli', owner.id, 'key.issued', { key: record.id, prefix: record.prefix, user: user?.email ?? null, scopes }, now);
      return { id: record.id, key, prefix: record.prefix, account: owner.name, user: user?.email ?? null, scopes, expiresAt: record.expiresAt };
    },

    async listKeys(accountName) {
      const owner = await account(accountName);
      const now = clock.now();
      return (await store.listKeys(owner.id)).map(({ accountId: _, userId: __, userEmail, ...key }) => ({
        ...key,
        user: userEmail,
        active: key.revokedAt === null && (key.expiresAt === null || key.expiresAt > now),
      }));
    },

    async deleteAccount(name, actor) {
      const found = await account(name);
      const now = clock.now();
      const keys = await store.listKeys(found.id);
      const gone: DeletedAccount = {
        name: found.name,
        plan: found.plan,
        users: await deps.people.countUsers(found.id),
        keys: keys.length,
        activeKeys: keys.filter((k) => isActive(k, now)).length,
      };
      if (!(await store.deleteAccount(found.id))) throw new AdminError('account_not_found', `There is no account named ${JSON.stringify(name)}`);
      await audit(actor, found.id, 'account.deleted', { ...gone }, now);
      return gone;
    },

    async listAllKeys() {
      const now = clock.now();
      return (await store.listAllKeys()).map(({ accountId: _, userId: __, userEmail, accountName, ...key }) => ({
        ...key,
        account: accountName,
        user: userEmail,
        active: isActive({ ...key, accountId: '', userId: null } as KeyRecord, now),
      }));
    },

    async revokeKey(id, actor = 'cli') {
      const now = clock.now();
      const key = await store.revokeKey(id, now);
      if (!key) throw new AdminError('key_not_found', `There is no active key with id ${JSON.stringify(id)}`);
      await audit(actor, key.accountId, 'key.revoked', { key: id, prefix: key.prefix }, now);
    },

    async usage(accountName) {
      const owner = await account(accountName);
      const now = clock.now();
      const report = usageReport(await store.usage(owner.id, periodOf(now).key), owner.limits, now);
      return { account: owner.name, plan: owner.plan, ...report };
    },

  };
  return admin;
}
