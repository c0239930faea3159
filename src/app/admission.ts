/**
 * How many image calls may be in progress at once: in all, per API key, and
 * per account when accounts compete for them.
 *
 * An upload is held in memory until it is processed, so the number of calls
 * in flight bounds the memory they can take (25 MB each at most). Within that
 * bound:
 *
 * - one key holds at most `perKey` calls (429 too_many_requests past it);
 * - while no one else needs a slot, one account may use them all: nothing
 *   is kept idle;
 * - but while another account waits or was refused for lack of a slot within
 *   the last second, one account holds at most `perAccount` (⌊total / 4⌋):
 *   its new calls past that get 429 too_many_requests, and a call of another
 *   account that finds every slot taken takes one of the slots held beyond
 *   that share by a call still uploading (the newest such upload is
 *   answered 503 server_busy, Retry-After 1, and its connection closed;
 *   nothing of it was counted). A call whose body has been read is never
 *   taken away: its work is short and already paid for.
 *
 * An account can hold 5 keys, so the per-key limit alone let one account's
 * slow uploads take every slot and give every other account 503 for as long
 * as they lasted (with the minimum upload rate, at most about 10 s each).
 * Background work that needs a slot (repository scans, when they come) is
 * to take it here, by the same rule, under its account.
 *
 * Refusals are immediate and cost no quota: admission comes before the
 * reservation. State is per process.
 */
import { ServerBusyError, TooManyRequestsError } from '../errors.js';

export interface AdmissionLimits {
  /** Calls in flight, all accounts together. */
  readonly total: number;
  /** Calls in flight with one key. */
  readonly perKey: number;
  /** Calls one account may hold while another needs a slot; default ⌊total / 4⌋ (at least 1). */
  readonly perAccount?: number;
  /** Milliseconds, for the one-second memory of refusals (tests pass their own). */
  readonly now?: () => number;
}

/** Who a call is for: its account, and the key it came with (any stable strings). */
export interface Caller {
  readonly account: string;
  readonly key: string;
}

/** One call's place in flight. */
export interface Slot {
  /** Give the place back; only the first call counts. */
  leave(): void;
  /** The call's body has been read: from now on its place is not taken away to serve another account. */
  working(): void;
  /** Aborted, with a ServerBusyError, when the place is taken away from the call while it still uploads. */
  readonly preempted: AbortSignal;
}

export interface Admission {
  /** Take a place for `caller` or throw (TooManyRequestsError, ServerBusyError). */
  enter(caller: Caller): Slot;
  /** Calls in flight now (for health reports and tests). */
  readonly inFlight: number;
}

/** How long a refusal for lack of a slot keeps the other accounts to their share. */
export const CONTENTION_MS = 1000;

interface Held {
  readonly caller: Caller;
  readonly controller: AbortController;
  uploading: boolean;
  released: boolean;
}

export function createAdmission(limits: AdmissionLimits): Admission {
  const share = limits.perAccount ?? Math.max(1, Math.floor(limits.total / 4));
  const now = limits.now ?? (() => performance.now());
  const byKey = new Map<string, number>();
  /** The places each account holds, oldest first. */
  const byAccount = new Map<string, Held[]>();
  /** When each account was last refused (or had to take a place from another), in ms. */
  const needed = new Map<string, number>();
  let total = 0;

  const count = (map: Map<string, number>, key: string, by: number) => {
    const next = (map.get(key) ?? 0) + by;
    if (next === 0) map.delete(key);
    else map.set(key, next);
  };

  const release = (held: Held) => {
    if (held.released) return;
    held.released = true;
    total--;
    count(byKey, held.caller.key, -1);
    const list = byAccount.get(held.caller.account)!;
    list.splice(list.indexOf(held), 1);
    if (list.length === 0) byAccount.delete(held.caller.account);
  };

  /** Another account than `account` was refused, or had to take a place, within the last second. */
  const contended = (account: string, at: number) => {
    for (const [other, when] of needed) {
      if (at - when >= CONTENTION_MS) needed.delete(other);
      else if (other !== account) return true;
    }
    return false;
  };

  /** The newest place still uploading of the account that holds the most beyond its share, if any. */
  const victim = (account: string): Held | undefined => {
    let chosen: Held[] | undefined;
    for (const [other, list] of byAccount) {
      if (other === account || list.length <= share || !list.some((h) => h.uploading)) continue;
      if (!chosen || list.length > chosen.length) chosen = list;
    }
    return chosen?.findLast((h) => h.uploading);
  };

  return {
    enter(caller) {
      const at = now();
      if ((byKey.get(caller.key) ?? 0) >= limits.perKey) throw new TooManyRequestsError(limits.perKey);
      const mine = byAccount.get(caller.account)?.length ?? 0;
      if (mine >= share && contended(caller.account, at)) throw new TooManyRequestsError(share, 'account');
      if (total >= limits.total) {
        const taken = mine < share ? victim(caller.account) : undefined;
        needed.set(caller.account, at);
        if (!taken) throw new ServerBusyError('calls in progress');
        release(taken);
        taken.controller.abort(new ServerBusyError('calls in progress: another account needed a place while this one held more than its share'));
      }
      const held: Held = { caller, controller: new AbortController(), uploading: true, released: false };
      total++;
      count(byKey, caller.key, 1);
      const list = byAccount.get(caller.account);
      if (list) list.push(held);
      else byAccount.set(caller.account, [held]);
      return {
        leave: () => release(held),
        working: () => {
          held.uploading = false;
        },
        preempted: held.controller.signal,
      };
    },
    get inFlight() {
      return total;
    },
  };
}
