/**
 * The OpenAPI 3.1 document served at GET /api/v1/openapi.json, built from
 * the response schemas the routes declare (http/schemas.ts) and the status
 * table of the error handler.
 */
import { STATUS } from './error-handler.js';
import { C2PA_HEADER, errorResult, OPT_OUT_HEADER, protectResult, usageResult, verifyResult } from './schemas.js';

const { $id: _p, ...ProtectResult } = protectResult;
const { $id: _v, ...VerifyResult } = verifyResult;
const { $id: _u, ...Usage } = usageResult;
const { $id: _e, ...ErrorBody } = errorResult;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

function errorResponses(codes: readonly string[]) {
  const byStatus = new Map<number, string[]>();
  for (const code of codes) {
    const status = STATUS[code as keyof typeof STATUS];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].sort(([a], [b]) => a - b).map(([status, list]) => [String(status), { description: list.join(', '), content: { 'application/json': { schema: ref('Error') } } }]),
  );
}

const RATE_HEADERS = {
  'RateLimit-Policy': { description: 'Monthly quota policy (draft-ietf-httpapi-ratelimit-headers-11)', schema: { type: 'string' } },
  RateLimit: { description: 'Remaining allowance and seconds until it resets', schema: { type: 'string' } },
  'Request-Id': { description: 'Identifier of this request, also in error bodies and logs', schema: { type: 'string' } },
};

const IMAGE_ERRORS = [
  'malformed_request', 'missing_image_part', 'multiple_parts', 'empty_image', 'missing_api_key', 'invalid_api_key', 'plan_not_allowed',
  'request_timeout', 'image_too_large', 'unsupported_content_type', 'unsupported_image_format', 'corrupt_image', 'invalid_xmp', 'quota_exceeded',
  'too_many_requests', 'service_unavailable', 'server_busy', 'internal_error', 'idempotency_key_reused',
] as const;

const imageBody = {
  required: true,
  content: {
    'multipart/form-data': {
      schema: {
        type: 'object',
        required: ['image'],
        additionalProperties: false,
        properties: { image: { type: 'string', contentMediaType: 'image/*', description: 'JPEG, PNG or WebP; the format is judged by the bytes' } },
      },
    },
  },
};

/** POST protect or verify: one image part in, a result or an error out. */
const PROTECT_RESPONSE_HEADERS = {
  [OPT_OUT_HEADER]: {
    description:
      '`kept CODE` when the upload already carried that DMI-PROHIBITED* value (protect takes no value and keeps an opt-out the file carries); `written CODE` otherwise, CODE being then DMI-PROHIBITED-AIMLTRAINING.',
    schema: { type: 'string', pattern: '^(kept|written) DMI-PROHIBITED[A-Z-]*$' },
  },
  [C2PA_HEADER]: {
    description: "`invalidated` when the upload carried a C2PA manifest: writing the XMP changes bytes its hard binding covers, so the marked copy's manifest no longer validates (docs/provenance.md). Absent otherwise.",
    schema: { type: 'string', enum: ['invalidated'] },
  },
};

/** Both image calls may be repeated safely under one key. */
const IDEMPOTENCY_PARAMETER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
  description:
    'Makes a retry safe. Within 24 hours, a call with the same key, the same image bytes and the same options as an earlier call of the account gets that call\'s answer again (a 200 computed again from the image sent, the same bytes for protect; a refusal as it was) and counts nothing; one sent while the first runs waits for it. The same key with another image or options is 422 idempotency_key_reused. A malformed key is 400 invalid_option.',
};

const REPLAYED_HEADER = {
  'Idempotent-Replayed': { description: '`true` when the answer repeats an earlier call with the same Idempotency-Key (nothing was counted)', schema: { type: 'string', enum: ['true'] } },
};

/** verify's one query parameter. */
const DETAIL_PARAMETER = {
  name: 'detail',
  in: 'query',
  required: false,
  schema: { type: 'string', enum: ['full'] },
  description:
    '`full` adds `details` to the answer: every signal found in every vocabulary (also when the file has no plus:DataMining, when `signals` is []), each plus:DataMining value, TDMRep, the C2PA summary and warnings. Without it the answer is exactly the specification\'s. Any other parameter or value is invalid_option (400).',
};

function imageOperation(operation: 'protect' | 'verify', summary: string, result: string, schema: string, errors: readonly string[], limit: string) {
  return {
    operationId: operation,
    summary,
    description: `One multipart part, \`image\` (${limit}). Counts toward the monthly ${operation} limit; a call that fails does not count.`,
    parameters: operation === 'verify' ? [DETAIL_PARAMETER, IDEMPOTENCY_PARAMETER] : [IDEMPOTENCY_PARAMETER],
    requestBody: imageBody,
    responses: {
      200: {
        description: result,
        headers: operation === 'protect' ? { ...RATE_HEADERS, ...PROTECT_RESPONSE_HEADERS, ...REPLAYED_HEADER } : { ...RATE_HEADERS, ...REPLAYED_HEADER },
        content: { 'application/json': { schema: ref(schema) } },
      },
      ...errorResponses(errors),
    },
  };
}

export function openApiDocument(options: { maxUploadBytes: number; version: string }) {
  const limit = `at most ${options.maxUploadBytes} bytes`;
  return {
    openapi: '3.1.0',
    info: {
      title: 'optmark API',
      version: options.version,
      description: 'Mark images with the IPTC/PLUS Data Mining AI-training opt-out, losslessly, and verify it.',
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key, `omk_...`' } },
      schemas: { ProtectResult, VerifyResult, Usage, Error: ErrorBody },
    },
    security: [{ bearer: [] }],
    paths: {
      '/api/v1/protect': {
        post: imageOperation('protect', 'Write the opt-out into the image metadata, losslessly', 'The marked image', 'ProtectResult', [...IMAGE_ERRORS, 'ambiguous_xmp', 'conflicting_xmp', 'invalid_option'], limit),
      },
      '/api/v1/verify': {
        post: imageOperation('verify', 'Check an image for the opt-out and other signals', 'What the image carries', 'VerifyResult', [...IMAGE_ERRORS, 'invalid_option'], limit),
      },
      '/.well-known/jwks.json': {
        get: {
          operationId: 'jwks',
          summary: 'The public Ed25519 keys (RFC 7517 JWKS) that check this deployment\'s provenance tags, current and retired',
          security: [],
          responses: { 200: { description: 'A JWK Set', content: { 'application/json': { schema: { type: 'object', required: ['keys'], properties: { keys: { type: 'array', items: { type: 'object' } } } } } } } },
        },
      },
      '/api/v1/usage': {
        get: {
          operationId: 'usage',
          summary: "This month's usage of the account behind the key (free of charge)",
          responses: {
            200: { description: 'Used, limit and remaining per operation', headers: RATE_HEADERS, content: { 'application/json': { schema: ref('Usage') } } },
            ...errorResponses(['missing_api_key', 'invalid_api_key', 'too_many_requests', 'service_unavailable']),
          },
        },
      },
    },
  };
}
