/**
 * The OpenAPI 3.1 document served at GET /api/v1/openapi.json, built from
 * the response schemas the routes declare (http/schemas.ts) and the status
 * table of the error handler.
 */
import { STATUS } from './error-handler.js';
import { C2PA_HEADER, errorResult, protectResult, usageResult, verifyResult } from './schemas.js';

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
  'too_many_requests', 'too_many_failed_calls', 'service_unavailable', 'server_busy', 'internal_error',
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
const C2PA_RESPONSE_HEADER = {
  [C2PA_HEADER]: {
    description: "`invalidated` when the upload carried a C2PA manifest: writing the XMP changes bytes its hard binding covers, so the marked copy's manifest no longer validates (docs/provenance.md). Absent otherwise.",
    schema: { type: 'string', enum: ['invalidated'] },
  },
};

function imageOperation(operation: 'protect' | 'verify', summary: string, result: string, schema: string, errors: readonly string[], limit: string) {
  return {
    operationId: operation,
    summary,
    description: `One multipart part, \`image\` (${limit}). Counts toward the monthly ${operation} limit; a call that fails does not count.`,
    requestBody: imageBody,
    responses: {
      200: { description: result, headers: operation === 'protect' ? { ...RATE_HEADERS, ...C2PA_RESPONSE_HEADER } : RATE_HEADERS, content: { 'application/json': { schema: ref(schema) } } },
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
        post: imageOperation('protect', 'Write the opt-out into the image metadata, losslessly', 'The marked image', 'ProtectResult', [...IMAGE_ERRORS, 'ambiguous_xmp'], limit),
      },
      '/api/v1/verify': {
        post: imageOperation('verify', 'Check an image for the opt-out and other signals', 'What the image carries', 'VerifyResult', IMAGE_ERRORS, limit),
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
            ...errorResponses(['missing_api_key', 'invalid_api_key', 'plan_not_allowed', 'too_many_requests', 'service_unavailable']),
          },
        },
      },
    },
  };
}
