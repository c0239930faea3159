/**
 * An image call under an Idempotency-Key (app/repeats.ts has the rules):
 * the first call runs and its outcome is kept; a repeat is answered from
 * that outcome (a 200 recomputed from the image it resends, a refusal as it
 * was) and gives back the unit it reserved, so it counts nothing.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Repeats, StoredOutcome } from '../app/repeats.js';
import { isOptmarkError } from '../errors.js';
import { STATUS } from './error-handler.js';

export interface IdempotentCall<T> {
  readonly repeats: Repeats;
  readonly accountId: string;
  readonly route: string;
  readonly key: string | undefined;
  /** The request's fingerprint: computed only when the call has a key (it hashes the whole image). */
  readonly requestHash: () => string;
  /** How long a repeat waits for a first call still running. */
  readonly waitMs: number;
  /** The work of a first call: the answer, and what to keep of it (no image). */
  run(): Promise<{ answer: T; kept: Record<string, unknown> }>;
  /** A repeat of a 200: the answer again, from what was kept and the image resent. */
  replay(kept: Record<string, unknown>): Promise<T>;
}

/** Run or replay; a replayed refusal is sent here and `undefined` returned. */
export async function idempotent<T>(request: FastifyRequest, reply: FastifyReply, call: IdempotentCall<T>): Promise<T | undefined> {
  if (call.key === undefined) return (await call.run()).answer;
  const repeat = await call.repeats.begin(call.accountId, call.route, call.key, call.requestHash(), call.waitMs);
  if (repeat.kind === 'none') return (await call.run()).answer;
  if (repeat.kind === 'repeat') {
    // Counted by the first call: this one gives its unit back, and keeps its place in flight for the work of answering again.
    await request.ticket?.giveBackUnit();
    reply.header('Idempotent-Replayed', 'true');
    const { status, body } = repeat.outcome;
    if (status === 200) return call.replay(body);
    await reply.code(status).type('application/json; charset=utf-8').send({ ...body, requestId: request.id });
    return undefined;
  }
  // An answer its client never gets is no outcome: the key stays free for the retry that follows.
  const response = reply.raw;
  // The connection may have closed already, before the call got here (its upload read whole): no 'close' is still to come.
  let unread = response.destroyed && !response.writableFinished;
  const noteUnread = () => {
    unread = !response.writableFinished;
  };
  response.once('close', noteUnread);
  try {
    const { answer, kept } = await call.run();
    await (unread ? repeat.release() : repeat.finish({ status: 200, body: kept }));
    return answer;
  } catch (error) {
    const outcome: StoredOutcome | undefined =
      !unread && isOptmarkError(error) && STATUS[error.code] < 500 && error.code !== 'too_many_requests' ? { status: STATUS[error.code], body: { error: error.message, code: error.code } } : undefined;
    // A refusal of the call itself is kept; a refusal of the moment (busy, unavailable), a bug, or a client gone frees the key for a retry.
    await (outcome ? repeat.finish(outcome) : repeat.release()).catch(() => {});
    throw error;
  } finally {
    response.off('close', noteUnread);
  }
}
