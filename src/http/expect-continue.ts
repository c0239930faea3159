/**
 * `Expect: 100-continue` (RFC 9110 §10.1.1): a client asks whether to send
 * its body before sending it (curl does for any body over 1 MB). Node
 * answers "100 Continue" at once by default, before any hook has looked at
 * the request, so a call with a wrong key, past its month's limit or too
 * many at once was sent its 25 MB only to be refused. Here the 100 goes out
 * when the body is about to be read:
 * - an upload (multipart, read by the route itself: upload.ts) once the call
 *   is admitted, its unit reserved, at the start of the read;
 * - any other body (a page's form, a scan's JSON: small, read by Fastify's
 *   parsers before the route's hooks) before it is parsed.
 * A request answered without its 100 closes its connection: the client did
 * not send the body, and the connection cannot tell what comes next.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';

/** Requests still waiting for their "100 Continue", with the response to write it on. */
const waiting = new WeakMap<IncomingMessage, ServerResponse>();

/** Install on the root instance before any route or plugin (its hooks apply to them all). */
export function holdContinue(app: FastifyInstance): void {
  // With a listener here Node no longer answers 100 by itself, nor emits 'request' for these.
  app.server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    waiting.set(request, response);
    app.server.emit('request', request, response);
  });
  // Any other expectation is ignored, as RFC 9110 §10.1.1 allows a server to: the request is served as usual (Node would answer a bare 417).
  app.server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    app.server.emit('request', request, response);
  });
  app.addHook('preParsing', async (request, _reply, payload) => {
    // Every request passes here; only one that asked has anything to decide.
    if (!waiting.has(request.raw)) return payload;
    const type = (request.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase();
    // An upload's route reads its body itself (and says 100 then); a type no parser takes is refused 415 unread.
    if (type !== 'multipart/form-data' && request.server.hasContentTypeParser(type)) sendContinue(request.raw);
    return payload;
  });
  app.addHook('onSend', async (request, reply, payload) => {
    if (waiting.delete(request.raw)) reply.header('Connection', 'close');
    return payload;
  });
}

/** Tell a client that asked to send its body now (a no-op for one that did not ask, or was told already). */
export function sendContinue(request: IncomingMessage): void {
  const response = waiting.get(request);
  if (!response) return;
  waiting.delete(request);
  if (!response.headersSent && !response.destroyed) response.writeContinue();
}
