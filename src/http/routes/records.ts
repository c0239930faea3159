/**
 * GET /api/v1/records/{sha256}: the dated service records of the key's
 * account whose original or marked file has this SHA-256 (docs/records.md),
 * both JWS of each. Any scope; free of charge (no monthly limit is drawn
 * on); like usage, for a plan with API access. Another account's record is
 * not found, as an unknown hash is. The key is checked first, then the hash.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { bearerCredential, presentsKey, type ApiAccess } from '../../app/api-access.js';
import type { AuthFailures } from '../../app/auth-failures.js';
import { API_PLANS } from '../../app/ports.js';
import type { ServiceRecord } from '../../app/records/ports.js';
import type { Records } from '../../app/records/records.js';
import { PlanNotAllowedError } from '../../errors.js';
import { answerOtherMethods } from './other-methods.js';
import { errorResult, recordsResult } from '../schemas.js';

export interface RecordRouteOptions {
  readonly access: ApiAccess;
  readonly authFailures: AuthFailures;
  readonly records: Records;
}

/** A record as the API answers it. */
export function apiRecord(record: ServiceRecord) {
  return {
    recordId: record.id,
    createdAt: record.createdAt.toISOString(),
    fileName: record.fileName,
    sha256Original: record.sha256Original,
    sha256Marked: record.sha256Marked,
    value: record.value,
    layers: record.layers,
    kid: record.kid,
    user: record.userEmail,
    batchId: record.batchId,
    jws: { public: record.publicJws, private: record.privateJws },
  };
}

export async function recordApiRoutes(app: FastifyInstance, options: RecordRouteOptions): Promise<void> {
  const { access, authFailures, records } = options;
  const path = '/api/v1/records/:sha256';

  app.get(path, {
    config: { access: 'api-key' },
    schema: { response: { 200: recordsResult, '4xx': errorResult, '5xx': errorResult } },
    // An address past its invalid keys is refused before the lookup (app/auth-failures.ts).
    onRequest: async (request: FastifyRequest) => {
      if (presentsKey(request.headers.authorization)) authFailures.admit(request.ip);
    },
    handler: async (request) => {
      const principal = await authFailures.counting(request.ip, presentsKey(request.headers.authorization), async () => access.authenticate(bearerCredential(request.headers.authorization)));
      if (!API_PLANS.includes(principal.plan)) throw new PlanNotAllowedError(principal.plan);
      const found = await records.lookup(principal.accountId, (request.params as { sha256: string }).sha256);
      return { records: found.map(apiRecord) };
    },
  });

  // The path answers other methods with 405 and the one it takes, as the API's other paths do.
  answerOtherMethods(app, [[path, 'GET']]);
}
