/**
 * A budget, per account, for work that bought nothing: calls that failed
 * (answered 400 or more) after their body was read and processed, and calls
 * whose client left before the answer. Such calls count no unit of the
 * monthly allowance (only a 200 does), so without a bound an account could
 * have the server parse hostile XMP or decode and mark pictures for as long
 * as it liked, for free: eight verifies of 8 MB of broken XMP held the
 * event loop for seconds, and a dashboard marking abandoned by its client
 * cost 5 s of CPU.
 *
 * Each such call charges the account the work it cost (app/work-meter.ts:
 * CPU-seconds, on the event loop and the worker threads, and the time its
 * decodes held a decoder slot). Once an account has been charged `budget`
 * seconds in a window of one minute (a fixed window that opens at its first
 * charge), its calls get 429 too_many_failed_calls until the window ends
 * (Retry-After says when), before anything else is done for them. Calls that
 * succeed are never charged. State is per process, in memory: at most
 * `maxAccounts` accounts (the one whose window opened first is dropped to
 * make room); with several servers, each keeps its own count.
 */
import { TooManyFailedCallsError } from '../errors.js';
import type { Clock } from './ports.js';

export const FAILED_WORK_WINDOW_SECONDS = 60;
const MAX_ACCOUNTS = 10_000;

export interface FailedWork {
  /** Throws TooManyFailedCallsError while `account` has used its budget in its current window. */
  admit(account: string): void;
  /** Charge `seconds` of failed or abandoned work to `account`. */
  charge(account: string, seconds: number): void;
}

interface Window {
  /** When it opened (its first charge), in ms since the epoch. */
  readonly start: number;
  seconds: number;
}

export function createFailedWork(options: { budgetSeconds: number; clock: Clock; windowSeconds?: number; maxAccounts?: number }): FailedWork {
  const { budgetSeconds, clock } = options;
  const windowSeconds = options.windowSeconds ?? FAILED_WORK_WINDOW_SECONDS;
  const windowMs = windowSeconds * 1000;
  const max = options.maxAccounts ?? MAX_ACCOUNTS;
  // In the order their windows opened: the first to end is the first to drop.
  const windows = new Map<string, Window>();

  const live = (account: string, now: number): Window | undefined => {
    const window = windows.get(account);
    if (window && now - window.start >= windowMs) {
      windows.delete(account);
      return undefined;
    }
    return window;
  };

  return {
    admit(account) {
      if (budgetSeconds === 0) return;
      const now = clock.now().getTime();
      const window = live(account, now);
      if (!window || window.seconds < budgetSeconds) return;
      throw new TooManyFailedCallsError(budgetSeconds, windowSeconds, Math.max(1, Math.ceil((window.start + windowMs - now) / 1000)));
    },
    charge(account, seconds) {
      if (budgetSeconds === 0 || !(seconds > 0)) return;
      const now = clock.now().getTime();
      const window = live(account, now);
      if (window) {
        window.seconds += seconds;
        return;
      }
      if (windows.size >= max) windows.delete(windows.keys().next().value!);
      windows.set(account, { start: now, seconds });
    },
  };
}
