/**
 * The part of an image call that comes after its body was read: the work
 * itself (marking, reading, the fingerprint), run with a signal that is
 * aborted when the answer is no longer wanted (the client went away:
 * client-gone.ts) and with a meter of what the work costs
 * (app/work-meter.ts). A call whose work fails (its answer is then 400 or
 * more) or whose client went away charges that cost to its account's
 * failed-work budget (app/failed-work.ts); a call that succeeds charges
 * nothing.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { measuringWork } from '../app/work-meter.js';
import { clientGone } from './client-gone.js';

export async function runCallWork<T>(request: FastifyRequest, reply: FastifyReply, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const gone = clientGone(reply);
  const meter = { seconds: 0 };
  let failed = false;
  try {
    return await measuringWork(meter, () => work(gone));
  } catch (error) {
    failed = true;
    throw error;
  } finally {
    if (failed || gone.aborted) request.ticket?.chargeFailedWork(meter.seconds);
  }
}
