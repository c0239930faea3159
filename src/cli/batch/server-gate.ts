/**
 * The calls a remote batch has at a server at once. The server lets one key
 * have only so many image calls in flight (OPTMARK_MAX_IN_FLIGHT_PER_KEY, 8
 * by default) and answers more with 429 too_many_requests; it does not say
 * the number beforehand, only in that answer. So --concurrency is where the
 * gate starts, and such an answer lowers it to what the server took, after
 * which the refused call waits its Retry-After and is made again. That wait
 * is not one of the file's tries: the refusal is about this run's own other
 * calls, and ends as they finish (with the client's five tries, 64 files at
 * once against 8 places failed 29 files of 300).
 *
 * The places may have been another client's of the same key (a second run, a
 * pipeline: the server counted more calls in progress than this run had), or
 * the account's share while other accounts waited; both are given back
 * later. Then, and only then (a key whose places this run fills alone would
 * be refused again at each try), after twice the gate's number of calls
 * answered in a row without such a refusal, it opens by one again, up to
 * --concurrency; an opening refused at once makes the next wait twice as
 * long (up to 64 times the number), so a key still shared is not probed at
 * every turn. And a file refused while it was this run's only call in
 * flight waits at most MAX_LONE_WAIT_MS in all: then its refusal is its
 * answer (a key whose places another client holds for good no longer keeps
 * the run waiting without end).
 */
import { isCallsInFlight } from '../../client/index.js';

/** How long, in all, a call refused while alone in flight waits for the places another client holds. */
export const MAX_LONE_WAIT_MS = 120_000;

export interface ServerGate {
  /** `call` once there is room, again after each refusal for calls in flight; `signal` ends the waits. */
  run<T>(call: () => Promise<T>, signal: AbortSignal): Promise<T>;
}

/** `say` is told, at the next answer, each time the gate was lowered or opened again. */
export function createServerGate(concurrency: number, say: (line: string) => void, options: { readonly maxLoneWaitMs?: number } = {}): ServerGate {
  const maxLoneWaitMs = options.maxLoneWaitMs ?? MAX_LONE_WAIT_MS;
  let limit = concurrency;
  let inFlight = 0;
  /** Calls answered since the gate was last lowered or opened. */
  let answeredInARow = 0;
  /** Whether a refusal showed places that are not this run's to fill for good (another client's, or a share while others wait). */
  let lent = false;
  /** Answers in a row, per file at once, before the gate opens by one: doubled each time an opening is refused at once (up to 64), back to 2 once one holds. */
  let patience = 2;
  /** The gate was opened and no refusal came since. */
  let opened = false;
  /** The number last said: a change is said at the next answer, so a burst of refusals says one line, with where it ended. */
  let said = concurrency;
  const waiting: Array<() => void> = [];

  const admitWaiting = () => {
    while (inFlight < limit && waiting.length > 0) {
      inFlight++;
      waiting.shift()!();
    }
  };
  const release = () => {
    inFlight--;
    admitWaiting();
  };
  const acquire = (signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      signal.throwIfAborted();
      if (inFlight < limit) {
        inFlight++;
        return resolve();
      }
      const enter = () => {
        signal.removeEventListener('abort', abort);
        resolve();
      };
      const abort = () => {
        waiting.splice(waiting.indexOf(enter), 1);
        reject(signal.reason);
      };
      waiting.push(enter);
      signal.addEventListener('abort', abort, { once: true });
    });
  /** The server took the calls in flight but this one: as many as are in flight besides it, or the number it names if fewer. */
  const lower = (message: string) => {
    answeredInARow = 0;
    if (opened) patience = Math.min(patience * 2, 64);
    opened = false;
    const named = /already has (\d+) calls in progress/.exec(message);
    const mine = inFlight - 1;
    // The server counted more calls in progress than this run has: the others are another client's.
    if ((named && mine < Number(named[1])) || /while other accounts wait/.test(message)) lent = true;
    limit = Math.min(limit, Math.max(1, Math.min(mine, named ? Number(named[1]) : Infinity)));
  };
  const answered = () => {
    if (limit !== said) {
      say(
        limit < said
          ? `optmark: the server takes ${limit} call(s) at once from this key: ${limit} file(s) at once from now on`
          : `optmark: the server takes more calls from this key again: ${limit} file(s) at once from now on`,
      );
      said = limit;
    }
    if (!lent || limit >= concurrency) return;
    answeredInARow++;
    if (answeredInARow < patience * limit) return;
    if (opened) patience = 2;
    answeredInARow = 0;
    opened = true;
    limit++;
    admitWaiting();
  };

  return {
    async run(call, signal) {
      let loneWaitMs = 0;
      for (;;) {
        await acquire(signal);
        let retryAfter: number;
        try {
          const result = await call();
          answered();
          return result;
        } catch (error) {
          if (!isCallsInFlight(error)) throw error;
          // Alone in flight: the places are another client's; this call waits for them only so long.
          const alone = inFlight === 1;
          lower(error.message);
          retryAfter = error.retryAfter ?? 1;
          if (alone) {
            loneWaitMs += retryAfter * 1000;
            if (loneWaitMs > maxLoneWaitMs) throw error;
          }
        } finally {
          release();
        }
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => {
            signal.removeEventListener('abort', abort);
            resolve();
          }, retryAfter * 1000);
          const abort = () => {
            clearTimeout(timer);
            reject(signal.reason);
          };
          if (signal.aborted) return abort();
          signal.addEventListener('abort', abort, { once: true });
        });
      }
    },
  };
}
