/**
 * The OpenAPI 3.1 document served at GET /api/v1/openapi.json, built from
 * the response schemas the routes declare (http/schemas.ts) and the one
 * error-to-status map (http/error-handler.ts): each operation lists every
 * status it answers, the error codes each status carries (an enum per
 * response) and every header the server sends with it. The people's pages
 * (sign-in, /app, the dashboard's JSON) are not part of the public API.
 *
 * test/http/openapi.test.ts lints it (Redocly, recommended rules) and checks
 * real answers of a running server against it, headers included.
 */
import type { ErrorCode } from '../errors.js';
import { STATUS } from './error-handler.js';
import { C2PA_HEADER, errorResult, healthResult, OPT_OUT_HEADER, protectResult, recordsResult, usageResult, verifyResult } from './schemas.js';

const { $id: _p, ...ProtectResult } = protectResult;
const { $id: _v, ...VerifyResult } = verifyResult;
const { $id: _u, ...Usage } = usageResult;
const { $id: _e, ...ErrorBody } = errorResult;
const { $id: _h, ...Health } = healthResult;
const { $id: _r, ...Records } = recordsResult;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

/**
 * The codes of each operation; each status's enum is taken from these through STATUS.
 * Any request may be refused for its address or its headers before its route is
 * reached: a path that is not valid URL encoding, a NUL in the path or query
 * (malformed_request), headers over 16 KiB (header_too_large).
 */
const ADDRESS_CODES = ['malformed_request', 'header_too_large'] as const;
const REQUEST_CODES = ['malformed_request', 'missing_image_part', 'multiple_parts', 'empty_image', 'request_timeout', 'image_too_large', 'unsupported_content_type', 'header_too_large'] as const;
const KEY_CODES = ['missing_api_key', 'invalid_api_key'] as const;
const IMAGE_CODES = ['unsupported_image_format', 'corrupt_image', 'image_dimensions_too_large', 'invalid_xmp'] as const;
const MOMENT_CODES = ['too_many_requests', 'too_many_failed_calls', 'service_unavailable', 'server_busy'] as const;
const PROTECT_CODES: readonly ErrorCode[] = [
  ...REQUEST_CODES, ...KEY_CODES, 'plan_not_allowed', 'scope_not_allowed', ...IMAGE_CODES, 'ambiguous_xmp', 'conflicting_xmp',
  'invalid_option', 'idempotency_key_reused', 'quota_exceeded', ...MOMENT_CODES,
];
const VERIFY_CODES: readonly ErrorCode[] = [
  ...REQUEST_CODES, ...KEY_CODES, 'plan_not_allowed', 'scope_not_allowed', ...IMAGE_CODES, 'invalid_option', 'idempotency_key_reused', 'quota_exceeded', ...MOMENT_CODES,
];
const USAGE_CODES: readonly ErrorCode[] = [...ADDRESS_CODES, ...KEY_CODES, 'plan_not_allowed', 'too_many_requests', 'service_unavailable'];
const RECORD_CODES: readonly ErrorCode[] = [...ADDRESS_CODES, ...KEY_CODES, 'plan_not_allowed', 'invalid_sha256', 'record_not_found', 'too_many_requests', 'service_unavailable'];
const OPEN_CODES: readonly ErrorCode[] = ADDRESS_CODES;
/** The JSON body of a scan call: what a malformed one answers. */
const JSON_BODY_CODES = ['malformed_request', 'invalid_option', 'unsupported_content_type', 'body_too_large', 'image_too_large'] as const;
const SCAN_READ_CODES: readonly ErrorCode[] = [...ADDRESS_CODES, ...KEY_CODES, 'plan_not_allowed', 'too_many_requests', 'service_unavailable'];
const SCAN_CREATE_CODES: readonly ErrorCode[] = [...ADDRESS_CODES, ...JSON_BODY_CODES, ...KEY_CODES, 'plan_not_allowed', 'scope_not_allowed', 'role_not_allowed', 'source_not_allowed', 'scan_limit_reached', 'too_many_requests', 'service_unavailable', 'scans_paused'];
const SCAN_ONE_CODES: readonly ErrorCode[] = [...SCAN_READ_CODES, 'scan_not_found'];
const SCAN_CANCEL_CODES: readonly ErrorCode[] = [...SCAN_ONE_CODES, 'unsupported_content_type', 'scope_not_allowed', 'scan_not_cancellable'];
const SCAN_FIX_CODES: readonly ErrorCode[] = [...JSON_BODY_CODES, ...SCAN_ONE_CODES, 'scope_not_allowed', 'scan_not_finished', 'quota_exceeded', 'repository_unavailable', 'server_busy'];

/** Readable words for each status, and what more its codes say (docs/errors.md has every code). */
const STATUS_WORDS: Record<number, string> = {
  400: 'The request is not what the operation takes',
  401: 'No valid API key',
  403: 'The key may not call this operation',
  404: 'Nothing of the account\'s was found',
  408: 'The request did not arrive in time; the connection is closed',
  413: 'The image, or a JSON body, is over its limit; the connection is closed',
  415: 'The body is not of the type the operation takes (multipart/form-data for an image, JSON for a scan), or the bytes are not JPEG, PNG or WebP',
  422: 'A JPEG, PNG or WebP whose container or XMP cannot be used, or an Idempotency-Key used for another image',
  429: 'The monthly limit is reached (quota_exceeded: Retry-After is the seconds to the next UTC month; do not retry before), or too many calls at once or invalid keys from this address (too_many_requests: retry after Retry-After), or the account\'s failed calls cost too much work this minute (too_many_failed_calls: retry after Retry-After)',
  409: 'The scan is not in a state that allows it',
  431: 'The request headers are over 16 KiB; the connection is closed',
  502: 'The repository could not be fetched (again) from its server',
  503: 'The database is unavailable, the server is stopping or at capacity: retry after Retry-After; or new repository scans are paused for everyone (scans_paused: temporary, service-wide; Retry-After says when to try again)',
};

/** An example message per code, as the server words it (the examples of each response). */
const EXAMPLE_MESSAGES: Partial<Record<ErrorCode, string>> = {
  malformed_request: 'Malformed request: the multipart body ended before its closing boundary',
  missing_image_part: 'The multipart body has no file part named "image"',
  invalid_option: 'Expected only the parameter detail (detail=full) for the query but received "verbose" of type string',
  missing_api_key: 'Send your API key as "Authorization: Bearer <key>"',
  invalid_api_key: 'The API key is not valid',
  plan_not_allowed: 'The free plan does not include API access; the API and the dashboard are available on the Pro and Lifetime plans',
  request_timeout: 'The upload stalled: less than 65536 bytes arrived in 20 seconds',
  image_too_large: 'The image is larger than the limit of 25 MB (26214400 bytes)',
  unsupported_image_format: 'The file is not a JPEG, PNG or WebP image (judged by its bytes, not its name or declared type)',
  corrupt_image: 'Corrupt JPEG: the file ends inside a segment',
  quota_exceeded: 'The monthly protect limit of 10000 calls is reached; it resets at 2026-12-01T00:00:00.000Z',
  too_many_requests: 'This API key already has 8 calls in progress; wait for one to finish',
  too_many_failed_calls: "This account's calls that failed or were given up after their upload took 30 s of processing within 60 seconds; its calls are refused for the next 42 seconds",
  header_too_large: 'The request headers are too large',
  service_unavailable: 'The database is unavailable; try again shortly',
  server_busy: 'The server is at capacity (calls); try again in a moment',
  internal_error: 'Internal error; it has been logged. Please try again or report the request id',
  not_found: 'There is no GET /api/v2/protect',
  invalid_sha256: 'A SHA-256 is 64 hexadecimal characters; this is not one: "9f2c6a1e"',
  record_not_found: 'There is no service record with this SHA-256 in your account',
  method_not_allowed: 'GET is not allowed here; use POST',
  source_not_allowed: 'This repository cannot be scanned here: only repositories under https://github.com/, https://gitlab.com/, https://codeberg.org/ are scanned by this service',
  scan_limit_reached: 'You have started 10 repository scans today, your daily limit; you can start more after midnight UTC',
  scans_paused: 'New repository scans are paused for everyone for the rest of the day (UTC): the service-wide daily ceiling is reached. This is temporary and not about your account; scans already running finish.',
  scan_not_found: 'There is no repository scan with this id in your account',
  scan_not_cancellable: 'This scan has ended (done): there is nothing left to cancel',
  scan_not_finished: 'This scan is running: its fix can be made once it has ended',
  repository_unavailable: 'The repository could not be fetched: the repository was not found',
};

const EXAMPLE_REQUEST_ID = '5af1d77c-1ca2-4e05-bee5-819a9cbb3b65';

function errorExample(code: ErrorCode) {
  return { error: EXAMPLE_MESSAGES[code] ?? `A readable message (${code})`, code, requestId: EXAMPLE_REQUEST_ID };
}

/** The error schema narrowed to some codes. */
function errorSchema(codes: readonly ErrorCode[]) {
  return { allOf: [ref('Error'), { type: 'object', properties: { code: { type: 'string', enum: [...codes] } } }] };
}

type Headers = Record<string, unknown>;

/** The headers every answer carries. */
const ALWAYS: Headers = { 'Request-Id': headerRef('Request-Id'), 'X-Content-Type-Options': headerRef('X-Content-Type-Options') };
/** Sent on an image call's answer once its key's unit is reserved (docs/api.md, "Monthly limits"). */
const ALLOWANCE: Headers = { RateLimit: headerRef('RateLimit'), 'RateLimit-Policy': headerRef('RateLimit-Policy') };
const ALLOWANCE_REQUIRED: Headers = { RateLimit: headerRef('RateLimitRequired'), 'RateLimit-Policy': headerRef('RateLimitPolicyRequired') };

/** Headers per status of the error answers. */
function errorHeaders(status: number, options: { allowance: boolean; replay: boolean }): Headers {
  const headers: Headers = { ...ALWAYS };
  if (options.allowance && ![401, 403, 431].includes(status)) Object.assign(headers, ALLOWANCE);
  if (options.replay && [400, 415, 422].includes(status)) headers['Idempotent-Replayed'] = headerRef('Idempotent-Replayed');
  if (status === 401) headers['WWW-Authenticate'] = headerRef('WWW-Authenticate');
  if (status === 429 || status === 503) headers['Retry-After'] = headerRef('Retry-After');
  if (status === 408 || status === 413 || status === 431) headers.Connection = headerRef('Connection');
  return headers;
}

/** One response per status the codes give, each with its enum, examples and headers; and `default`. */
function errorResponses(codes: readonly ErrorCode[], options: { allowance: boolean; replay: boolean }) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) {
    const status = STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<string, unknown> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(status)] = {
      description: `${STATUS_WORDS[status] ?? 'Refused'}: ${list.map((c) => `\`${c}\``).join(', ')}`,
      headers: errorHeaders(status, options),
      content: {
        'application/json': {
          schema: errorSchema(list),
          examples: Object.fromEntries(list.map((code) => [code, { value: errorExample(code) }])),
        },
      },
    };
  }
  responses.default = { $ref: '#/components/responses/Unexpected' };
  return responses;
}

const IMAGE_REQUEST = {
  required: true,
  description: 'One multipart part, `image`: the file. Its declared type and file name decide nothing (the bytes do); the name only names the marked copy.',
  content: {
    'multipart/form-data': {
      schema: {
        type: 'object',
        required: ['image'],
        additionalProperties: false,
        properties: {
          image: {
            type: 'string',
            format: 'binary',
            contentMediaType: 'application/octet-stream',
            description: 'JPEG, PNG or WebP, judged by its bytes',
          },
        },
      },
      encoding: { image: { contentType: 'image/jpeg, image/png, image/webp, application/octet-stream' } },
      examples: { photo: { summary: 'A JPEG photograph', value: { image: '(the bytes of photo.jpg)' } } },
    },
  },
};

const IDEMPOTENCY_PARAMETER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
  example: 'optmark-protect-3f0c8a9d2b7e4c1f0a6d5e8b9c2f1a0e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a',
  description:
    "Makes a retry safe. Within 24 hours, a call with the same key, the same image bytes and the same options as an earlier call of the account gets that call's answer again (a 200 computed again from the image sent, the same bytes for protect; a refusal as it was), with `Idempotent-Replayed: true`, and counts nothing; one sent while the first runs waits for it (503 server_busy with Retry-After if the first still runs after the request timeout); a first call whose client went away before its answer leaves the key free. The same key with another image or options is 422 idempotency_key_reused. A malformed key is 400 invalid_option.",
};

const DETAIL_PARAMETER = {
  name: 'detail',
  in: 'query',
  required: false,
  schema: { type: 'string', enum: ['full'] },
  example: 'full',
  description:
    "`full` adds `details` to the answer: every signal found in every vocabulary (also when the file has no plus:DataMining, when `signals` is []), each plus:DataMining value, TDMRep, the C2PA summary and warnings. Without it the answer is exactly the specification's. Any other parameter or value is invalid_option (400).",
};

const EXAMPLE_SHA256 = '9f2c6a1e4b7d0c3f8a5e2d9b6c1f4a7e0d3b8c5f2a9e6d1c4b7f0a3e8d5c2b9f';

const PROTECT_EXAMPLE = {
  imageBase64: '/9j/4AAQSkZJRgABAgEASABIAAD/4QNSRXhpZgAA',
  mimeType: 'image/jpeg',
  filename: 'photo-optout.jpg',
  sha256: EXAMPLE_SHA256,
  signals: ['iptc.dataMining'],
};

const VERIFY_EXAMPLE = {
  optedOut: true,
  signals: ['iptc.dataMining'],
  provenance: { present: true, valid: true, verifiable: true },
  fingerprint: { present: false, confidence: 0.5078125, blocks: 128 },
  sha256: EXAMPLE_SHA256,
};

const VERIFY_FULL_EXAMPLE = {
  optedOut: false,
  signals: [],
  provenance: { present: false, valid: false, verifiable: false },
  fingerprint: { present: false, confidence: 0, blocks: 0 },
  sha256: EXAMPLE_SHA256,
  details: {
    format: 'jpeg',
    mimeType: 'image/jpeg',
    signals: ['tdmrep.reservation'],
    dataMining: [],
    otherConstraints: null,
    tdmrep: { reservation: '1', policy: 'https://example.com/tdm-policy.json' },
    c2pa: { present: false, readable: false, trainingMining: [] },
    warnings: [],
  },
};

const USAGE_EXAMPLE = {
  protect: { used: 1, limit: 10000, remaining: 9999 },
  verify: { used: 1, limit: 50000, remaining: 49999 },
  resetsAt: '2026-12-01T00:00:00.000Z',
};

const RECORDS_EXAMPLE = {
  records: [
    {
      recordId: 'rec_4fQ2mV8kZx1LrT7bN3pW',
      createdAt: '2026-11-22T10:00:00.000Z',
      fileName: 'harbour.jpg',
      sha256Original: '2b7e4c1f0a6d5e8b9c2f1a0e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c',
      sha256Marked: EXAMPLE_SHA256,
      value: 'DMI-PROHIBITED-AIMLTRAINING',
      layers: [{ name: 'fingerprint', state: 'added', keyVersion: 1 }],
      kid: 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k',
      user: 'ada@studio.example',
      batchId: 'bat_Wn1cQ0a9Zr2x7Kd5Lm3p',
      jws: {
        public: 'eyJhbGciOiJFZERTQSIsImtpZCI6ImtQcksiLCJ0eXAiOiJKV1QifQ.eyJyZWNvcmRJZCI6InJlY180ZlEybVY4a1p4MUxyVDdiTjNwVyJ9.c2lnbmF0dXJl',
        private: 'eyJhbGciOiJFZERTQSIsImtpZCI6ImtQcksiLCJ0eXAiOiJKV1QifQ.eyJyZWNvcmRJZCI6InJlY180ZlEybVY4a1p4MUxyVDdiTjNwVyJ9.c2lnbmF0dXJl',
      },
    },
  ],
};

const SCAN_ID_PARAMETER = {
  name: 'id',
  in: 'path',
  required: true,
  schema: { type: 'string', maxLength: 100 },
  example: 'scn_0f3a9c2b7e4d1a6c5b8e9f0a1d2c3b4e',
  description: "The scan's id, as POST /api/v1/scans answered it. Another account's scan is 404 scan_not_found, as an unknown id is.",
};

const SUMMARY = {
  type: 'object',
  required: ['images', 'optedOut', 'notOptedOut', 'failed', 'skipped'],
  additionalProperties: false,
  description: 'images = optedOut + notOptedOut + failed + skipped. A candidate image is a file (outside .git) named .jpg/.jpeg/.png/.webp or whose bytes begin as one; skipped: over 25 MB, a Git LFS pointer, a symbolic link (never followed), over the pixel limit. Only optedOut and notOptedOut drew on the monthly verify limit.',
  properties: Object.fromEntries(['images', 'optedOut', 'notOptedOut', 'failed', 'skipped'].map((n) => [n, { type: 'integer', minimum: 0 }])),
};

const SCAN_STATES_SCHEMA = { type: 'string', enum: ['queued', 'running', 'done', 'failed', 'cancelled'] };
const SCAN_LINKS = { type: 'object', required: ['self', 'report'], additionalProperties: false, properties: { self: { type: 'string' }, report: { type: 'string' } } };
const NULLABLE_TIME = { type: ['string', 'null'], format: 'date-time' };

const SCAN = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'status', 'repository', 'ref', 'commit', 'withToken', 'createdAt', 'startedAt', 'finishedAt', 'expiresAt', 'reason', 'progress', 'fetchMs', 'summary', 'otherFiles', 'links'],
  properties: {
    id: { type: 'string' },
    status: SCAN_STATES_SCHEMA,
    repository: { type: 'string', description: 'The URL as given (never with credentials)' },
    ref: { type: ['string', 'null'], description: 'The branch or tag asked for; null: the default branch' },
    commit: { type: ['string', 'null'], description: 'The commit scanned, once fetched' },
    withToken: { type: 'boolean', description: 'Submitted with a read token (never stored: held in the accepting server\'s memory for this scan only)' },
    createdAt: { type: 'string', format: 'date-time' },
    startedAt: NULLABLE_TIME,
    finishedAt: NULLABLE_TIME,
    expiresAt: { type: 'string', format: 'date-time', description: 'The report is removed after this (the plan\'s report retention: 90 days by default on Pro and Lifetime)' },
    reason: { type: ['string', 'null'], description: 'Why it failed or was cancelled, in words' },
    progress: {
      type: 'object',
      required: ['files', 'processed', 'imagesChecked'],
      additionalProperties: false,
      properties: { files: { type: ['integer', 'null'], description: 'Files in the tree (null until fetched)' }, processed: { type: 'integer' }, imagesChecked: { type: 'integer', description: 'Candidate images reported so far' } },
    },
    fetchMs: { type: ['integer', 'null'], description: 'Milliseconds the fetch took' },
    summary: { oneOf: [{ $ref: '#/components/schemas/ScanSummary' }, { type: 'null' }], description: 'Once the scan has ended (done, failed or cancelled); null before' },
    otherFiles: { type: 'integer', description: 'Files that are not candidate images (counted only)' },
    links: SCAN_LINKS,
  },
};

const SCAN_ITEM = {
  type: 'object',
  additionalProperties: false,
  required: ['path', 'status', 'reason', 'code', 'bytes', 'sha256', 'format', 'signals', 'value', 'provenance', 'fingerprint'],
  properties: {
    path: { type: 'string' },
    status: { type: 'string', enum: ['optedOut', 'notOptedOut', 'failed', 'skipped'] },
    reason: { type: ['string', 'null'] },
    code: { type: ['string', 'null'], description: 'failed: the error code (corrupt_image, ...); skipped: symlink, lfs_pointer, too_large, too_deep, too_many_pixels' },
    bytes: { type: 'integer' },
    sha256: { type: ['string', 'null'], pattern: '^[0-9a-f]{64}$' },
    format: { type: ['string', 'null'], enum: ['jpeg', 'png', 'webp', null] },
    signals: { type: 'array', items: { type: 'string' }, description: 'Every opt-out signal found, in every vocabulary' },
    value: { type: ['string', 'null'], description: 'The plus:DataMining value, as stored' },
    provenance: { oneOf: [{ type: 'null' }, { type: 'object', required: ['present', 'valid', 'verifiable'], properties: { present: { type: 'boolean' }, valid: { type: 'boolean' }, verifiable: { type: 'boolean' } } }] },
    fingerprint: { oneOf: [{ type: 'null' }, { type: 'object', required: ['present', 'confidence'], properties: { present: { type: 'boolean' }, confidence: { type: 'number' } } }] },
  },
};

const SCAN_EXAMPLE = {
  id: 'scn_0f3a9c2b7e4d1a6c5b8e9f0a1d2c3b4e',
  status: 'done',
  repository: 'https://github.com/example/site',
  ref: null,
  commit: '3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e',
  withToken: false,
  createdAt: '2026-11-26T10:00:00.000Z',
  startedAt: '2026-11-26T10:00:00.120Z',
  finishedAt: '2026-11-26T10:00:04.500Z',
  expiresAt: '2026-12-26T10:00:00.000Z',
  reason: null,
  progress: { files: 412, processed: 412, imagesChecked: 7 },
  fetchMs: 840,
  summary: { images: 7, optedOut: 4, notOptedOut: 2, failed: 0, skipped: 1 },
  otherFiles: 405,
  links: { self: '/api/v1/scans/scn_0f3a9c2b7e4d1a6c5b8e9f0a1d2c3b4e', report: '/api/v1/scans/scn_0f3a9c2b7e4d1a6c5b8e9f0a1d2c3b4e/report' },
};

const SCAN_ITEM_EXAMPLE = {
  path: 'static/img/hero.jpg',
  status: 'notOptedOut',
  reason: null,
  code: null,
  bytes: 104233,
  sha256: EXAMPLE_SHA256,
  format: 'jpeg',
  signals: [],
  value: null,
  provenance: { present: false, valid: false, verifiable: false },
  fingerprint: { present: false, confidence: 0 },
};

function jsonBody(schema: unknown, examples: Record<string, unknown>, description: string) {
  return { required: true, description, content: { 'application/json': { schema, examples: Object.fromEntries(Object.entries(examples).map(([k, v]) => [k, { value: v }])) } } };
}

function scanOperation(
  operationId: string,
  summary: string,
  description: string,
  ok: { status: number; description: string; schema: unknown; example: unknown; headers?: Headers; extra?: Record<string, unknown> },
  codes: readonly ErrorCode[],
  more: Record<string, unknown> = {},
  /** Answers that may carry RateLimit (the fix's quota_exceeded). */
  allowance = false,
) {
  return {
    operationId,
    tags: ['Scans'],
    summary,
    description,
    ...more,
    responses: {
      [ok.status]: {
        description: ok.description,
        headers: { ...ALWAYS, ...ok.headers },
        content: { 'application/json': { schema: ok.schema, examples: { ok: { value: ok.example } } }, ...ok.extra },
      },
      ...errorResponses(codes, { allowance, replay: false }),
    },
  };
}

const SHA256_PARAMETER = {
  name: 'sha256',
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: '^[0-9A-Fa-f]{64}$' },
  example: EXAMPLE_SHA256,
  description: 'The SHA-256 of the original or of the marked file, 64 hexadecimal characters (any case). Anything else is 400 invalid_sha256.',
};

const JWKS_EXAMPLE = {
  keys: [{ kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo', kid: 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k', alg: 'EdDSA', use: 'sig' }],
};

/** RFC 7517 / RFC 8037: the public half of an Ed25519 key. */
const JWK = {
  type: 'object',
  required: ['kty', 'crv', 'x', 'kid', 'alg', 'use'],
  additionalProperties: false,
  description: 'An Ed25519 public key (RFC 8037); `kid` is its RFC 7638 thumbprint, as named in the provenance tags it checks',
  properties: {
    kty: { type: 'string', const: 'OKP' },
    crv: { type: 'string', const: 'Ed25519' },
    x: { type: 'string', pattern: '^[A-Za-z0-9_-]{43}$', description: 'The public key, base64url (32 bytes)' },
    kid: { type: 'string', pattern: '^[A-Za-z0-9_-]{43}$' },
    alg: { type: 'string', const: 'EdDSA' },
    use: { type: 'string', const: 'sig' },
  },
};

const JWKS = {
  type: 'object',
  required: ['keys'],
  additionalProperties: false,
  properties: { keys: { type: 'array', items: ref('Jwk'), description: 'The active key and every retired one' } },
};

function imageOperation(operation: 'protect' | 'verify', limitWords: string) {
  const protect = operation === 'protect';
  const ok200 = protect
    ? {
        description: 'The marked image. Save it under `filename` (its extension is that of the bytes produced), never under the input\'s name.',
        headers: {
          ...ALWAYS,
          ...ALLOWANCE,
          [OPT_OUT_HEADER]: headerRef(OPT_OUT_HEADER),
          [C2PA_HEADER]: headerRef(C2PA_HEADER),
          'Idempotent-Replayed': headerRef('Idempotent-Replayed'),
        },
        content: { 'application/json': { schema: ref('ProtectResult'), examples: { marked: { value: PROTECT_EXAMPLE } } } },
      }
    : {
        description: 'What the image carries',
        headers: { ...ALWAYS, ...ALLOWANCE, 'Idempotent-Replayed': headerRef('Idempotent-Replayed') },
        content: {
          'application/json': {
            schema: ref('VerifyResult'),
            examples: { optedOut: { summary: 'A marked file', value: VERIFY_EXAMPLE }, detailFull: { summary: 'With ?detail=full, a file with a TDMRep reservation only', value: VERIFY_FULL_EXAMPLE } },
          },
        },
      };
  return {
    operationId: operation,
    tags: ['Images'],
    summary: protect ? 'Write the opt-out into the image metadata, losslessly' : 'Check an image for the opt-out and other signals',
    description: protect
      ? `Writes plus:DataMining (keeping a DMI-PROHIBITED* value the file already carries, else DMI-PROHIBITED-AIMLTRAINING) and this deployment's signed provenance tag into the XMP; no other byte changes. ${limitWords} Counts toward the monthly protect limit; a call that does not return 200 counts nothing.`
      : `Reads the opt-out, the other signals, the provenance tag and the experimental in-pixel fingerprint. ${limitWords} Counts toward the monthly verify limit; a call that does not return 200 counts nothing.`,
    parameters: protect ? [IDEMPOTENCY_PARAMETER] : [DETAIL_PARAMETER, IDEMPOTENCY_PARAMETER],
    requestBody: IMAGE_REQUEST,
    responses: { 200: ok200, ...errorResponses(protect ? PROTECT_CODES : VERIFY_CODES, { allowance: true, replay: true }) },
  };
}

function openOperation(operationId: string, tag: string, summary: string, ok: { description: string; schema: unknown; example: unknown; headers?: Headers }, codes: readonly ErrorCode[] = OPEN_CODES) {
  return {
    operationId,
    tags: [tag],
    summary,
    security: [],
    responses: {
      200: { description: ok.description, headers: { ...ALWAYS, ...ok.headers }, content: { 'application/json': { schema: ok.schema, examples: { ok: { value: ok.example } } } } },
      ...errorResponses(codes, { allowance: false, replay: false }),
    },
  };
}

const stringHeader = (description: string, example: string, extra: Record<string, unknown> = {}) => ({ description, schema: { type: 'string', ...extra }, example });

export interface OpenApiOptions {
  readonly maxUploadBytes: number;
  readonly version: string;
  /** The deployment's address (OPTMARK_BASE_URL, else http://HOST:PORT): the document's server. */
  readonly baseUrl: string;
}

export function openApiDocument(options: OpenApiOptions) {
  const limitWords = `The body is multipart/form-data with one part, \`image\` (at most ${options.maxUploadBytes} bytes).`;
  return {
    openapi: '3.1.0',
    info: {
      title: 'optmark API',
      version: options.version,
      summary: 'Mark images with the IPTC/PLUS Data Mining AI-training opt-out, losslessly, and verify it',
      description:
        'Every failure is a non-2xx JSON answer `{error, code, requestId}`; each response below lists its codes (docs/errors.md has them all). ' +
        'Every answer carries `Request-Id`. Any path not listed answers 404 `not_found`; a listed path called with another method answers 405 `method_not_allowed` with `Allow` ' +
        '(both in `components.responses`). Clients retry only `server_busy`, `service_unavailable`, `too_many_requests` and network errors, when `Retry-After` is at most 60 seconds, ' +
        'at most 5 tries, always with the same `Idempotency-Key`; every other code is final (`quota_exceeded` says when the month ends).',
      license: { name: 'UNLICENSED: proprietary, all rights reserved', identifier: 'LicenseRef-optmark-proprietary' },
      contact: { name: 'The operators of this optmark deployment', url: options.baseUrl },
    },
    servers: [{ url: options.baseUrl, description: 'This deployment' }],
    tags: [
      { name: 'Images', description: 'Mark and verify images' },
      { name: 'Account', description: "The account's monthly usage" },
      { name: 'Records', description: "The dated service records of the dashboard's markings (docs/records.md)" },
      { name: 'Scans', description: 'Repository scans: every image of a git repository checked, and the ones without the opt-out fixed (docs/scans.md)' },
      { name: 'Keys', description: "The public keys that check this deployment's provenance tags" },
      { name: 'Health', description: 'Liveness and readiness, for load balancers and orchestrators' },
      { name: 'Meta', description: 'This document' },
    ],
    security: [{ bearer: [] }],
    paths: {
      '/api/v1/protect': { post: imageOperation('protect', limitWords) },
      '/api/v1/verify': { post: imageOperation('verify', limitWords) },
      '/api/v1/usage': {
        get: {
          operationId: 'usage',
          tags: ['Account'],
          summary: "This month's usage of the account behind the key (free of charge)",
          responses: {
            200: {
              description: 'Used, limit and remaining per operation',
              headers: { ...ALWAYS, ...ALLOWANCE_REQUIRED },
              content: { 'application/json': { schema: ref('Usage'), examples: { usage: { value: USAGE_EXAMPLE } } } },
            },
            ...errorResponses(USAGE_CODES, { allowance: false, replay: false }),
          },
        },
      },
      '/api/v1/records/{sha256}': {
        get: {
          operationId: 'records',
          tags: ['Records'],
          summary: 'The dated service records of files marked by the account on the dashboard, by the SHA-256 of the original or of the marked file (free of charge)',
          description:
            "Every record of the key's account whose original or marked file has this SHA-256, with both signed JWS (check them with /.well-known/jwks.json). Any scope; counts toward no monthly limit. The API's protect makes no record: records come from the dashboard's marking. Another account's record is 404 record_not_found, as an unknown hash is.",
          parameters: [SHA256_PARAMETER],
          responses: {
            200: {
              description: 'The records, oldest first',
              headers: ALWAYS,
              content: { 'application/json': { schema: ref('Records'), examples: { found: { value: RECORDS_EXAMPLE } } } },
            },
            ...errorResponses(RECORD_CODES, { allowance: false, replay: false }),
          },
        },
      },
      '/api/v1/scans': {
        post: scanOperation(
          'createScan',
          'Scan a git repository: every JPEG, PNG and WebP image checked for the opt-out (docs/scans.md)',
          'Accepted scans run from a queue; poll `links.self`. The URL must be under one of the deployment\'s allowed sources (by default https://github.com/, https://gitlab.com/, https://codeberg.org/). A read token, for a private repository, is used for this scan\'s fetch only: never stored, logged or echoed (such a scan runs on the server that accepted it; if that server stops first it ends failed and does not count). Needs the verify scope. Each image checked (opted out or not) draws one unit of the monthly verify limit; when it runs out the scan ends failed, keeping what it checked. Limits: scans per person per UTC day (10 by default: 429 scan_limit_reached, Retry-After until midnight UTC) and a service-wide daily ceiling (503 scans_paused for everyone, temporary, with Retry-After); a scan counts when it is accepted.',
          {
            status: 202,
            description: 'Accepted; `Location` is the scan',
            schema: { type: 'object', required: ['id', 'status', 'links'], additionalProperties: false, properties: { id: { type: 'string' }, status: SCAN_STATES_SCHEMA, links: SCAN_LINKS } },
            example: { id: SCAN_EXAMPLE.id, status: 'queued', links: SCAN_EXAMPLE.links },
            headers: { Location: headerRef('Location') },
          },
          SCAN_CREATE_CODES,
          {
            requestBody: jsonBody(
              {
                type: 'object',
                required: ['repository'],
                additionalProperties: false,
                properties: {
                  repository: { type: 'string', maxLength: 2048, description: 'The clone URL (https://, or another scheme the deployment lists); no credentials in it' },
                  ref: { type: ['string', 'null'], maxLength: 255, description: 'A branch or tag; default the repository\'s default branch' },
                  token: { type: ['string', 'null'], maxLength: 1024, writeOnly: true, description: 'A read token for a private repository (sent to its server as HTTP Basic authentication); never stored' },
                },
              },
              { public: { repository: 'https://github.com/example/site' }, branch: { repository: 'https://gitlab.com/example/docs', ref: 'main' } },
              'The repository, and optionally a branch or tag and a read token',
            ),
          },
        ),
        get: scanOperation('listScans', "The account's recent scans (the 50 newest)", 'Any scope.', { status: 200, description: 'The scans, newest first', schema: { type: 'object', required: ['scans'], additionalProperties: false, properties: { scans: { type: 'array', items: ref('Scan') } } }, example: { scans: [SCAN_EXAMPLE] } }, SCAN_READ_CODES),
      },
      '/api/v1/scans/{id}': {
        get: scanOperation('getScan', 'A scan: its status, progress and, once ended, its summary', 'Any scope.', { status: 200, description: 'The scan', schema: ref('Scan'), example: SCAN_EXAMPLE }, SCAN_ONE_CODES, { parameters: [SCAN_ID_PARAMETER] }),
        delete: scanOperation(
          'cancelScan',
          'Cancel a queued or running scan',
          'Needs the verify scope. What it checked stays in its report; it still counts toward the day\'s scans. A scan that has ended is 409 scan_not_cancellable.',
          { status: 200, description: 'The scan, cancelled', schema: ref('Scan'), example: { ...SCAN_EXAMPLE, status: 'cancelled', reason: 'cancelled by a person of the account', summary: { images: 3, optedOut: 2, notOptedOut: 1, failed: 0, skipped: 0 } } },
          SCAN_CANCEL_CODES,
          { parameters: [SCAN_ID_PARAMETER] },
        ),
      },
      '/api/v1/scans/{id}/report': {
        get: scanOperation(
          'scanReport',
          "A scan's report: coverage and every image, as JSON or (Accept: text/csv) CSV",
          'Any scope. Kept for the plan\'s report retention (90 days by default on Pro and Lifetime). CSV columns: ' + 'path, status, reason, code, bytes, sha256, format, value, signals, provenancePresent, provenanceValid, fingerprintPresent.',
          {
            status: 200,
            description: 'The report',
            schema: ref('ScanReport'),
            example: { scan: SCAN_EXAMPLE, coverage: { optedOut: 4, images: 7, ratio: 4 / 7 }, items: [SCAN_ITEM_EXAMPLE] },
            extra: { 'text/csv': { schema: { type: 'string' }, examples: { csv: { value: 'path,status,reason,code,bytes,sha256,format,value,signals,provenancePresent,provenanceValid,fingerprintPresent\r\n"static/img/hero.jpg","notOptedOut","","",104233,"' + EXAMPLE_SHA256 + '","jpeg","","",false,false,false\r\n' } } } },
          },
          SCAN_ONE_CODES,
          { parameters: [SCAN_ID_PARAMETER] },
        ),
      },
      '/api/v1/scans/{id}/fix': {
        post: scanOperation(
          'fixScan',
          "Mark the images a scan found without the opt-out: a zip keeping their paths, or one commit pushed on a new branch",
          'Needs the protect scope: each file marked is one protect unit (the same marking as POST /api/v1/protect); all are reserved first, so a fix that cannot be paid in full does not start (429 quota_exceeded). `confirm` must be the number of images the fix marks (the report\'s notOptedOut), as a confirmation. The repository is fetched again at the scanned commit (a private one needs its token again: it was never kept) and a file is marked only if its bytes are still those checked. Without `push`: 200 application/zip, the marked files at their repository paths (plus FIX-REPORT.txt naming any not marked). With `push: true` and a token that may write: one commit "Add the IPTC Data Mining opt-out to N images" on a new branch optmark/opt-out-DATE-ID on top of the scanned commit, answered as JSON.',
          {
            status: 200,
            description: 'With push: the branch pushed. Without: the zip.',
            schema: {
              type: 'object',
              required: ['branch', 'commit', 'marked', 'failed'],
              additionalProperties: false,
              properties: {
                branch: { type: ['string', 'null'] },
                commit: { type: ['string', 'null'] },
                marked: { type: 'array', items: { type: 'object', required: ['path', 'sha256'], properties: { path: { type: 'string' }, sha256: { type: 'string' } } } },
                failed: { type: 'array', items: { type: 'object', required: ['path', 'reason'], properties: { path: { type: 'string' }, reason: { type: 'string' } } } },
              },
            },
            example: { branch: 'optmark/opt-out-20261126-0f3a9c2b', commit: '8c7b6a5f4e3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d', marked: [{ path: 'static/img/hero.jpg', sha256: EXAMPLE_SHA256 }], failed: [] },
            headers: { 'Content-Disposition': headerRef('Content-Disposition'), 'X-Optmark-Fix-Failed': headerRef('X-Optmark-Fix-Failed') },
            extra: { 'application/zip': { schema: { type: 'string', format: 'binary', contentMediaType: 'application/zip' }, examples: { zip: { value: '(a zip of the marked files)' } } } },
          },
          SCAN_FIX_CODES,
          {
            parameters: [SCAN_ID_PARAMETER],
            requestBody: jsonBody(
              {
                type: 'object',
                required: ['confirm'],
                additionalProperties: false,
                properties: {
                  confirm: { type: 'integer', minimum: 1, description: 'The number of images the fix marks (each one protect unit)' },
                  push: { type: 'boolean', description: 'Push a branch instead of answering a zip (needs a token that may write)' },
                  token: { type: ['string', 'null'], maxLength: 1024, writeOnly: true, description: 'For the fetch of a private repository, and for the push' },
                },
              },
              { zip: { confirm: 2 }, push: { confirm: 2, push: true, token: 'github_pat_…' } },
              'The confirmation, and how to deliver',
            ),
          },
          true,
        ),
      },
      '/.well-known/jwks.json': {
        get: openOperation('jwks', 'Keys', "The public Ed25519 keys (RFC 7517 JWK Set) that check this deployment's provenance tags, current and retired", {
          description: 'A JWK Set',
          schema: ref('Jwks'),
          example: JWKS_EXAMPLE,
          headers: { 'Cache-Control': headerRef('Cache-Control') },
        }),
      },
      '/healthz': {
        get: openOperation('healthz', 'Health', 'Liveness: the process answers', { description: 'The process runs', schema: ref('Health'), example: { status: 'ok' } }),
      },
      '/readyz': {
        get: openOperation(
          'readyz',
          'Health',
          'Readiness: the database answers too, within 2 seconds',
          { description: 'Ready to serve', schema: ref('Health'), example: { status: 'ok' } },
          [...ADDRESS_CODES, 'service_unavailable'],
        ),
      },
      '/api/v1/openapi.json': {
        get: openOperation('openapi', 'Meta', 'This document (OpenAPI 3.1)', {
          description: 'The OpenAPI document',
          schema: { type: 'object', required: ['openapi', 'info', 'paths'], properties: { openapi: { type: 'string' }, info: { type: 'object' }, paths: { type: 'object' } } },
          example: { openapi: '3.1.0', info: { title: 'optmark API', version: options.version }, paths: {} },
        }),
      },
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key, `omk_` and 38 letters and digits' } },
      schemas: {
        ProtectResult,
        VerifyResult,
        Usage,
        Records,
        Scan: SCAN,
        ScanSummary: SUMMARY,
        ScanItem: SCAN_ITEM,
        ScanReport: {
          type: 'object',
          required: ['scan', 'coverage', 'items'],
          additionalProperties: false,
          properties: {
            scan: ref('Scan'),
            coverage: { type: 'object', required: ['optedOut', 'images', 'ratio'], additionalProperties: false, properties: { optedOut: { type: 'integer' }, images: { type: 'integer' }, ratio: { type: 'number', minimum: 0, maximum: 1, description: 'optedOut / images (1 when there are no images)' } } },
            items: { type: 'array', items: ref('ScanItem') },
          },
        },
        Error: ErrorBody,
        Health,
        Jwk: JWK,
        Jwks: JWKS,
      },
      headers: {
        'Request-Id': stringHeader('Identifier of this request, also in error bodies and the server log; a `Request-Id` sent by the client (1 to 128 of `A-Za-z0-9._:-`) is used instead', EXAMPLE_REQUEST_ID, { minLength: 1, maxLength: 128 }),
        'X-Content-Type-Options': stringHeader('Browsers must not guess a type', 'nosniff', { enum: ['nosniff'] }),
        RateLimit: stringHeader('Remaining allowance (r) and seconds until it resets (t), per operation (draft-ietf-httpapi-ratelimit-headers-11); sent once the key\'s unit is reserved (not on a replayed answer, which counts nothing)', '"protect";r=9999;t=761312'),
        'RateLimit-Policy': stringHeader('Monthly quota (q) and the length of this month in seconds (w), per operation (draft-ietf-httpapi-ratelimit-headers-11)', '"protect";q=10000;w=2592000'),
        RateLimitRequired: { ...stringHeader('Remaining allowance (r) and seconds until it resets (t), per operation (draft-ietf-httpapi-ratelimit-headers-11)', '"protect";r=9999;t=761312'), required: true },
        RateLimitPolicyRequired: { ...stringHeader('Monthly quota (q) and the length of this month in seconds (w), per operation (draft-ietf-httpapi-ratelimit-headers-11)', '"protect";q=10000;w=2592000'), required: true },
        'Retry-After': { description: 'Seconds to wait before trying again (quota_exceeded: until the next UTC month)', required: true, schema: { type: 'string', pattern: '^[0-9]+$' }, example: '1' },
        'WWW-Authenticate': { ...stringHeader('The authentication scheme to use', 'Bearer', { enum: ['Bearer'] }), required: true },
        Allow: { ...stringHeader('The methods the path takes', 'POST'), required: true },
        Connection: stringHeader('The server closes the connection after this answer (the rest of the upload is not read)', 'close', { enum: ['close'] }),
        'Idempotent-Replayed': stringHeader('`true` when the answer repeats an earlier call with the same Idempotency-Key (nothing was counted)', 'true', { enum: ['true'] }),
        [OPT_OUT_HEADER]: {
          ...stringHeader(
            '`kept CODE` when the upload already carried that DMI-PROHIBITED* value (protect keeps an opt-out the file carries); `written CODE` otherwise, CODE being then DMI-PROHIBITED-AIMLTRAINING.',
            'written DMI-PROHIBITED-AIMLTRAINING',
            { pattern: '^(kept|written) DMI-PROHIBITED[A-Z-]*$' },
          ),
          required: true,
        },
        [C2PA_HEADER]: stringHeader(
          "`invalidated` when the upload carried a C2PA manifest: writing the XMP changes bytes its hard binding covers, so the marked copy's manifest no longer validates (docs/provenance.md). Absent otherwise.",
          'invalidated',
          { enum: ['invalidated'] },
        ),
        'Cache-Control': stringHeader('How long the key set may be cached', 'public, max-age=300'),
        Location: { ...stringHeader('The new scan', '/api/v1/scans/scn_0f3a9c2b7e4d1a6c5b8e9f0a1d2c3b4e'), required: true },
        'Content-Disposition': stringHeader('The zip\'s file name (the zip answer only)', 'attachment; filename="scn_0f3a9c2b7e4d1a6c5b8e9f0a1d2c3b4e-fix.zip"'),
        'X-Optmark-Fix-Failed': stringHeader('How many images could not be marked (named in the zip\'s FIX-REPORT.txt; the zip answer only)', '0', { pattern: '^[0-9]+$' }),
      },
      responses: {
        Unexpected: {
          description: 'Any other failure, in the same shape: 500 `internal_error` (a bug; the log has it under the request id), 503 `service_unavailable` while the server stops, 400/408 from the HTTP parser',
          headers: { 'Request-Id': headerRef('Request-Id'), 'X-Content-Type-Options': headerRef('X-Content-Type-Options') },
          content: { 'application/json': { schema: ref('Error'), examples: { internal: { value: errorExample('internal_error') } } } },
        },
        NotFound: {
          description: 'Any path not in this document: 404 `not_found`',
          headers: ALWAYS,
          content: { 'application/json': { schema: errorSchema(['not_found']), examples: { notFound: { value: errorExample('not_found') } } } },
        },
        MethodNotAllowed: {
          description: 'A path of this document with another method: 405 `method_not_allowed`; `Allow` names the methods it takes',
          headers: { ...ALWAYS, Allow: headerRef('Allow') },
          content: { 'application/json': { schema: errorSchema(['method_not_allowed']), examples: { methodNotAllowed: { value: errorExample('method_not_allowed') } } } },
        },
      },
    },
  };
}
