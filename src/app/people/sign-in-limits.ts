/**
 * A brake on guessing passwords, with no lock anyone could put on someone
 * else's account:
 *
 * - per client address: at most 20 failed sign-ins in 10 minutes (a window
 *   opened by the first failure); past it, sign-ins from that address wait
 *   for the window to end;
 * - per (email, address): after 5 failures, each further try must wait
 *   twice as long as the one before (2 s, 4 s, ... up to 15 minutes) after
 *   the last failure. Another address is not held up: a known email cannot
 *   be locked out by strangers, only slowed down from where they are.
 *
 * A sign-in that succeeds clears its (email, address) count. State lives in
 * this process's memory (a few thousand entries at most, the oldest dropped
 * first); several servers each keep their own.
 */
import ipaddr from 'ipaddr.js';
import { TooManySignInsError } from '../../errors.js';
import type { Clock } from '../ports.js';

export const ADDRESS_FAILURES = 20;
export const ADDRESS_WINDOW_SECONDS = 600;
export const FREE_TRIES = 5;
export const MAX_BACKOFF_SECONDS = 900;
const MAX_ENTRIES = 10_000;

interface Entry {
  failures: number;
  /** ms: when the address window opened, or the pair's last failure. */
  at: number;
}

export interface SignInLimits {
  /** Throws TooManySignInsError (429 with Retry-After) when this try must wait. */
  admit(ip: string, email: string): void;
  fail(ip: string, email: string): void;
  succeed(ip: string, email: string): void;
}

/** IPv6 by /64, IPv4-mapped as IPv4: one host's addresses count as one. */
function addressKey(ip: string): string {
  try {
    const parsed = ipaddr.process(ip);
    if (parsed.kind() === 'ipv6') return `${(parsed as ipaddr.IPv6).parts.slice(0, 4).join(':')}::/64`;
    return parsed.toString();
  } catch {
    return ip;
  }
}

function bounded(map: Map<string, Entry>, key: string, entry: Entry): void {
  map.delete(key);
  if (map.size >= MAX_ENTRIES) map.delete(map.keys().next().value!);
  map.set(key, entry);
}

export function createSignInLimits(clock: Clock): SignInLimits {
  const addresses = new Map<string, Entry>();
  const pairs = new Map<string, Entry>();
  const pairKey = (ip: string, email: string) => `${addressKey(ip)}|${email.trim().toLowerCase()}`;

  return {
    admit(ip, email) {
      const now = clock.now().getTime();
      const address = addresses.get(addressKey(ip));
      if (address && now - address.at < ADDRESS_WINDOW_SECONDS * 1000 && address.failures >= ADDRESS_FAILURES) {
        throw new TooManySignInsError(Math.ceil((address.at + ADDRESS_WINDOW_SECONDS * 1000 - now) / 1000));
      }
      const pair = pairs.get(pairKey(ip, email));
      if (pair && pair.failures >= FREE_TRIES) {
        const wait = Math.min(MAX_BACKOFF_SECONDS, 2 ** (pair.failures - FREE_TRIES + 1)) * 1000;
        if (now - pair.at < wait) throw new TooManySignInsError(Math.ceil((pair.at + wait - now) / 1000));
      }
    },

    fail(ip, email) {
      const now = clock.now().getTime();
      const key = addressKey(ip);
      const address = addresses.get(key);
      if (!address || now - address.at >= ADDRESS_WINDOW_SECONDS * 1000) bounded(addresses, key, { failures: 1, at: now });
      else address.failures++;
      const pk = pairKey(ip, email);
      bounded(pairs, pk, { failures: (pairs.get(pk)?.failures ?? 0) + 1, at: now });
    },

    succeed(ip, email) {
      pairs.delete(pairKey(ip, email));
    },
  };
}
