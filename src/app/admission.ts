/**
 * How many image calls may be in progress at once: in all, and per API key.
 * An upload is held in memory until it is processed, so the number of calls
 * in flight bounds the memory they can take (25 MB each at most); a key that
 * opens many connections waits its turn instead of taking every slot.
 * Refusals are immediate (429 for the key, 503 for the server) and cost no
 * quota: admission comes before the reservation.
 */
import { ServerBusyError, TooManyRequestsError } from '../errors.js';

export interface AdmissionLimits {
  /** Calls in flight, all keys together. */
  readonly total: number;
  /** Calls in flight with one key. */
  readonly perKey: number;
}

export interface Admission {
  /** Take a slot for `key` (any stable string naming the caller) or throw; call the returned function once to give it back. */
  enter(key: string): () => void;
  /** Calls in flight now (for health reports and tests). */
  readonly inFlight: number;
}

export function createAdmission(limits: AdmissionLimits): Admission {
  const byKey = new Map<string, number>();
  let total = 0;
  return {
    enter(key) {
      const mine = byKey.get(key) ?? 0;
      if (mine >= limits.perKey) throw new TooManyRequestsError(limits.perKey);
      if (total >= limits.total) throw new ServerBusyError('calls in progress');
      byKey.set(key, mine + 1);
      total++;
      let left = false;
      return () => {
        if (left) return;
        left = true;
        total--;
        const now = byKey.get(key)! - 1;
        if (now === 0) byKey.delete(key);
        else byKey.set(key, now);
      };
    },
    get inFlight() {
      return total;
    },
  };
}
