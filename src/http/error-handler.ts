/**
 * The one place that turns errors into HTTP: a status per error code, a JSON
 * body `{error, code, requestId}` for every failure (an HTML page with the
 * same three for the dashboard's pages, unless the client asks for JSON),
 * and the headers some statuses need. Anything that is not an OptmarkError
 * is a bug: logged in full, answered with a generic 500 that leaks nothing.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  MethodNotAllowedError,
  OptmarkError,
  QuotaExceededError,
  ScanLimitReachedError,
  ScansPausedError,
  RequestError,
  ServerBusyError,
  ServiceUnavailableError,
  TooManyAuthFailuresError,
  TooManyFailedCallsError,
  TooManyRequestsError,
  TooManySignInsError,
  TooManyInvitationsError,
  type ErrorCode,
} from '../errors.js';
import { secondsUntil } from '../core/quota/period.js';
import { usedUpWords } from '../core/quota/used-up.js';
import { formatFor, localeOf } from '../web/format.js';
import { errorPage } from '../web/pages/error.js';
import { PAGE_HEADERS } from './page-headers.js';
import { setRateLimitHeaders } from './rate-limit.js';
import { bodyAbandoned, bodyWanted, closeGently, LINGER, LINGER_TOLD, lingerOnUnwantedBody } from './upload.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route answers people with HTML pages (the dashboard's): its failures are pages too. */
    page?: boolean;
  }
}

export const STATUS: Readonly<Record<ErrorCode, number>> = {
  empty_image: 400,
  malformed_request: 400,
  missing_image_part: 400,
  multiple_parts: 400,
  invalid_option: 400,
  invalid_sha256: 400,
  missing_api_key: 401,
  invalid_api_key: 401,
  plan_not_allowed: 403,
  scope_not_allowed: 403,
  not_signed_in: 401,
  invalid_credentials: 401,
  cross_site_request: 403,
  role_not_allowed: 403,
  not_found: 404,
  account_not_found: 404,
  key_not_found: 404,
  user_not_found: 404,
  link_not_valid: 404,
  batch_not_found: 404,
  access_request_not_found: 404,
  record_not_found: 404,
  scan_not_found: 404,
  vault_file_not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  account_exists: 409,
  too_many_keys: 409,
  user_exists: 409,
  batch_full: 409,
  access_request_exists: 409,
  access_request_not_pending: 409,
  grant_not_available: 409,
  scan_not_cancellable: 409,
  scan_not_finished: 409,
  image_too_large: 413,
  body_too_large: 413,
  unsupported_content_type: 415,
  unsupported_image_format: 415,
  corrupt_image: 422,
  image_dimensions_too_large: 422,
  fingerprint_not_possible: 422,
  invalid_xmp: 422,
  ambiguous_xmp: 422,
  password_not_accepted: 422,
  idempotency_key_reused: 422,
  source_not_allowed: 422,
  conflicting_xmp: 422,
  quota_exceeded: 429,
  too_many_requests: 429,
  too_many_failed_calls: 429,
  scan_limit_reached: 429,
  header_too_large: 431,
  internal_error: 500,
  vault_file_unreadable: 500,
  repository_unavailable: 502,
  service_unavailable: 503,
  server_busy: 503,
  scans_paused: 503,
};

export interface ErrorBody {
  readonly error: string;
  readonly code: ErrorCode;
  readonly requestId: string;
}

/**
 * Errors fastify raises before our code runs, mapped to ours by their code.
 * Unlisted client errors become 400. (Upload bodies are read by our code,
 * upload.ts, which raises our errors for what the multipart parser finds.)
 */
function fromFramework(error: FastifyError, request: FastifyRequest): OptmarkError {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new RequestError('unsupported_content_type', bodyWanted(request));
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      // Only forms and the scans' JSON are parsed whole (uploads stream).
      return new RequestError('body_too_large', 'The body is larger than this request takes (16 KiB)');
    default:
      return new RequestError('malformed_request', `Malformed request: ${error.message}`);
  }
}

function errorBody(error: OptmarkError, requestId: string): ErrorBody {
  return { error: error.message, code: error.code, requestId };
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: OptmarkError, clock: () => Date): FastifyReply {
  const status = STATUS[error.code];
  if (error.code === 'missing_api_key' || error.code === 'invalid_api_key') reply.header('WWW-Authenticate', 'Bearer');
  if (error instanceof QuotaExceededError) {
    reply.header('Retry-After', String(secondsUntil(error.resetsAt, clock())));
    setRateLimitHeaders(reply, [{ operation: error.operation, limit: error.limit, remaining: 0 }], clock());
  }
  if (
    error instanceof ServiceUnavailableError ||
    error instanceof ServerBusyError ||
    error instanceof TooManyRequestsError ||
    error instanceof TooManyAuthFailuresError ||
    error instanceof TooManySignInsError ||
    error instanceof TooManyInvitationsError ||
    error instanceof TooManyFailedCallsError ||
    error instanceof ScanLimitReachedError ||
    error instanceof ScansPausedError
  ) {
    reply.header('Retry-After', String(error.retryAfterSeconds));
  }
  if (error instanceof MethodNotAllowedError) reply.header('Allow', error.allow);
  // An upload we refuse before reading all of it is not drained: close the
  // connection. A body refused before anything read it (a missing key, a
  // path or type not taken) is given a moment and a megabyte to end, then
  // its connection is closed: the client could send on for minutes.
  if (error.code === 'image_too_large' || error.code === 'request_timeout' || bodyAbandoned(request)) {
    reply.header('Connection', 'close');
    closeGently(request);
  } else lingerOnUnwantedBody(request, reply, error instanceof TooManyFailedCallsError || error instanceof TooManyAuthFailuresError ? LINGER_TOLD : LINGER);
  const body = errorBody(error, request.id);
  if (wantsPage(request)) {
    // Also for a page refused before the dashboard's hooks set them (a 413 from Content-Length, a 503 while stopping).
    reply.headers(PAGE_HEADERS);
    const message = error instanceof QuotaExceededError ? usedUpInWords(error, request) : body.error;
    return reply.code(status).type('text/html; charset=utf-8').send(errorPage({ status, message, code: body.code, requestId: body.requestId, signedIn: request.signedIn, fromForm: request.method === 'POST' }));
  }
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}

/** The month's limit as the dashboard's pages say it, in the reader's language's date: as the pages with JavaScript do. */
function usedUpInWords(error: QuotaExceededError, request: FastifyRequest): string {
  const words = usedUpWords(error.operation, formatFor(localeOf(request.headers['accept-language'])).date(error.resetsAt), error.limit);
  return `${words[0]!.toUpperCase()}${words.slice(1)}.`;
}

/**
 * A dashboard page's failure, for a browser (whose Accept names text/html,
 * or nothing about JSON), and a 404 for a browser that names text/html. A
 * form's refusal shown on its page again, with what was typed, asks this
 * too: a client asking for JSON gets the error.
 */
export function wantsPage(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? '';
  // A path that does not exist (or not for this method), asked for by a browser: a page that says so.
  if (!request.routeOptions?.config?.page) return request.is404 && accept.includes('text/html');
  return accept.includes('text/html') || !accept.includes('application/json');
}

export function installErrorHandling(app: FastifyInstance, options: { clock: () => Date }): void {
  app.setErrorHandler((raw: FastifyError, request, reply) => {
    let error: OptmarkError;
    if (raw instanceof OptmarkError) error = raw;
    else if (typeof raw.statusCode === 'number' && raw.statusCode >= 400 && raw.statusCode < 500) error = fromFramework(raw, request);
    else {
      request.log.error({ err: raw }, 'unhandled error');
      error = new InternalError();
    }
    // A refusal under trouble (the database away, the server full) comes by
    // the thousand: its code and message say it all. A stack trace with each
    // (1.5 KB a line) flooded the log faster than a reader took it, and the
    // process then waited for that backlog before it could stop.
    if (error.code !== 'internal_error' && STATUS[error.code] >= 500) request.log.warn({ code: error.code }, error.message);
    return sendError(request, reply, error, options.clock);
  });

  app.setNotFoundHandler((request, reply) =>
    sendError(request, reply, new RequestError('not_found', `There is no ${request.method} ${request.url.split('?')[0]}`), options.clock),
  );
}

class InternalError extends OptmarkError {
  readonly code = 'internal_error';
  constructor() {
    super('Internal error; it has been logged. Please try again or report the request id');
  }
}
