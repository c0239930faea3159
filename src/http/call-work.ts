/**
 * The part of an image call that comes after its body was read: the work
 * itself (marking, reading, the fingerprint), run with a signal that is
 * aborted when the answer is no longer wanted, and with a meter of what the
 * work costs (app/work-meter.ts).
 *
 * - The answer is no longer wanted when the client went away
 *   (client-gone.ts), or when the work has taken `seconds` (the request
 *   timeout): the call is then answered 503 service_unavailable at once,
 *   its unit given back, and the work stops at its next step. So no call
 *   lasts longer than twice the request timeout (its upload, then its
 *   work), which the reservation TTL must exceed (config.ts).
 * - A call whose work fails (its answer is then 400 or more), runs out of
 *   time, or whose client went away charges that cost to its account's
 *   failed-work budget (app/failed-work.ts); a call that succeeds charges
 *   nothing.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { measuringWork } from '../app/work-meter.js';
import { ServiceUnavailableError } from '../errors.js';
import { clientGone } from './client-gone.js';

export async function runCallWork<T>(request: FastifyRequest, reply: FastifyReply, seconds: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const gone = clientGone(reply);
  const late = new AbortController();
  const timer = setTimeout(() => late.abort(new ServiceUnavailableError(`The call could not be finished within ${seconds} s; try again`, 5)), seconds * 1000);
  const signal = AbortSignal.any([gone, late.signal]);
  const meter = { seconds: 0 };
  let failed = false;
  try {
    const working = measuringWork(meter, () => work(signal));
    // The answer does not wait for a step that cannot be interrupted (a decode in libvips).
    const outOfTime = new Promise<never>((_, reject) => late.signal.addEventListener('abort', () => reject(late.signal.reason), { once: true }));
    working.catch(() => {});
    outOfTime.catch(() => {});
    return await Promise.race([working, outOfTime]);
  } catch (error) {
    failed = true;
    throw error;
  } finally {
    clearTimeout(timer);
    if (failed || gone.aborted) request.ticket?.chargeFailedWork(meter.seconds);
  }
}
