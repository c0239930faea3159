/**
 * Failed authentications per client address: a brake on guessing API keys.
 *
 * Every request whose API key is refused as invalid (malformed, bad
 * checksum, unknown, revoked, expired: `invalid_api_key`), on the API or at
 * the dashboard's sign-in, counts one failure against the address it came
 * from. Once an address has `limit` failures in a window of one minute
 * (a fixed window that opens at the address's first failure), every request
 * from it that presents a key is refused with `too_many_requests` until the
 * window ends, before the key is looked up: valid keys too, or the answer
 * (200 or 429) would tell a guess that hit from one that missed. A refused
 * request counts no further failure, so the window ends on time.
 *
 * Keys still being looked up count too: an address has at most `limit`
 * failures and lookups in flight together, and a check past that waits for
 * one of them to end (a lookup takes milliseconds), then is decided on what
 * is known by then. So keys sent all at once are not all looked up before
 * the first failure is counted, and a client with many calls at once is
 * never refused for keys that turn out valid.
 *
 * State is per process, in memory: at most `maxAddresses` addresses (the
 * one whose window opened first is dropped to make room), O(1) per request.
 * IPv6 addresses count by their /64 prefix, which one host usually holds
 * whole; IPv4-mapped IPv6 addresses count as the IPv4 address.
 */
import ipaddr from 'ipaddr.js';
import { InvalidApiKeyError, TooManyAuthFailuresError } from '../errors.js';
import type { Clock } from './ports.js';

/** Addresses tracked at once by default. */
export const MAX_TRACKED_ADDRESSES = 10_000;
/** The window's length. */
export const AUTH_FAILURE_WINDOW_SECONDS = 60;

export interface AuthFailures {
  /** Throws TooManyAuthFailuresError while `ip` has used up its failures in its current window. */
  admit(ip: string): void;
  /** Count one refused key from `ip`. */
  fail(ip: string): void;
  /**
   * Run a key check of a request from `ip` that presents a key: once the
   * address's failures and checks in flight are under the limit (it waits
   * for checks in flight to end until they are), counted as in flight while
   * it runs; an InvalidApiKeyError from it counts as a failure (and is
   * rethrown). Throws TooManyAuthFailuresError, without checking, once the
   * address's failures reach the limit. A request with no key is checked at
   * once (it says a key is missing, and counts nothing).
   */
  counting<T>(ip: string, presentsKey: boolean, check: () => Promise<T>): Promise<T>;
  /** Addresses tracked now (for tests). */
  readonly size: number;
}

export interface AuthFailuresOptions {
  /** Failures per address per window; 0 turns the limiter off. */
  readonly limit: number;
  readonly clock: Clock;
  readonly windowSeconds?: number;
  readonly maxAddresses?: number;
}

interface Window {
  readonly key: string;
  /** When the window opened (its first failure), in ms since the epoch. */
  readonly start: number;
  failures: number;
}

export function createAuthFailures(options: AuthFailuresOptions): AuthFailures {
  const { limit, clock } = options;
  const windowSeconds = options.windowSeconds ?? AUTH_FAILURE_WINDOW_SECONDS;
  const windowMs = windowSeconds * 1000;
  const max = Math.max(1, options.maxAddresses ?? MAX_TRACKED_ADDRESSES);
  const windows = new Map<string, Window>();
  // Windows in the order they opened, from `head` on: the first to end and
  // the first to drop. An entry whose address has since been dropped or has
  // opened a new window is skipped. (A plain array rather than the Map's own
  // order: V8 walks over deleted entries at a Map's front, which makes
  // dropping the oldest O(n) under steady churn.)
  let order: Window[] = [];
  let head = 0;
  const current = (window: Window) => windows.get(window.key) === window;

  /** The address's live window, dropping an ended one. */
  const live = (key: string, now: number): Window | undefined => {
    const window = windows.get(key);
    if (window && now - window.start >= windowMs) {
      windows.delete(key);
      return undefined;
    }
    return window;
  };

  /** Checks in flight per address, and the checks waiting for one of them to end (an address leaves when its last ends). */
  const inFlight = new Map<string, { running: number; waiting: (() => void)[] }>();

  /** The address's failures in its live window; throws TooManyAuthFailuresError at the limit. */
  const admit = (ip: string): number => {
    if (limit === 0) return 0;
    const now = clock.now().getTime();
    const window = live(clientKey(ip), now);
    if (!window || window.failures < limit) return window?.failures ?? 0;
    throw new TooManyAuthFailuresError(limit, windowSeconds, Math.max(1, Math.ceil((window.start + windowMs - now) / 1000)));
  };

  const fail = (ip: string) => {
    if (limit === 0) return;
    const now = clock.now().getTime();
    const key = clientKey(ip);
    const window = live(key, now);
    if (window) {
      window.failures++;
      return;
    }
    // Ended windows at the front go first, then, if still full, the oldest
    // live one. Each entry leaves the queue once: O(1) amortised.
    while (head < order.length) {
      const oldest = order[head]!;
      const isCurrent = current(oldest);
      if (isCurrent && windows.size < max && now - oldest.start < windowMs) break;
      if (isCurrent) windows.delete(oldest.key);
      head++;
    }
    if (head > 1024 && head * 2 > order.length) {
      order = order.slice(head);
      head = 0;
    }
    const opened: Window = { key, start: now, failures: 1 };
    windows.set(key, opened);
    order.push(opened);
  };

  return {
    admit,
    fail,
    async counting(ip, presentsKey, check) {
      if (limit === 0 || !presentsKey) return check();
      const key = clientKey(ip);
      for (;;) {
        const failures = admit(ip);
        const checks = inFlight.get(key);
        if (!checks) {
          inFlight.set(key, { running: 1, waiting: [] });
          break;
        }
        if (failures + checks.running < limit) {
          checks.running++;
          break;
        }
        await new Promise<void>((resolve) => checks.waiting.push(resolve));
      }
      try {
        return await check();
      } catch (error) {
        if (error instanceof InvalidApiKeyError) fail(ip);
        throw error;
      } finally {
        const checks = inFlight.get(key)!;
        checks.running--;
        // Every waiting check looks again (one or all may go, or be refused, as the failures now stand).
        const waiting = checks.waiting.splice(0);
        if (checks.running === 0) inFlight.delete(key);
        for (const wake of waiting) wake();
      }
    },
    get size() {
      return windows.size;
    },
  };
}

/**
 * What failures are counted against: the IPv4 address (also when written as
 * IPv4-mapped IPv6), or the /64 prefix of an IPv6 address. Anything else
 * (not an IP address) is its own key, as given.
 */
export function clientKey(ip: string): string {
  // fastify gives IPv6 link-local addresses with their zone ("fe80::1%eth0"); the zone is no part of the prefix.
  const text = ip.replace(/%.*$/, '');
  if (!ipaddr.isValid(text)) return ip;
  const address = ipaddr.process(text); // IPv4-mapped IPv6 comes back as IPv4
  if (address.kind() === 'ipv4') return address.toString();
  return `${(address as ipaddr.IPv6).parts.slice(0, 4).map((p) => p.toString(16)).join(':')}::/64`;
}
