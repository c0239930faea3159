/**
 * An AbortSignal for work whose answer nobody will read: aborted when the
 * response's connection closes before the response was sent (the client
 * went away, or timed out). Work still waiting in a queue (the pixel
 * decoder's) gives up its place; the call is not counted either way
 * (reservation.ts settles a call without an answer as failed).
 */
import type { FastifyReply } from 'fastify';
import { RequestError } from '../errors.js';

/**
 * @returns a signal whose reason is a typed error (the answer nobody will
 *   read is a 400, as for an upload cut short: upload.ts), so that work
 *   stopped by it never reads as a bug in the log.
 */
export function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  const response = reply.raw;
  const abandoned = () => {
    if (!response.writableFinished) controller.abort(new RequestError('malformed_request', 'The connection closed before the answer was sent'));
  };
  if (response.destroyed) abandoned();
  else response.once('close', abandoned);
  return controller.signal;
}
