/**
 * POST /api/v1/protect and POST /api/v1/verify: authenticate and reserve a
 * unit (preHandler, before the body is read), read the one image part, run
 * the same use case the CLI runs, answer exactly the spec's fields.
 *
 * A request with a key from an address that has presented too many invalid
 * keys is refused first (onRequest), before the key is looked up; an invalid
 * key counts against its address (app/auth-failures.ts).
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { MetadataWorkers } from '../../app/off-loop.js';
import { protectOffLoop, type ProtectResult } from '../../app/protect-image.js';
import type { Fingerprinting } from '../../app/fingerprint.js';
import { inspectWithFingerprint } from '../../app/verify-image.js';
import { bearerCredential, presentsKey, type ApiAccess, type Credential } from '../../app/api-access.js';
import type { AuthFailures } from '../../app/auth-failures.js';
import type { Provenance } from '../../app/provenance.js';
import { InvalidOptionError, type Operation } from '../../errors.js';
import { checkIdempotencyKey, type Repeats } from '../../app/repeats.js';
import { sha256Hex } from '../../core/bytes/digest.js';
import { idempotent } from '../idempotent.js';
import { answerOtherMethods } from './other-methods.js';
import { runCallWork } from '../call-work.js';
import { setRateLimitHeaders } from '../rate-limit.js';
import { C2PA_HEADER, errorResult, OPT_OUT_HEADER, optOutHeader, protectResult, usageResult, verifyResult } from '../schemas.js';
import { holdTicket, readCallUpload, settleTicketsOnSend } from '../reservation.js';
import type { UploadLimits } from '../upload.js';

export interface ImageRouteOptions {
  readonly access: ApiAccess;
  readonly authFailures: AuthFailures;
  readonly provenance: Provenance;
  readonly fingerprint: Fingerprinting;
  /** Where a file whose XMP is too long for the event loop is read and written (app/off-loop.ts). */
  readonly workers: MetadataWorkers | undefined;
  /** How long a call's work may take after its body was read (OPTMARK_REQUEST_TIMEOUT): http/call-work.ts. */
  readonly callSeconds: number;
  readonly upload: UploadLimits;
  /** Largest declared width x height protect and verify take (OPTMARK_MAX_IMAGE_PIXELS). */
  readonly maxImagePixels: number;
  readonly clock: () => Date;
  /** Repeated calls under one Idempotency-Key (app/repeats.ts). */
  readonly repeats: Repeats;
  /** How long a repeat waits for a first call still running. */
  readonly requestTimeoutMs: number;
}

const errors = { '4xx': errorResult, '5xx': errorResult };

export async function imageRoutes(app: FastifyInstance, options: ImageRouteOptions): Promise<void> {
  const { access, authFailures, provenance, fingerprint, workers, callSeconds, upload: uploadLimits, maxImagePixels, clock, repeats } = options;

  /** An address past its invalid keys gets 429 for any request with a key, valid or not: before the lookup, the body unread. */
  const refuseKeyGuessers = async (request: FastifyRequest) => {
    if (presentsKey(request.headers.authorization)) authFailures.admit(request.ip);
  };
  /** The bearer key's check, an invalid key counted against the address. */
  const checkingKey = <T>(request: FastifyRequest, check: (credential: Credential) => Promise<T>) =>
    authFailures.counting(request.ip, presentsKey(request.headers.authorization), async () => check(bearerCredential(request.headers.authorization)));

  const idempotencyKey = (request: FastifyRequest) => {
    const value = request.headers['idempotency-key'];
    return checkIdempotencyKey(typeof value === 'string' ? value : undefined);
  };

  const reserve = (operation: Operation) => async (request: FastifyRequest, reply: FastifyReply) => {
    // The API key is checked before the Idempotency-Key: a caller without a valid key learns only that (401).
    let key: string | undefined;
    let malformed: unknown;
    try {
      key = idempotencyKey(request);
    } catch (error) {
      malformed = error;
    }
    // The repeat of a call that returned 200 is answered again at the month's limit too: it counts nothing.
    const countsNothing = key === undefined ? undefined : (accountId: string) => repeats.succeeded(accountId, operation, key);
    await holdTicket(request, reply, await checkingKey(request, (credential) => access.open(credential, operation, countsNothing)));
    // Its unit goes back with the refusal, as with any failure.
    if (malformed !== undefined) throw malformed;
  };
  const accountOf = (request: FastifyRequest) => request.ticket!.principal.accountId;
  settleTicketsOnSend(app, clock);

  app.post('/api/v1/protect', {
    config: { access: 'api-key', upload: true },
    schema: { response: { 200: protectResult, ...errors }, consumes: ['multipart/form-data'] },
    onRequest: refuseKeyGuessers,
    preHandler: reserve('protect'),
    handler: async (request, reply) => {
      const upload = await readCallUpload(request, uploadLimits);
      const mark = (iat: number) =>
        runCallWork(request, reply, callSeconds, (signal) => protectOffLoop(upload.bytes, { filename: upload.filename, maxImagePixels }, provenance.at(iat), { workers, signal }));
      const result = await idempotent(request, reply, {
        repeats,
        accountId: accountOf(request),
        route: 'protect',
        key: idempotencyKey(request),
        requestHash: () => repeats.requestHash(sha256Hex(upload.bytes), {}),
        waitMs: options.requestTimeoutMs,
        async run() {
          const iat = Math.floor(clock().getTime() / 1000);
          const marked = await mark(iat);
          return { answer: marked, kept: { iat, kid: provenance.activeKid(), sha256: marked.sha256, filename: marked.filename, mimeType: marked.mimeType } };
        },
        replay: (kept) => mark(Number(kept.iat)),
      });
      if (result === undefined) return reply;
      // Writing XMP breaks the hard binding of a C2PA manifest the file carried: say so.
      if (result.c2paInvalidated) reply.header(C2PA_HEADER, 'invalidated');
      // The API takes no value: an opt-out the upload carries is kept; the header says which was.
      reply.header(OPT_OUT_HEADER, optOutHeader(result));
      const { body, length } = protectBody(result);
      return reply.type('application/json; charset=utf-8').header('content-length', length).send(body);
    },
  });

  app.post('/api/v1/verify', {
    config: { access: 'api-key', upload: true },
    schema: { response: { 200: verifyResult, ...errors }, consumes: ['multipart/form-data'] },
    onRequest: refuseKeyGuessers,
    // The key first, then the query: a refused query counts nothing, and the body is not read.
    preHandler: [reserve('verify'), async (request) => void verifyDetailOption(request.query)],
    handler: async (request, reply) => {
      const full = verifyDetailOption(request.query);
      const upload = await readCallUpload(request, uploadLimits);
      const check = async () => {
        const { result, details } = await runCallWork(request, reply, callSeconds, (signal) => inspectWithFingerprint(upload.bytes, { provenance, fingerprint, maxImagePixels, signal, workers }));
        return full ? { ...result, details } : result;
      };
      const answer = await idempotent(request, reply, {
        repeats,
        accountId: accountOf(request),
        route: 'verify',
        key: idempotencyKey(request),
        requestHash: () => repeats.requestHash(sha256Hex(upload.bytes), { detail: full ? 'full' : null }),
        waitMs: options.requestTimeoutMs,
        async run() {
          const result = await check();
          return { answer: result, kept: { sha256: result.sha256 } };
        },
        replay: () => check(),
      });
      return answer === undefined ? reply : answer;
    },
  });

  app.get('/api/v1/usage', {
    config: { access: 'api-key' },
    schema: { response: { 200: usageResult, ...errors } },
    onRequest: refuseKeyGuessers,
    handler: async (request, reply) => {
      const principal = await checkingKey(request, (credential) => access.authenticate(credential));
      const report = await access.usage(principal);
      setRateLimitHeaders(
        reply,
        [
          { operation: 'protect', limit: report.protect.limit, remaining: report.protect.remaining },
          { operation: 'verify', limit: report.verify.limit, remaining: report.verify.remaining },
        ],
        clock(),
      );
      return report;
    },
  });

  // The API's paths answer other methods with 405 and the methods they take.
  answerOtherMethods(app, [
    ['/api/v1/protect', 'POST'],
    ['/api/v1/verify', 'POST'],
    ['/api/v1/usage', 'GET'],
  ]);
}

/**
 * verify's one query parameter: `detail=full` adds `details` to the answer.
 * Anything else (another parameter, another value, the parameter twice) is
 * invalid_option (400): a client that asks for something it would not get
 * hears so, rather than reading an answer it did not ask for.
 */
function verifyDetailOption(query: unknown): boolean {
  const entries = Object.entries((query ?? {}) as Record<string, unknown>);
  for (const [name, value] of entries) {
    if (name !== 'detail') throw new InvalidOptionError('the query', 'only the parameter detail (detail=full)', name);
    if (value !== 'full') throw new InvalidOptionError('detail', '"full"', Array.isArray(value) ? value.join(',') : value);
  }
  return entries.length > 0;
}

/** Bytes encoded per step: a multiple of 3, so the pieces concatenate to one base64 text. */
const BASE64_STEP = 3 * 4096;
/** Bytes of the image per piece of a streamed answer (a multiple of BASE64_STEP): 256 KB of base64 text each. */
const PIECE_BYTES = 16 * BASE64_STEP;
/** Marked files up to this size are answered in one buffer; larger ones are streamed. */
const WHOLE_ANSWER_BYTES = 1024 * 1024;

/**
 * The protect result (the schema's shape) as JSON bytes, assembled around the
 * base64 text rather than through JSON.stringify: base64 needs no escaping,
 * and bytes go to the socket without another pass to measure and encode a
 * string of up to 33 MB. The base64 is made in 16 KB strings: one string per
 * file would land in V8's large-object space (over 128 KB), which costs more
 * to allocate and collect than the encoding itself (5 MB: 1.7 ms in pieces
 * against 2.9 ms whole, measured on Node 20). A marked file over 1 MB is
 * answered as a stream of 256 KB pieces, each made as the socket takes the
 * last, so a call never holds its whole answer beside its upload and its
 * marked file (33 MB more for a 25 MB file: 8 such protect calls at once
 * took the server to 1.22 GB with whole answers, 1.08 to 1.13 GB streamed,
 * `npm run bench:rss`).
 */
function protectBody(result: ProtectResult): { readonly body: Buffer | Readable; readonly length: number } {
  const bytes = Buffer.from(result.bytes.buffer, result.bytes.byteOffset, result.bytes.byteLength);
  const head = Buffer.from('{"imageBase64":"', 'latin1');
  const tail = Buffer.from(`",${JSON.stringify({ mimeType: result.mimeType, filename: result.filename, sha256: result.sha256, signals: result.signals }).slice(1)}`, 'utf8');
  const length = head.length + base64Length(bytes.length) + tail.length;
  if (bytes.length <= WHOLE_ANSWER_BYTES) {
    const body = Buffer.allocUnsafe(length);
    head.copy(body, 0);
    tail.copy(body, writeBase64(bytes, body, head.length));
    return { body, length };
  }
  function* pieces(): Generator<Buffer> {
    yield head;
    for (let from = 0; from < bytes.length; from += PIECE_BYTES) {
      const slice = bytes.subarray(from, from + PIECE_BYTES);
      const piece = Buffer.allocUnsafe(base64Length(slice.length));
      writeBase64(slice, piece, 0);
      yield piece;
    }
    yield tail;
  }
  return { body: Readable.from(pieces(), { objectMode: false }), length };
}

const base64Length = (bytes: number) => Math.ceil(bytes / 3) * 4;

/** Writes the base64 text of `bytes` into `into` from `at`, BASE64_STEP bytes at a time; returns where it ends. */
function writeBase64(bytes: Buffer, into: Buffer, at: number): number {
  for (let from = 0; from < bytes.length; from += BASE64_STEP) at += into.write(bytes.subarray(from, from + BASE64_STEP).toString('base64'), at, 'latin1');
  return at;
}
