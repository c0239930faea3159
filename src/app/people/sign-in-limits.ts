/**
 * A brake on guessing passwords, with no lock anyone could put on someone
 * else's account:
 *
 * - per client address: at most 20 tries that did not hold in 10 minutes (a
 *   window opened by the first); past it, sign-ins from that address wait
 *   for the window to end;
 * - per (email, address): after 5 tries that did not hold, each further try
 *   must wait twice as long as the one before (2 s, 4 s, ... up to 15
 *   minutes) after the last. Another address is not held up: a known email
 *   cannot be locked out by strangers, only slowed down from where they are.
 *
 * A try is counted when it is let in, before its password is checked, and
 * given back when it holds (it then clears its (email, address) count): so
 * tries sent all at once are counted one after the other, and none is let
 * in past the limits while the others are being checked. The counts are
 * kept in the database (BrakeStore), so every worker and every instance on
 * it counts the same tries. An (email, address) count is forgotten after a
 * day without a try.
 */
import ipaddr from 'ipaddr.js';
import { TooManySignInsError } from '../../errors.js';
import type { Clock } from '../ports.js';
import type { BrakeStore, KeptBrake } from './ports.js';

export const ADDRESS_FAILURES = 20;
export const ADDRESS_WINDOW_SECONDS = 600;
export const FREE_TRIES = 5;
export const MAX_BACKOFF_SECONDS = 900;
const PAIR_MEMORY_MS = 86_400_000;

/** Tries counted, and when (ms): the address's window opened, or the pair's last try. */
interface Count {
  readonly tries: number;
  readonly at: number;
}

/** A sign-in let in: say whether it held. */
export interface SignInTry {
  /** The password held: the try is given back to its address, and its (email, address) count cleared. */
  held(): Promise<void>;
}

export interface SignInLimits {
  /** Count a try, or throw TooManySignInsError (429 with Retry-After) when it must wait (nothing is then counted). */
  admit(ip: string, email: string): Promise<SignInTry>;
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

/** The seconds a try must wait after the last one, once `tries` have not held (0: none). */
export function backoffSeconds(tries: number): number {
  return tries < FREE_TRIES ? 0 : Math.min(MAX_BACKOFF_SECONDS, 2 ** (tries - FREE_TRIES + 1));
}

/**
 * The rule, free of storage: whether a try at `now` is let in given its
 * address's and its pair's counts, and the counts to keep if it is.
 */
export function decideSignIn(address: Count | undefined, pair: Count | undefined, now: number): { wait: number } | { address: Count; pair: Count } {
  const windowMs = ADDRESS_WINDOW_SECONDS * 1000;
  const windowOpen = address !== undefined && now - address.at < windowMs;
  const addressWait = windowOpen && address.tries >= ADDRESS_FAILURES ? address.at + windowMs - now : 0;
  // No wait before the free tries are used (another server's clock may run a little ahead of this one's).
  const pairWait = pair && backoffSeconds(pair.tries) > 0 ? Math.max(0, pair.at + backoffSeconds(pair.tries) * 1000 - now) : 0;
  const wait = Math.max(addressWait, pairWait);
  if (wait > 0) return { wait: Math.ceil(wait / 1000) };
  return {
    address: windowOpen ? { tries: address.tries + 1, at: address.at } : { tries: 1, at: now },
    pair: { tries: (pair?.tries ?? 0) + 1, at: now },
  };
}

export function createSignInLimits(store: BrakeStore, clock: Clock): SignInLimits {
  const keysOf = (ip: string, email: string) => {
    const address = addressKey(ip);
    return { address: `sign-in address ${address}`, pair: `sign-in pair ${address} ${email.trim().toLowerCase()}` };
  };
  const windowEnd = (count: Count): KeptBrake<Count> => ({ state: count, forgetAt: new Date(count.at + ADDRESS_WINDOW_SECONDS * 1000) });

  return {
    async admit(ip, email) {
      const keys = keysOf(ip, email);
      const decided = await store.hold<Count, ReturnType<typeof decideSignIn>>([keys.address, keys.pair], ([address, pair]) => {
        // The time once the brakes are held: a try that waited for another to be counted comes after it.
        const now = clock.now().getTime();
        const answer = decideSignIn(address, pair, now);
        if ('wait' in answer) return { answer };
        return { answer, keep: [windowEnd(answer.address), { state: answer.pair, forgetAt: new Date(now + PAIR_MEMORY_MS) }] };
      });
      if ('wait' in decided) throw new TooManySignInsError(decided.wait);
      const counted = decided.address;
      return {
        async held() {
          await store.hold<Count, void>([keys.address, keys.pair], ([address]) => {
            // Given back only to the window it was counted in.
            const back = address && address.at === counted.at && address.tries > 0 ? windowEnd({ tries: address.tries - 1, at: address.at }) : address && windowEnd(address);
            return { answer: undefined, keep: [back, undefined] };
          });
        },
      };
    },
  };
}
