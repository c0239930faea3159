/**
 * What the use cases need from the outside world. Adapters implement these
 * (adapters/db for the Store); tests and the CLI wire them together.
 */
import type { Operation } from '../errors.js';

export const PLANS = ['free', 'pro', 'lifetime'] as const;
export type Plan = (typeof PLANS)[number];
/** Plans whose keys may call the API. */
export const API_PLANS: readonly Plan[] = ['pro', 'lifetime'];

export interface Account {
  readonly id: string;
  readonly name: string;
  readonly plan: Plan;
  readonly createdAt: Date;
}

/**
 * What the migration that creates the limits table writes into it: the
 * deployment's settings at that moment (OPTMARK_PROTECT_LIMIT and friends).
 * Afterwards the table is the truth (`optmark plans set`, `optmark accounts
 * set-limits` change it) and the settings are only compared with it.
 */
export interface LimitSeeds {
  readonly protectPerMonth: number;
  readonly verifyPerMonth: number;
  readonly vaultBytes: number;
  readonly scanCeiling: number;
}

export const DEFAULT_LIMIT_SEEDS: LimitSeeds = { protectPerMonth: 10_000, verifyPerMonth: 50_000, vaultBytes: 10_737_418_240, scanCeiling: 250 };

/** What an account may use: its plan's row of the limits table, with the account's own overrides applied. */
export interface AccountLimits {
  readonly protectPerMonth: number;
  readonly verifyPerMonth: number;
  readonly scansPerUserPerDay: number;
  readonly vaultBytes: number;
  readonly reportRetentionDays: number;
}

/** An account's own values, where it has them (null: the plan's). */
export interface LimitOverrides {
  readonly protectPerMonth: number | null;
  readonly verifyPerMonth: number | null;
  readonly scansPerUserPerDay: number | null;
  readonly vaultBytes: number | null;
}

export const OVERRIDABLE_LIMITS = ['protectPerMonth', 'verifyPerMonth', 'scansPerUserPerDay', 'vaultBytes'] as const;

export interface ServiceSettings {
  /** Repository scans per UTC day, all accounts together. */
  readonly scanCeilingPerDay: number;
  readonly scansPaused: boolean;
}

/** An account with its plan's limits, its overrides, and the two merged. */
export interface AccountDetails extends Account {
  readonly overrides: LimitOverrides;
  readonly limits: AccountLimits;
}

/** The monthly allowance of one operation in a set of limits. */
export const monthlyLimit = (limits: AccountLimits, operation: Operation): number =>
  operation === 'protect' ? limits.protectPerMonth : limits.verifyPerMonth;

export const SCOPES = ['protect', 'verify'] as const;
/** What a key may call: `protect`, `verify` (creating or cancelling a repository scan needs `verify`); reading usage needs none. */
export type Scope = (typeof SCOPES)[number];

export interface KeyRecord {
  readonly id: string;
  readonly accountId: string;
  /** The user the key belongs to; null only for a key made before its account had users (the first owner receives it). */
  readonly userId: string | null;
  readonly scopes: readonly Scope[];
  /** The first characters of the key, safe to show. */
  readonly prefix: string;
  readonly createdAt: Date;
  readonly expiresAt: Date | null;
  readonly revokedAt: Date | null;
  readonly lastUsedAt: Date | null;
  /** The key that replaced this one in a roll (it then works until `expiresAt`, and does not count toward the active keys' limit). */
  readonly replacedBy?: string | null;
}

/** Who is calling: the account behind a valid key, the key's user and what the key may do. */
export interface Principal {
  readonly accountId: string;
  readonly accountName: string;
  readonly plan: Plan;
  /** The API key used; null for a dashboard session. */
  readonly keyId: string | null;
  readonly userId: string | null;
  readonly scopes: readonly Scope[];
}

export interface ReserveRequest {
  readonly digest: Uint8Array;
  readonly now: Date;
  readonly period: string;
  readonly operation: Operation;
  readonly reservationId: string;
  readonly plans: readonly Plan[];
}

/**
 * The outcome of authenticating a key and reserving one unit, done in one
 * atomic statement: no key, a plan without API access, an exhausted
 * allowance, or a reservation with the count it brought usage to. `limit` is
 * the account's monthly allowance of the operation, read in the same statement.
 * `held`, at the allowance: how many of its units calls still running hold
 * (each comes back if its call fails).
 */
export type ReserveOutcome =
  | { readonly kind: 'invalid' }
  | ({ readonly kind: 'forbidden' } & KeyMatch)
  | ({ readonly kind: 'out-of-scope' } & KeyMatch)
  | ({ readonly kind: 'exhausted'; readonly limit: number; readonly held?: number } & KeyMatch)
  | ({ readonly kind: 'reserved'; readonly used: number; readonly limit: number } & KeyMatch);

/** A dashboard call: the account of the signed-in user, as the session found it. */
export interface AccountReserveRequest {
  readonly accountId: string;
  readonly now: Date;
  readonly period: string;
  readonly operation: Operation;
  readonly reservationId: string;
  readonly plans: readonly Plan[];
}

/** As ReserveOutcome, for an account rather than a key (`gone`: the account no longer exists). */
export type AccountReserveOutcome =
  | { readonly kind: 'gone' }
  | { readonly kind: 'forbidden'; readonly plan: Plan }
  | { readonly kind: 'exhausted'; readonly limit: number; readonly held?: number }
  | { readonly kind: 'reserved'; readonly used: number; readonly limit: number };

/** A key just revoked: its account and the prefix that names it. */
export interface RevokedKey {
  readonly accountId: string;
  readonly prefix: string;
}

/** A key found by its digest: who it belongs to. */
export interface KeyMatch {
  readonly principal: Principal;
}

export interface Store {
  // The request path.
  authenticateAndReserve(request: ReserveRequest): Promise<ReserveOutcome>;
  /** Reserve one unit for an account (a dashboard call), with the same check of plan and limit in one statement. */
  reserveForAccount(request: AccountReserveRequest): Promise<AccountReserveOutcome>;
  authenticate(digest: Uint8Array, now: Date): Promise<KeyMatch | undefined>;
  /**
   * The call returned 200: the reserved unit stays counted, and the key (if
   * any) was used at `now`. May be written later, in a batch (see `flush`).
   */
  commit(reservationId: string, keyId: string | null, now: Date): Promise<void>;
  /** The call failed: give the unit back. A second refund, or a refund after commit, does nothing. */
  refund(reservationId: string): Promise<void>;
  usage(accountId: string, period: string): Promise<Record<Operation, number>>;
  /**
   * Give back every unit reserved by a server that is gone (a crash): one
   * whose last heartbeat is before `cutoff`, or, for units that name no
   * server, reserved before it. This server's heartbeat is renewed first at
   * `now`, so its own calls in flight are never given back. Returns how many.
   */
  sweepReservations(cutoff: Date, now: Date): Promise<number>;
  /** Renew this server's lease on its reservations (stores that keep them in memory have none). */
  heartbeat?(now: Date): Promise<void>;

  /** The account's limits (its plan's, with its overrides). */
  accountLimits(accountId: string): Promise<AccountLimits>;

  // Administration.
  /** False when an account of that name exists (the name is unique, so concurrent creators cannot both succeed). */
  createAccount(account: Account): Promise<boolean>;
  findAccount(name: string): Promise<AccountDetails | undefined>;
  findAccountById(id: string): Promise<AccountDetails | undefined>;
  listAccounts(): Promise<AccountDetails[]>;
  countAccounts(): Promise<number>;
  /** False when no account has that id. */
  setAccountPlan(accountId: string, plan: Plan): Promise<boolean>;
  /** Set the given overrides (null: back to the plan's); the others stay. */
  setAccountLimits(accountId: string, overrides: Partial<LimitOverrides>): Promise<void>;
  /** False when another account has the new name. */
  renameAccount(accountId: string, name: string): Promise<boolean>;
  /** Delete the account and everything that is its (users, keys, sessions, usage, batches): the foreign keys cascade. False when it was gone already. */
  deleteAccount(accountId: string): Promise<boolean>;
  /** Every account's keys, with the account's name. */
  listAllKeys(): Promise<Array<KeyRecord & { userEmail: string | null; accountName: string }>>;
  planLimits(): Promise<Record<Plan, AccountLimits>>;
  setPlanLimits(plan: Plan, limits: Partial<AccountLimits>): Promise<void>;
  /** The service-wide settings row (the repository-scan ceiling). */
  serviceSettings(): Promise<ServiceSettings>;
  /** Add a key unless the account has `maxActive` active keys already (checked with the account locked): false then. */
  insertKey(key: KeyRecord & { readonly digest: Uint8Array }, maxActive: number): Promise<boolean>;
  /** The account's keys, each with its user's email (null for a key without a user). */
  listKeys(accountId: string): Promise<Array<KeyRecord & { readonly userEmail: string | null }>>;
  /** Revoke at `now`; returns false when there is no such key or it was already revoked. */
  /** Revoke an active key: what it was, or undefined when there is no such active key. */
  revokeKey(id: string, now: Date): Promise<RevokedKey | undefined>;

  /** Throws ServiceUnavailableError when the database cannot answer. */
  ping(): Promise<void>;
  /** Write what is queued (before the database is closed). */
  flush(): Promise<void>;
}

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** The durable job queue (adapters/jobs/queue.ts): jobs survive restarts and are shared by the servers of one database. */
export interface JobPort {
  send(
    name: string,
    data: Record<string, unknown>,
    options?: {
      readonly expireInSeconds?: number;
      readonly retryLimit?: number;
      /** Seconds before a failed job is tried again; with `retryBackoff`, the first of waits that double. */
      readonly retryDelay?: number;
      readonly retryBackoff?: boolean;
      /** How long a finished job stays in the table. */
      readonly deleteAfterSeconds?: number;
    },
  ): Promise<void>;
  work(name: string, concurrency: number, handler: (data: Record<string, unknown>) => Promise<void>): Promise<void>;
}
