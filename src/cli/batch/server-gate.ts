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
 * The places may have been taken by another client of the same key (a second
 * run, a pipeline), which frees them later: after twice the gate's number of
 * calls answered in a row without such a refusal, it opens by one again, up
 * to --concurrency. And a file refused while it was this run's only call in
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

/** `say` is told each time the gate is lowered or opened again. */
export function createServerGate(concurrency: number, say: (line: string) => void, options: { readonly maxLoneWaitMs?: number } = {}): ServerGate {
  const maxLoneWaitMs = options.maxLoneWaitMs ?? MAX_LONE_WAIT_MS;
  let limit = concurrency;
  let inFlight = 0;
  /** Calls answered since the gate was last lowered or opened. */
  let answeredInARow = 0;
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
    const named = /already has (\d+) calls in progress/.exec(message);
    const took = Math.max(1, Math.min(inFlight - 1, named ? Number(named[1]) : Infinity));
    if (took >= limit) return;
    limit = took;
    say(`optmark: the server takes ${limit} call(s) at once from this key: ${limit} file(s) at once from now on`);
  };
  const answered = () => {
    if (limit >= concurrency) return;
    answeredInARow++;
    if (answeredInARow < 2 * limit) return;
    answeredInARow = 0;
    limit++;
    say(`optmark: the server took ${2 * (limit - 1)} call(s) in a row: ${limit} file(s) at once from now on`);
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
