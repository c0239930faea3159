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

export interface KeyRecord {
  readonly id: string;
  readonly accountId: string;
  /** The first characters of the key, safe to show. */
  readonly prefix: string;
  readonly createdAt: Date;
  readonly expiresAt: Date | null;
  readonly revokedAt: Date | null;
  readonly lastUsedAt: Date | null;
}

/** Who is calling: the account behind a valid key. */
export interface Principal {
  readonly accountId: string;
  readonly accountName: string;
  readonly plan: Plan;
  readonly keyId: string;
}

export interface ReserveRequest {
  readonly digest: Uint8Array;
  readonly now: Date;
  readonly period: string;
  readonly operation: Operation;
  readonly limit: number;
  readonly reservationId: string;
  readonly plans: readonly Plan[];
}

/**
 * The outcome of authenticating a key and reserving one unit, done in one
 * atomic statement: no key, a plan without API access, an exhausted
 * allowance, or a reservation with the count it brought usage to.
 */
export type ReserveOutcome =
  | { readonly kind: 'invalid' }
  | ({ readonly kind: 'forbidden' } & KeyMatch)
  | ({ readonly kind: 'exhausted' } & KeyMatch)
  | ({ readonly kind: 'reserved'; readonly used: number } & KeyMatch);

/** A key found by its digest: who it belongs to. */
export interface KeyMatch {
  readonly principal: Principal;
}

export interface Store {
  // The request path.
  authenticateAndReserve(request: ReserveRequest): Promise<ReserveOutcome>;
  authenticate(digest: Uint8Array, now: Date): Promise<KeyMatch | undefined>;
  /**
   * The call returned 200: the reserved unit stays counted, and the key was
   * used at `now`. May be written later, in a batch (see `flush`).
   */
  commit(reservationId: string, keyId: string, now: Date): Promise<void>;
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

  // Administration.
  /** False when an account of that name exists (the name is unique, so concurrent creators cannot both succeed). */
  createAccount(account: Account): Promise<boolean>;
  findAccount(name: string): Promise<Account | undefined>;
  countAccounts(): Promise<number>;
  insertKey(key: KeyRecord & { readonly digest: Uint8Array }): Promise<void>;
  listKeys(accountId: string): Promise<KeyRecord[]>;
  /** Revoke at `now`; returns false when there is no such key or it was already revoked. */
  revokeKey(id: string, now: Date): Promise<boolean>;

  /** Throws ServiceUnavailableError when the database cannot answer. */
  ping(): Promise<void>;
  /** Write what is queued (before the database is closed). */
  flush(): Promise<void>;
}

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
