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
 */
import { isCallsInFlight } from '../../client/index.js';

export interface ServerGate {
  /** `call` once there is room, again after each refusal for calls in flight; `signal` ends the waits. */
  run<T>(call: () => Promise<T>, signal: AbortSignal): Promise<T>;
}

/** `say` is told each time the gate is lowered. */
export function createServerGate(concurrency: number, say: (line: string) => void): ServerGate {
  let limit = concurrency;
  let inFlight = 0;
  const waiting: Array<() => void> = [];

  const release = () => {
    inFlight--;
    while (inFlight < limit && waiting.length > 0) {
      inFlight++;
      waiting.shift()!();
    }
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
    const named = /already has (\d+) calls in progress/.exec(message);
    const took = Math.max(1, Math.min(inFlight - 1, named ? Number(named[1]) : Infinity));
    if (took >= limit) return;
    limit = took;
    say(`optmark: the server takes ${limit} call(s) at once from this key: ${limit} file(s) at once from now on`);
  };

  return {
    async run(call, signal) {
      for (;;) {
        await acquire(signal);
        let retryAfter: number;
        try {
          return await call();
        } catch (error) {
          if (!isCallsInFlight(error)) throw error;
          lower(error.message);
          retryAfter = error.retryAfter ?? 1;
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
