/**
 * Read the one part an image endpoint takes: a file part named `image`, and
 * the text fields the caller names (the dashboard's form options; the API's
 * protect takes `value` and `otherConstraints`, verify none). Anything else
 * in the body is refused, not ignored.
 *
 * The body is streamed from the request into the multipart parser with
 * stream.pipeline, so an error on either side (above all a client that goes
 * away mid-upload) ends both at once, and the file streams are then
 * destroyed: nothing received is kept once the read has failed. The size
 * limit is enforced while streaming; over it, reading stops at once and the
 * answer (413, connection closed) ends the upload. A body that stalls (less
 * than 64 KiB in a window) is cut off the same way with 408, so a slow
 * client cannot hold a slot and its buffers for the whole request timeout.
 *
 * Parser failures become our errors here (malformed_request, multiple_parts,
 * image_too_large, ...); their statuses are the error handler's.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { pipeline } from 'node:stream';
import { Busboy, type BusboyFileStream, type BusboyHeaders, type BusboyInstance } from '@fastify/busboy';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { formFilename, keptName } from '../app/filename.js';
import { CrossSiteRequestError, ImageTooLargeError, RequestError, type OptmarkError } from '../errors.js';
import { sendContinue } from './expect-continue.js';

/** Bytes an upload must deliver in each stall window (a 26 kbit/s link). */
export const STALL_BYTES = 64 * 1024;
/** The minimum average rate applies from this many seconds into the body on: a slow start (a link waking up) is not judged. */
export const RATE_GRACE_SECONDS = 10;

export interface UploadLimits {
  readonly maxUploadBytes: number;
  readonly stallSeconds: number;
  /** Bytes per second the whole body must average once RATE_GRACE_SECONDS have passed (0: no minimum). */
  readonly minBytesPerSecond: number;
}

export interface Upload {
  readonly bytes: Buffer;
  readonly filename: string | undefined;
  /** The named text fields that were sent, by name. */
  readonly fields: Readonly<Record<string, string>>;
}

/**
 * Limits for the multipart parser: one image part and room to notice a
 * second one. A text field may have 8 KiB: the longest the forms take is a
 * constraints text of 1,000 characters (at most 4 bytes each in UTF-8); one
 * the parser cuts at the limit still has more than 1,000 characters, and is
 * refused for its length.
 */
export function multipartLimits(maxUploadBytes: number) {
  return { fileSize: maxUploadBytes, files: 2, fields: 5, parts: 7, fieldSize: 8 * 1024, headerPairs: 20 };
}

/** The field an upload form without JavaScript sends its form token in, first of all (http/web/guard.ts). */
export const FORM_TOKEN_FIELD = 'csrf';

/**
 * The parser's high-water mark for each part, above any one chunk of a
 * request body (a socket read, at most 64 KiB). A part the parser skips (no
 * Content-Disposition, or past a limit) gets its data before it starts
 * flowing; with the default mark (16 KiB), a skipped part of more than that
 * which ends, with the form, inside one chunk left the parser paused for
 * good, and the request unanswered until the request timeout. Nothing is
 * held because of it: the parts we read flow, the others are discarded.
 */
const PART_HIGH_WATER_MARK = 1024 * 1024;

/** Requests whose body fastify let through as multipart/form-data, unread. */
const multipartRequests = new WeakSet<FastifyRequest>();

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's body is an image upload (multipart/form-data, read by readImagePart): the only routes that take one. */
    upload?: boolean;
  }
}

/** What the route's body must be, in words, for a body of another type (415). */
export function bodyWanted(request: FastifyRequest): string {
  if (request.routeOptions.config?.upload) return 'Send the image as multipart/form-data with one part named "image"';
  if (request.server.hasContentTypeParser('application/x-www-form-urlencoded')) return 'This form takes its fields URL-encoded (application/x-www-form-urlencoded), as a browser sends a form';
  if (request.server.hasContentTypeParser('application/json')) return 'Send the body as JSON (Content-Type: application/json)';
  return `${request.method} ${request.routeOptions.url ?? request.url.split('?')[0]} takes no body`;
}

/**
 * A multipart body sent to a route that takes no upload is refused (415)
 * unread: the body parsers let every multipart body through for the upload
 * routes to stream, and a form route would otherwise read it as a form with
 * no fields (a profile form's name then saved as empty).
 */
export function refuseStrayMultipart(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    if (multipartRequests.has(request) && !request.routeOptions.config?.upload && !request.is404) {
      throw new RequestError('unsupported_content_type', bodyWanted(request));
    }
  });
}

/** Request bodies the upload reader has taken (read, or read to nothing to keep the connection). */
const bodiesTaken = new WeakSet<IncomingMessage>();
/** Request bodies the upload reader stopped reading (413, 408, the call's place taken away). */
const bodiesAbandoned = new WeakSet<IncomingMessage>();

/** Whether a request came with a body, and not all of it has arrived. */
function bodyStillComing(raw: IncomingMessage): boolean {
  const hasBody = raw.headers['transfer-encoding'] !== undefined || Number(raw.headers['content-length'] ?? 0) > 0;
  return hasBody && !raw.complete;
}

/** The upload reader stopped reading this request's body (413, 408, the call's place taken away): its answer closes the connection. */
export function bodyAbandoned(request: FastifyRequest): boolean {
  return bodyStillComing(request.raw) && bodiesAbandoned.has(request.raw);
}

/**
 * What the rest of a body left unread may still bring, once its answer is
 * out, before its connection is closed: time for a client to finish the
 * writes it has in flight and read the answer (closing at once, with data
 * unread, resets the connection, and a client still writing may then lose
 * the answer), not enough to feed the server a body for free.
 */
export const LINGER = { ms: 1000, bytes: 8 * 1024 * 1024 } as const;

/**
 * The linger of a client that was told to stop and did not: an account
 * that spent its failed-work budget, an address past its invalid keys. Such
 * a client sent its next body at once (the load run's hostile clients: 56
 * refusals a second, each 8 MB read through the HTTP parser for nothing,
 * /healthz's p99 at 216 ms); it gets its answer and 256 KiB more, then its
 * connection is closed, and may lose the answer if it was still writing.
 */
export const LINGER_TOLD = { ms: 1000, bytes: 256 * 1024 } as const;

export type Linger = typeof LINGER | typeof LINGER_TOLD;

/**
 * Once its answer is out, read and throw away what `socket` still receives
 * until its client closes, LINGER.ms pass or LINGER.bytes arrive; then
 * `done` (which closes it, or keeps it when the body has ended in time).
 *
 * A socket the server paused (the body waiting unread, its buffer full) is
 * watched once it reads again (the request's body dumped resumes it): a
 * 'data' listener takes the socket from the HTTP parser that reads it
 * directly, and one added while it was paused left it paused for good, so a
 * connection that should have been kept was closed at the end of the
 * linger, under a client that may be sending its next request on it.
 */
function linger(socket: Socket, ended: () => boolean, done: () => void, limits: Linger = LINGER): void {
  const start = socket.bytesRead;
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    socket.off('resume', watchData);
    socket.off('data', watch);
    socket.off('end', finish);
    socket.off('close', stop);
    done();
  };
  // Removed when the linger ends: a connection kept open lingers again on a
  // later refusal, and a listener left behind each time was a leak (Node's
  // MaxListenersExceededWarning after 11 refusals on one connection).
  const stop = () => clearTimeout(timer);
  const watch = () => {
    if (ended() || socket.bytesRead - start > limits.bytes) finish();
  };
  const watchData = () => {
    if (!finished) socket.on('data', watch);
  };
  const timer = setTimeout(finish, limits.ms);
  timer.unref();
  if (socket.isPaused()) socket.once('resume', watchData);
  else watchData();
  socket.once('end', finish);
  socket.once('close', stop);
}

/**
 * A request refused before anything wanted its body (a missing or wrong
 * key, a limit, a path or a content type that is not taken): once its answer
 * is out, Node reads and discards the rest of the body to keep the
 * connection, for as long as the client cares to send it (up to the request
 * timeout). The rest is given LINGER: a client that sent a small body with a
 * wrong key keeps its connection, one that goes on sending has it closed.
 */
export function lingerOnUnwantedBody(request: FastifyRequest, reply: { raw: { once(event: 'finish', listener: () => void): unknown } }, limits: Linger = LINGER): void {
  const raw = request.raw;
  if (!bodyStillComing(raw) || bodiesTaken.has(raw)) return;
  reply.raw.once('finish', () => {
    const socket = raw.socket;
    if (!socket || socket.destroyed || raw.complete) return;
    linger(
      socket,
      () => raw.complete,
      () => {
        if (!raw.complete) socket.destroy();
      },
      limits,
    );
  });
}

/**
 * The connection of an answer that says `Connection: close` while the body
 * is still coming (413, 408, a place taken away: the reader stopped reading
 * it): closed gently. Node would end and destroy the socket as soon as the
 * answer is written, with the rest of the body unread, which resets the
 * connection under a client still writing (it may then lose the answer):
 * instead the answer is followed by the end of the server's side, and what
 * the client still sends is read and thrown away for LINGER before the
 * socket is destroyed.
 */
export function closeGently(request: FastifyRequest): void {
  const raw = request.raw;
  const socket = raw.socket;
  if (!socket || !bodyStillComing(raw)) return;
  // Node's server calls destroySoon once an answer with Connection: close is written.
  socket.destroySoon = function lingeringDestroySoon(this: Socket) {
    this.end();
    raw.resume();
    linger(this, () => false, () => this.destroy());
  };
}

/**
 * Let multipart/form-data bodies through to the routes without reading them
 * (readImagePart streams them). Register after removing the default parsers:
 * any other content type is then refused (415) before its body is read.
 */
export function acceptMultipartBodies(app: FastifyInstance): void {
  app.addContentTypeParser('multipart/form-data', (request, _payload, done) => {
    multipartRequests.add(request);
    done(null);
  });
}

/**
 * @param stop aborted when the read must end now with its reason as the
 *   answer (the call's place in flight was given to another account): the
 *   rest of the body is not read, and the answer closes the connection.
 * @param formTokenFirst given for an upload form sent without its token in
 *   a header: the body's first part must be the field `csrf` holding a token
 *   this accepts, or the read ends with 403 cross_site_request before any
 *   file is taken.
 */
export async function readImagePart(
  request: FastifyRequest,
  limits: UploadLimits,
  fieldNames: readonly string[] = [],
  stop?: AbortSignal,
  formTokenFirst?: (token: string) => boolean,
): Promise<Upload> {
  if (!multipartRequests.has(request)) {
    // Only a multipart body can carry the form token an upload form sends.
    if (formTokenFirst) throw new CrossSiteRequestError();
    throw new RequestError('unsupported_content_type', 'Send the image as multipart/form-data with one part named "image"');
  }
  // The client that asked before sending its body (Expect: 100-continue) is told to now: the call is admitted.
  sendContinue(request.raw);
  return readUpload(request.raw, limits, fieldNames, stop, formTokenFirst);
}

/**
 * What to do with the rest of the body once the read has failed: `stop`
 * reading it (the answer closes the connection: 413, 408, or the client is
 * gone), or `drain` it through the parser, discarding every byte, so that a
 * 400 leaves the connection usable.
 */
type Rest = 'stop' | 'drain';

/** The image part: its chunks while it arrives, then its bytes. */
interface ImagePart {
  readonly filename: string | undefined;
  chunks: Buffer[];
  bytes?: Buffer;
}

/**
 * A part is a file when it has a file name or declares a type other than
 * text (the parser's default counts only application/octet-stream): an
 * image part sent as `Content-Type: image/jpeg` without `filename=`, as
 * RFC 7578 allows, is the image; a part without a type is a text field.
 */
const isPartAFile = (_name: string | undefined, type: string | undefined, filename: string | undefined): boolean => filename !== undefined || !(type ?? 'text/plain').startsWith('text/');

function readUpload(raw: IncomingMessage, limits: UploadLimits, fieldNames: readonly string[], stop: AbortSignal | undefined, formTokenFirst: ((token: string) => boolean) | undefined): Promise<Upload> {
  const { maxUploadBytes, stallSeconds, minBytesPerSecond } = limits;
  bodiesTaken.add(raw);
  let busboy: BusboyInstance;
  try {
    busboy = Busboy({ headers: raw.headers as BusboyHeaders, limits: multipartLimits(maxUploadBytes), fileHwm: PART_HIGH_WATER_MARK, isPartAFile });
  } catch (error) {
    // A multipart type without a boundary: nothing was read, and Node discards the body after the answer.
    return Promise.reject(malformed(error));
  }

  return new Promise<Upload>((resolve, reject) => {
    const socket = raw.socket;
    /** Every file stream the parser has opened and not yet closed. */
    const files = new Set<BusboyFileStream>();
    const fields: Record<string, string> = {};
    const others: string[] = [];
    let image: ImagePart | undefined;
    /** Whether the form token still has to come, as the first part (an upload form without JavaScript). */
    let tokenDue = formTokenFirst !== undefined;
    let settled = false;
    let piping = true;
    let received = 0;
    let receivedInWindow = 0;

    const count = (chunk: Buffer) => {
      received += chunk.length;
      receivedInWindow += chunk.length;
    };
    const stall = setInterval(() => {
      if (receivedInWindow < STALL_BYTES && !raw.complete) {
        fail(new RequestError('request_timeout', `The upload stalled: less than ${STALL_BYTES} bytes arrived in ${stallSeconds} s`), 'stop');
      }
      receivedInWindow = 0;
    }, stallSeconds * 1000);
    // The whole body's average rate, checked every second once the grace has
    // passed: a trickle that keeps above the stall guard (64 KiB per window)
    // would otherwise hold its place in flight for the whole request timeout.
    const started = performance.now();
    const pace =
      minBytesPerSecond > 0
        ? setInterval(() => {
            const seconds = (performance.now() - started) / 1000;
            if (seconds >= RATE_GRACE_SECONDS && received / seconds < minBytesPerSecond && !raw.complete) {
              fail(
                new RequestError('request_timeout', `The upload is too slow: ${received} bytes in ${Math.round(seconds)} s, under the minimum average of ${minBytesPerSecond} bytes a second`),
                'stop',
              );
            }
          }, 1000)
        : undefined;
    const stopped = () => fail(stop!.reason as OptmarkError, 'stop');

    /** Once the connection is gone, end the request too (and so the pipeline, which destroys the parser). */
    const endRequest = () => raw.destroy();

    function settle(): boolean {
      if (settled) return false;
      settled = true;
      clearInterval(stall);
      clearInterval(pace);
      stop?.removeEventListener('abort', stopped);
      raw.off('data', count);
      return true;
    }

    function fail(error: OptmarkError, rest: Rest): void {
      if (!settle()) return;
      // Drop what was received; a file still arriving is read to nothing (or not read at all, below).
      if (image) image.chunks = [];
      for (const file of files) {
        file.removeAllListeners('data');
        file.resume();
      }
      if (rest === 'stop') bodiesAbandoned.add(raw);
      if (rest === 'stop' && piping && !raw.readableEnded) {
        // Read no more: the rest stays in the kernel until the answer closes the
        // connection. The request is not destroyed here, which would close the
        // connection before the answer could be sent.
        raw.unpipe(busboy);
        raw.pause();
        for (const file of files) file.destroy();
        if (!socket || socket.destroyed) endRequest();
        else socket.once('close', endRequest);
      }
      reject(error);
    }

    function succeed(): void {
      if (tokenDue) return fail(new CrossSiteRequestError(), 'drain');
      if (!settle()) return;
      if (!image?.bytes) {
        const seen = others.length ? ` (the body has ${others.join(', ')})` : '';
        reject(new RequestError('missing_image_part', `The request has no file part named "image"${seen}`));
      } else if (others.length > 0) {
        reject(tooMany(fieldNames, others));
      } else {
        resolve({ bytes: image.bytes, filename: image.filename === undefined ? undefined : keptName(formFilename(image.filename)), fields });
      }
    }

    busboy.on('file', (name, file, filename) => {
      files.add(file);
      file.once('close', () => files.delete(file));
      // Only a body that ends inside the part errs here ("Part terminated early").
      file.on('error', (error) => fail(malformed(error), 'drain'));
      // Over the limit, fail now rather than when the part ends: the answer
      // (413, connection closed) then stops an upload that would otherwise go
      // on streaming, for as long as the client likes, into a parser that
      // discards it.
      file.once('limit', () => fail(new ImageTooLargeError(maxUploadBytes), 'stop'));
      if (settled) {
        file.resume();
      } else if (tokenDue) {
        // A file before the form's token: nothing of it is read.
        fail(new CrossSiteRequestError(), 'stop');
      } else if (name === 'image' && image === undefined) {
        const part: ImagePart = { filename, chunks: [] };
        image = part;
        file.on('data', (chunk: Buffer) => part.chunks.push(chunk));
        file.once('end', () => {
          part.bytes = Buffer.concat(part.chunks);
          part.chunks = [];
        });
      } else {
        others.push(describe('file part', name));
        file.resume();
      }
    });
    busboy.on('field', (name, value) => {
      if (settled) return;
      if (tokenDue) {
        tokenDue = false;
        if (name !== FORM_TOKEN_FIELD || !formTokenFirst!(value)) fail(new CrossSiteRequestError(), 'stop');
        return;
      }
      if (fieldNames.includes(name) && !Object.hasOwn(fields, name)) fields[name] = value;
      else others.push(describe('field', name));
    });
    // Past a limit the parser skips the remaining parts: the body is still read to its end.
    for (const limit of ['partsLimit', 'filesLimit', 'fieldsLimit'] as const) busboy.on(limit, () => fail(tooMany(fieldNames), 'drain'));

    // The pipeline handles 'error' on the request and on the parser: either
    // one's failure (the client gone, a malformed body) destroys the other.
    pipeline(raw, busboy, (error) => {
      piping = false;
      socket?.off('close', endRequest);
      for (const file of files) file.destroy();
      files.clear();
      if (!error) succeed();
      // An empty body is an empty form: no image part (rather than a truncated form).
      else if (received === 0 && raw.complete) succeed();
      else if (!raw.complete) fail(new RequestError('malformed_request', 'The connection closed before the upload was complete'), 'stop');
      else fail(malformed(error), 'drain');
    });
    raw.on('data', count);
    if (stop?.aborted) stopped();
    else stop?.addEventListener('abort', stopped, { once: true });
  });
}

function describe(kind: string, name: string | undefined): string {
  return name ? `${kind} ${JSON.stringify(name)}` : `a ${kind} without a name`;
}

function malformed(error: unknown): RequestError {
  return new RequestError('malformed_request', `Malformed multipart body: ${(error as Error).message}`);
}

/** The parts this route takes (the file "image", and the named fields where a form has them), and what else came. */
function tooMany(fieldNames: readonly string[], others?: string[]): RequestError {
  const which = others?.length ? `; found also ${others.join(', ')}` : '';
  const expected = fieldNames.length
    ? `Send the file "image" and at most the fields ${fieldNames.map((f) => `"${f}"`).join(', ')}, once each`
    : 'Send exactly one part, the file "image"';
  return new RequestError('multiple_parts', `${expected}${which}`);
}
