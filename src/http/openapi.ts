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
import { MAX_OTHER_CONSTRAINTS_CHARACTERS, SEE_CONSTRAINT } from '../core/xmp/other-constraints.js';
import { DEFAULT_CODE, PROHIBITED_CODES } from '../core/xmp/vocabulary.js';
import { STATUS } from './error-handler.js';
import { C2PA_HEADER, errorResult, healthResult, OPT_OUT_HEADER, protectResult, usageResult, verifyResult } from './schemas.js';

const { $id: _p, ...ProtectResult } = protectResult;
const { $id: _v, ...VerifyResult } = verifyResult;
const { $id: _u, ...Usage } = usageResult;
const { $id: _e, ...ErrorBody } = errorResult;
const { $id: _h, ...Health } = healthResult;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

/** The codes of each operation; each status's enum is taken from these through STATUS. */
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
const USAGE_CODES: readonly ErrorCode[] = [...KEY_CODES, 'plan_not_allowed', 'too_many_requests', 'header_too_large', 'service_unavailable'];
const OPEN_CODES: readonly ErrorCode[] = ['header_too_large'];

/** Readable words for each status, and what more its codes say (docs/errors.md has every code). */
const STATUS_WORDS: Record<number, string> = {
  400: 'The request is not what the operation takes',
  401: 'No valid API key',
  403: 'The key may not call this operation',
  408: 'The request did not arrive in time; the connection is closed',
  413: 'The image is over the upload limit; the connection is closed',
  415: 'Not multipart/form-data, or the bytes are not JPEG, PNG or WebP',
  422: 'A JPEG, PNG or WebP whose container or XMP cannot be used, or an Idempotency-Key used for another image',
  429: 'The monthly limit is reached (quota_exceeded: Retry-After is the seconds to the next UTC month; do not retry before), or too many calls at once or invalid keys from this address (too_many_requests: retry after Retry-After), or the account\'s failed calls cost too much work this minute (too_many_failed_calls: retry after Retry-After)',
  431: 'The request headers are over 16 KiB; the connection is closed',
  503: 'The database is unavailable, the server is stopping or at capacity: retry after Retry-After',
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
  image_too_large: 'The image is larger than the 26214400-byte limit',
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
  method_not_allowed: 'GET is not allowed here; use POST',
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
  for (const code of codes) {
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

const IMAGE_PART = IMAGE_REQUEST.content['multipart/form-data'];

/** protect's body: the image, and optionally the value to write and the constraints text DMI-PROHIBITED-SEECONSTRAINT needs. */
const PROTECT_REQUEST = {
  required: true,
  description:
    'The part `image`: the file. Its declared type and file name decide nothing (the bytes do); the name only names the marked copy. ' +
    `Optionally the text fields \`value\` and \`otherConstraints\`; any other part is multiple_parts (400).`,
  content: {
    'multipart/form-data': {
      schema: {
        ...IMAGE_PART.schema,
        properties: {
          ...IMAGE_PART.schema.properties,
          value: {
            type: 'string',
            enum: PROHIBITED_CODES,
            description:
              `The Data Mining code to write, over any opt-out the file carries (the answer's ${OPT_OUT_HEADER} then says \`written\`). ` +
              `Without it, a DMI-PROHIBITED* value the file carries is kept, and any other file gets ${DEFAULT_CODE}. Another value is invalid_option (400).`,
          },
          otherConstraints: {
            type: 'string',
            minLength: 1,
            maxLength: MAX_OTHER_CONSTRAINTS_CHARACTERS,
            description:
              `With \`value\` ${SEE_CONSTRAINT} ("Prohibited, see plus:OtherConstraints"), and only with it: the constraints that value points to, ` +
              'written into plus:OtherConstraints as its x-default item (a Lang Alt; items in other languages the file has are kept). ' +
              `One line of text, surrounding whitespace removed, at most ${MAX_OTHER_CONSTRAINTS_CHARACTERS} characters, no control characters. ` +
              'The value without it, or it without the value, is invalid_option (400).',
          },
        },
      },
      encoding: { ...IMAGE_PART.encoding, value: { contentType: 'text/plain' }, otherConstraints: { contentType: 'text/plain; charset=utf-8' } },
      examples: {
        ...IMAGE_PART.examples,
        seeConstraint: {
          summary: 'A JPEG, with DMI-PROHIBITED-SEECONSTRAINT and its constraints',
          value: { image: '(the bytes of photo.jpg)', value: SEE_CONSTRAINT, otherConstraints: 'Licensed for search indexing only; ask rights@example.com for anything else' },
        },
      },
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
    "Makes a retry safe. Within 24 hours, a call with the same key, the same image bytes and the same options as an earlier call of the account gets that call's answer again (a 200 computed again from the image sent, the same bytes for protect; a refusal as it was), with `Idempotent-Replayed: true`, and counts nothing; one sent while the first runs waits for it. The same key with another image or options is 422 idempotency_key_reused. A malformed key is 400 invalid_option.",
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
      ? `Writes plus:DataMining (the \`value\` asked for; without one, keeping a DMI-PROHIBITED* value the file already carries, else DMI-PROHIBITED-AIMLTRAINING), with ${SEE_CONSTRAINT} its \`otherConstraints\` text as plus:OtherConstraints, and this deployment's signed provenance tag into the XMP; no other byte changes. ${limitWords} Counts toward the monthly protect limit; a call that does not return 200 counts nothing.`
      : `Reads the opt-out, the other signals, the provenance tag and the experimental in-pixel fingerprint. ${limitWords} Counts toward the monthly verify limit; a call that does not return 200 counts nothing.`,
    parameters: protect ? [IDEMPOTENCY_PARAMETER] : [DETAIL_PARAMETER, IDEMPOTENCY_PARAMETER],
    requestBody: protect ? PROTECT_REQUEST : IMAGE_REQUEST,
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
      { name: 'Keys', description: "The public keys that check this deployment's provenance tags" },
      { name: 'Health', description: 'Liveness and readiness, for load balancers and orchestrators' },
      { name: 'Meta', description: 'This document' },
    ],
    security: [{ bearer: [] }],
    paths: {
      '/api/v1/protect': { post: imageOperation('protect', `The body is multipart/form-data with the part \`image\` (at most ${options.maxUploadBytes} bytes) and optionally \`value\` and \`otherConstraints\`.`) },
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
          ['header_too_large', 'service_unavailable'],
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
      schemas: { ProtectResult, VerifyResult, Usage, Error: ErrorBody, Health, Jwk: JWK, Jwks: JWKS },
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
