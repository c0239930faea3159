/**
 * A call's reserved unit, from the preHandler that reserved it to the
 * response: the API's image routes and the dashboard's actions hold theirs
 * the same way, so a dashboard upload counts exactly like an API call.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Ticket } from '../app/api-access.js';
import { setRateLimitHeaders } from './rate-limit.js';
import { readImagePart, type Upload, type UploadLimits } from './upload.js';

declare module 'fastify' {
  interface FastifyRequest {
    ticket?: Ticket;
  }
}

/** Attach a reserved unit to its request (in a preHandler, before the body is read). */
export async function holdTicket(request: FastifyRequest, reply: FastifyReply, ticket: Ticket): Promise<void> {
  request.ticket = ticket;
  // A call that ends without its answer being sent (the client went away,
  // before or after this point) gives its unit and its slot back. 'close'
  // comes after onSend has settled a call that answered; then it is a no-op.
  reply.raw.once('close', () => void ticket.settle(false));
  if (request.raw.socket?.destroyed) await ticket.settle(false);
}

/**
 * The image part of a call that holds a ticket: read while the call's place
 * in flight may still be given to another account (the read then ends with
 * 503 server_busy: app/admission.ts), then marked working, from which point
 * it is the call's for good.
 */
export async function readCallUpload(request: FastifyRequest, limits: UploadLimits, fieldNames: readonly string[] = []): Promise<Upload> {
  const slot = request.ticket?.slot;
  const upload = await readImagePart(request, limits, fieldNames, slot?.preempted, request.formTokenFirst);
  slot?.working();
  return upload;
}

/**
 * In the plugin whose routes hold tickets: a call settles its unit before
 * its response goes out (so the next request sees the count), and says what
 * is left: a call that fails gets its unit back, so it is not counted in
 * what is shown.
 */
export function settleTicketsOnSend(app: FastifyInstance, clock: () => Date): void {
  app.addHook('onSend', async (request, reply, payload) => {
    const ticket = request.ticket;
    if (ticket) {
      await ticket.settle(reply.statusCode === 200);
      // A repeat answered again counts nothing and says nothing of the limit (docs/api.md).
      if (!ticket.repeat) {
        setRateLimitHeaders(reply, [{ operation: ticket.operation, limit: ticket.limit, remaining: ticket.limit - ticket.used }], clock());
      }
    }
    return payload;
  });
}
