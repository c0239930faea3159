/**
 * The request path's bookkeeping: who is calling, and one unit of their
 * monthly allowance reserved before the work and settled after it. A call
 * that does not return 200 gives its unit back, so it never counts.
 */
import { randomUUID } from 'node:crypto';
import { apiKeyDigest, isWellFormedApiKey } from '../core/keys/api-key.js';
import { periodOf } from '../core/quota/period.js';
import {
  InvalidApiKeyError,
  MissingApiKeyError,
  NotSignedInError,
  PlanNotAllowedError,
  QuotaExceededError,
  ScopeNotAllowedError,
  ServiceUnavailableError,
  type Operation,
} from '../errors.js';
import type { Admission, Slot } from './admission.js';
import type { FailedWork } from './failed-work.js';
import { API_PLANS, type Clock, type Plan, type Principal, type Store } from './ports.js';
import { usageReport, type UsageReport } from './usage.js';

/**
 * One call's place in flight and, unless it counts nothing, its reserved
 * unit. `settle` is safe to call more than once; only the first counts.
 */
export interface Ticket {
  readonly operation: Operation;
  /** Who the unit is reserved for. */
  readonly principal: Principal;
  /** Usage of this operation this month: this call included while it holds its unit, and once it has counted. */
  readonly used: number;
  /** The call counts nothing (a repeat answered again: it had no unit, or gave it back); its answer says nothing of the limit. */
  readonly repeat: boolean;
  readonly limit: number;
  /** The call's place in flight (app/admission.ts): mark it working once the body is read; `preempted` says when it was taken away. */
  readonly slot: Pick<Slot, 'working' | 'preempted'>;
  /** The call failed after its body was processed, or was given up by its client: charge its work to the account (app/failed-work.ts). */
  chargeFailedWork(seconds: number): void;
  /** The call turned out to count nothing (a repeat: app/repeats.ts): its unit given back now, its place in flight kept until it settles. */
  giveBackUnit(): Promise<void>;
  /** The call ended: its place left, its unit (if it still holds one) counted when it succeeded, given back otherwise. */
  settle(succeeded: boolean): Promise<void>;
}

/**
 * Whether a call of this account would count nothing (the repeat of a call
 * that returned 200: app/repeats.ts): asked only at the month's limit, where
 * such a call is admitted all the same, with its place in flight and no unit.
 */
export type CountsNothing = (accountId: string) => Promise<boolean>;

/**
 * Who a call says it is: the SHA-256 of the API key it presents in its
 * `Authorization` header. (A dashboard call is a signed-in user's:
 * openForUser, which reaches the same accounting.)
 */
export interface Credential {
  readonly keyDigest: Buffer;
}

export interface ApiAccess {
  /**
   * Admit the call, authenticate and reserve one unit. Throws InvalidApiKey,
   * TooManyFailedCalls (the account's failed-work budget), TooManyRequests
   * or ServerBusy (admission), PlanNotAllowed or QuotaExceeded. The
   * admission slot is held until the ticket is settled.
   */
  open(credential: Credential, operation: Operation, countsNothing?: CountsNothing): Promise<Ticket>;
  /**
   * A dashboard call of a signed-in user: admitted, and one unit of the
   * user's account reserved, exactly as a key's call (PlanNotAllowed on the
   * Free plan, QuotaExceeded, TooManyRequests, ServerBusy).
   */
  openForUser(who: { accountId: string; accountName: string; plan: Plan; userId: string }, operation: Operation, countsNothing?: CountsNothing): Promise<Ticket>;
  /** Authenticate only (free endpoints such as usage). */
  authenticate(credential: Credential): Promise<Principal>;
  /** This month's usage of the principal's account; PlanNotAllowed for a plan without the API. */
  usage(principal: Principal): Promise<UsageReport>;
  /** This month's usage of an account (the dashboard's meters). */
  accountUsage(accountId: string): Promise<UsageReport>;
  /** Give back units of calls whose server is gone (no heartbeat for `ttlSeconds`: a crash); renews this server's own lease first; returns how many. */
  sweep(ttlSeconds: number): Promise<number>;
  /** Renew this server's lease on its reservations (PostgreSQL). */
  heartbeat(): Promise<void>;
}

/** The credential of an API key as typed (malformed keys and bad checksums never reach the database). */
export function keyCredential(key: string): Credential {
  if (!isWellFormedApiKey(key)) throw new InvalidApiKeyError();
  return { keyDigest: apiKeyDigest(key) };
}

/** Whether a request presents a key at all: an `Authorization` header that is not blank (its value may still be invalid). */
export function presentsKey(authorization: string | undefined): authorization is string {
  return authorization !== undefined && authorization.trim() !== '';
}

/** The credential in an `Authorization: Bearer <key>` header (scheme case-insensitive). */
export function bearerCredential(authorization: string | undefined): Credential {
  if (!presentsKey(authorization)) throw new MissingApiKeyError();
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
  if (!match) throw new InvalidApiKeyError();
  return keyCredential(match[1]!);
}

export interface ApiAccessDeps {
  readonly store: Store;
  readonly clock: Clock;
  readonly admission: Admission;
  /** The per-account budget of failed and abandoned work; without it, nothing is counted or refused. */
  readonly failedWork?: FailedWork;
  readonly onSettleError?: (error: unknown) => void;
}

/** Keys whose account admission remembers (a key never changes account); past it the memory starts again. */
const MAX_KNOWN_KEYS = 10_000;

export function createApiAccess(deps: ApiAccessDeps): ApiAccess {
  const { store, clock, admission } = deps;
  /** The account of each key seen, for admission, which counts calls per account before the reservation checks the key again. */
  const accountOfKey = new Map<string, string>();

  /** The account a key belongs to: remembered, or looked up (InvalidApiKeyError when there is no such key). */
  const accountOf = async (credential: Credential, key: string): Promise<string> => {
    const known = accountOfKey.get(key);
    if (known !== undefined) return known;
    const match = await store.authenticate(credential.keyDigest, clock.now());
    if (!match) throw new InvalidApiKeyError();
    if (accountOfKey.size >= MAX_KNOWN_KEYS) accountOfKey.clear();
    accountOfKey.set(key, match.principal.accountId);
    return match.principal.accountId;
  };

  /** A call's ticket: `usedBefore` its account's usage without it, `reservationId` its unit (none for a call that counts nothing). */
  function ticket(operation: Operation, principal: Principal, usedBefore: number, limit: number, reservationId: string | undefined, slot: Slot): Ticket {
    let unit = reservationId;
    let repeat = reservationId === undefined;
    let counted = false;
    let settled = false;
    const giveBack = async (id: string) => {
      try {
        await store.refund(id);
      } catch (error) {
        // An unsettled reservation is given back by the sweep once this server stops renewing its lease.
        deps.onSettleError?.(error);
      }
    };
    return {
      operation,
      principal,
      get used() {
        return usedBefore + (unit !== undefined || counted ? 1 : 0);
      },
      get repeat() {
        return repeat;
      },
      limit,
      slot,
      chargeFailedWork: (seconds) => deps.failedWork?.charge(principal.accountId, seconds),
      async giveBackUnit() {
        repeat = true;
        const id = unit;
        unit = undefined;
        if (id !== undefined) await giveBack(id);
      },
      async settle(succeeded) {
        if (settled) return;
        settled = true;
        slot.leave();
        const id = unit;
        unit = undefined;
        if (id === undefined) return;
        if (!succeeded) return giveBack(id);
        counted = true;
        try {
          await store.commit(id, principal.keyId, clock.now());
        } catch (error) {
          // The response is already decided; an unsettled reservation is
          // given back by the sweep once this server stops renewing its lease.
          deps.onSettleError?.(error);
        }
      },
    };
  }

  async function accountUsage(accountId: string): Promise<UsageReport> {
    const now = clock.now();
    const [used, limits] = await Promise.all([store.usage(accountId, periodOf(now).key), store.accountLimits(accountId)]);
    return usageReport(used, limits, now);
  }

  /** A dashboard call's principal: its user, every scope of the plan. */
  const principalOf = (who: { accountId: string; accountName: string; plan: Plan; userId: string }): Principal => ({
    accountId: who.accountId,
    accountName: who.accountName,
    plan: who.plan,
    keyId: null,
    userId: who.userId,
    scopes: ['protect', 'verify'],
  });

  /** A reservation's failure: the slot given back, and (the database may have run the reservation and lost only its answer) a refund, which gives nothing back where there is no reservation. */
  function failed(slot: Slot, reservationId: string, error: unknown): never {
    slot.leave();
    if (error instanceof ServiceUnavailableError) store.refund(reservationId).catch(() => {});
    throw error;
  }

  return {
    async open(credential, operation, countsNothing) {
      // Keys are found by the SHA-256 of the presented key: the lookup's timing
      // can only tell about digests, which reveal nothing usable about a key.
      const digest = credential.keyDigest;
      const key = digest.toString('base64');
      const account = await accountOf(credential, key);
      // An account past its budget of failed work is refused before it takes a place.
      deps.failedWork?.admit(account);
      const slot = admission.enter({ account, key });
      const now = clock.now();
      const period = periodOf(now);
      const reservationId = randomUUID();
      let outcome: Awaited<ReturnType<Store['authenticateAndReserve']>>;
      try {
        outcome = await store.authenticateAndReserve({ digest, now, period: period.key, operation, reservationId, plans: API_PLANS });
        if (outcome.kind === 'invalid') {
          accountOfKey.delete(key);
          throw new InvalidApiKeyError();
        }
        if (outcome.kind === 'forbidden') throw new PlanNotAllowedError(outcome.principal.plan);
        if (outcome.kind === 'out-of-scope') throw new ScopeNotAllowedError(operation, outcome.principal.scopes);
        if (outcome.kind === 'exhausted') {
          if (await countsNothing?.(outcome.principal.accountId)) return ticket(operation, outcome.principal, outcome.limit, outcome.limit, undefined, slot);
          throw new QuotaExceededError(operation, outcome.limit, period.end, outcome.held);
        }
      } catch (error) {
        failed(slot, reservationId, error);
      }
      const { principal, used, limit } = outcome;
      return ticket(operation, principal, used - 1, limit, reservationId, slot);
    },

    async openForUser(who, operation, countsNothing) {
      deps.failedWork?.admit(who.accountId);
      const slot = admission.enter({ account: who.accountId, key: `user:${who.userId}` });
      const now = clock.now();
      const period = periodOf(now);
      const reservationId = randomUUID();
      let outcome: Awaited<ReturnType<Store['reserveForAccount']>>;
      try {
        outcome = await store.reserveForAccount({ accountId: who.accountId, now, period: period.key, operation, reservationId, plans: API_PLANS });
        if (outcome.kind === 'gone') throw new NotSignedInError();
        if (outcome.kind === 'forbidden') throw new PlanNotAllowedError(outcome.plan);
        if (outcome.kind === 'exhausted') {
          if (await countsNothing?.(who.accountId)) return ticket(operation, principalOf(who), outcome.limit, outcome.limit, undefined, slot);
          throw new QuotaExceededError(operation, outcome.limit, period.end, outcome.held);
        }
      } catch (error) {
        failed(slot, reservationId, error);
      }
      const { used, limit } = outcome;
      return ticket(operation, principalOf(who), used - 1, limit, reservationId, slot);
    },

    async authenticate(credential) {
      const match = await store.authenticate(credential.keyDigest, clock.now());
      if (!match) throw new InvalidApiKeyError();
      return match.principal;
    },

    async usage(principal) {
      // Free of charge, not free of plan: the usage is part of the API.
      if (!API_PLANS.includes(principal.plan)) throw new PlanNotAllowedError(principal.plan);
      return accountUsage(principal.accountId);
    },
    accountUsage,

    sweep(ttlSeconds) {
      const now = clock.now();
      return store.sweepReservations(new Date(now.getTime() - ttlSeconds * 1000), now);
    },

    async heartbeat() {
      await store.heartbeat?.(clock.now());
    },
  };
}
