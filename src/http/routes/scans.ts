/**
 * The repository scans of the API (docs/scans.md):
 *
 *   POST   /api/v1/scans               {"repository", "ref"?, "token"?} -> 202 {id, status, links}
 *   GET    /api/v1/scans               the account's recent scans
 *   GET    /api/v1/scans/{id}          status, progress, and once ended the summary
 *   GET    /api/v1/scans/{id}/report   JSON, or CSV with Accept: text/csv
 *   DELETE /api/v1/scans/{id}          cancel
 *
 * Creating or cancelling needs the `verify` scope; reading, any scope. Plans
 * with API access only. Another account's scan is not found, as an unknown
 * id is. A token is never echoed, stored or logged.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { bearerCredential, presentsKey, type ApiAccess } from '../../app/api-access.js';
import type { AuthFailures } from '../../app/auth-failures.js';
import { API_PLANS, type Principal } from '../../app/ports.js';
import { FINISHED_STATES, type Scan, type ScanItem } from '../../app/scans/ports.js';
import type { Scans } from '../../app/scans/scans.js';
import { csvField } from '../../core/csv.js';
import { InvalidOptionError, MethodNotAllowedError, PlanNotAllowedError, RoleNotAllowedError, ScopeNotAllowedError } from '../../errors.js';
import { errorResult } from '../schemas.js';

export interface ScanRouteOptions {
  readonly access: ApiAccess;
  readonly authFailures: AuthFailures;
  readonly scans: Scans;
}

/** A scan as the API answers it. */
export function scanView(scan: Scan) {
  const base = `/api/v1/scans/${scan.id}`;
  const ended = FINISHED_STATES.includes(scan.state);
  return {
    id: scan.id,
    status: scan.state,
    repository: scan.repository,
    ref: scan.ref,
    commit: scan.commit,
    withToken: scan.withToken,
    createdAt: scan.createdAt.toISOString(),
    startedAt: scan.startedAt?.toISOString() ?? null,
    finishedAt: scan.finishedAt?.toISOString() ?? null,
    expiresAt: scan.expiresAt.toISOString(),
    reason: scan.reason,
    progress: { files: scan.total, processed: scan.processed, imagesChecked: scan.summary.images },
    fetchMs: scan.fetchMs,
    summary: ended ? { images: scan.summary.images, optedOut: scan.summary.optedOut, notOptedOut: scan.summary.notOptedOut, failed: scan.summary.failed, skipped: scan.summary.skipped } : null,
    otherFiles: scan.summary.otherFiles,
    links: { self: base, report: `${base}/report` },
  };
}

/** Opted out of all images (1 when there are none, so an empty repository is not "uncovered"). */
export const coverageOf = (scan: Scan) => ({ optedOut: scan.summary.optedOut, images: scan.summary.images, ratio: scan.summary.images === 0 ? 1 : scan.summary.optedOut / scan.summary.images });

export const REPORT_COLUMNS = ['path', 'status', 'reason', 'code', 'bytes', 'sha256', 'format', 'value', 'signals', 'provenancePresent', 'provenanceValid', 'fingerprintPresent'] as const;

export function reportCsv(items: readonly ScanItem[]): string {
  const lines = [REPORT_COLUMNS.join(',')];
  for (const item of items) {
    lines.push(
      [
        csvField(item.path, true),
        csvField(item.status),
        csvField(item.reason ?? '', true),
        csvField(item.code ?? ''),
        String(item.bytes),
        csvField(item.sha256 ?? ''),
        csvField(item.format ?? ''),
        csvField(item.value ?? '', true),
        csvField(item.signals.join(' ')),
        item.provenance ? String(item.provenance.present) : '',
        item.provenance ? String(item.provenance.valid) : '',
        item.fingerprint ? String(item.fingerprint.present) : '',
      ].join(','),
    );
  }
  return `${lines.join('\r\n')}\r\n`;
}

const scanBody = {
  type: 'object',
  required: ['repository'],
  // Names not listed are refused in the handler (the validator would drop them silently).
  properties: {
    repository: { type: 'string', minLength: 1, maxLength: 2048 },
    ref: { type: ['string', 'null'], minLength: 1, maxLength: 255 },
    token: { type: ['string', 'null'], minLength: 1, maxLength: 1024 },
  },
} as const;

export async function scanApiRoutes(app: FastifyInstance, options: ScanRouteOptions): Promise<void> {
  const { access, authFailures, scans } = options;
  const errors = { '4xx': errorResult, '5xx': errorResult };

  const refuseKeyGuessers = async (request: FastifyRequest) => {
    if (presentsKey(request.headers.authorization)) authFailures.admit(request.ip);
  };
  const principalOf = async (request: FastifyRequest, scope?: 'verify'): Promise<Principal> => {
    const principal = await authFailures.counting(request.ip, async () => access.authenticate(bearerCredential(request.headers.authorization)));
    if (!API_PLANS.includes(principal.plan)) throw new PlanNotAllowedError(principal.plan);
    if (scope && !principal.scopes.includes(scope)) throw new ScopeNotAllowedError('repository scans (creating or cancelling one needs the verify scope)', principal.scopes);
    return principal;
  };
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;

  // The app takes no JSON bodies elsewhere; here, small ones (this plugin's routes only).
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: 16 * 1024 }, (_request, body, done) => {
    try {
      done(null, JSON.parse(body as string));
    } catch {
      done(new InvalidOptionError('the body', 'JSON {"repository": URL, "ref": optional branch or tag, "token": optional read token}', '(not JSON)'), undefined);
    }
  });

  app.post('/api/v1/scans', {
    config: { access: 'api-key' },
    onRequest: refuseKeyGuessers,
    // The body is small JSON; anything else is refused before it is parsed.
    bodyLimit: 16 * 1024,
    schema: { body: scanBody, response: errors },
    attachValidation: true,
    handler: async (request, reply) => {
      const principal = await principalOf(request, 'verify');
      const given = request.body && typeof request.body === 'object' ? Object.keys(request.body) : [];
      const unknown = given.find((name) => !['repository', 'ref', 'token'].includes(name));
      if (unknown !== undefined) throw new InvalidOptionError('the body', 'only "repository", "ref" and "token"', unknown.slice(0, 100));
      if (request.validationError) throw new InvalidOptionError('the body', 'JSON {"repository": URL, "ref": optional branch or tag, "token": optional read token}', describe(request.validationError.message));
      if (!principal.userId) throw new RoleNotAllowedError('This key belongs to no person of the account; a scan is counted per person: issue a key for a user');
      const body = request.body as { repository: string; ref?: string | null; token?: string | null };
      const scan = await scans.submit({ accountId: principal.accountId, userId: principal.userId, plan: principal.plan }, body);
      const view = scanView(scan);
      reply.code(202).header('Location', view.links.self);
      return { id: view.id, status: view.status, links: view.links };
    },
  });

  app.get('/api/v1/scans', {
    config: { access: 'api-key' },
    onRequest: refuseKeyGuessers,
    handler: async (request) => {
      const principal = await principalOf(request);
      return { scans: (await scans.list(principal.accountId)).map(scanView) };
    },
  });

  app.get('/api/v1/scans/:id', {
    config: { access: 'api-key' },
    onRequest: refuseKeyGuessers,
    handler: async (request) => {
      const principal = await principalOf(request);
      return scanView(await scans.get(principal.accountId, idOf(request)));
    },
  });

  app.get('/api/v1/scans/:id/report', {
    config: { access: 'api-key' },
    onRequest: refuseKeyGuessers,
    handler: async (request, reply: FastifyReply) => {
      const principal = await principalOf(request);
      const { scan, items } = await scans.report(principal.accountId, idOf(request));
      if (wantsCsv(request.headers.accept)) {
        reply.header('Content-Disposition', `attachment; filename="${scan.id}.csv"`);
        return reply.type('text/csv; charset=utf-8').send(reportCsv(items));
      }
      return { scan: scanView(scan), coverage: coverageOf(scan), items };
    },
  });

  app.delete('/api/v1/scans/:id', {
    config: { access: 'api-key' },
    onRequest: refuseKeyGuessers,
    handler: async (request) => {
      const principal = await principalOf(request, 'verify');
      return scanView(await scans.cancel(principal.accountId, idOf(request)));
    },
  });

  for (const [url, allow] of [
    ['/api/v1/scans', 'GET, POST'],
    ['/api/v1/scans/:id', 'GET, DELETE'],
    ['/api/v1/scans/:id/report', 'GET'],
  ] as const) {
    const taken = allow.split(', ');
    const others = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'].filter((m) => !taken.includes(m) && !(taken.includes('GET') && m === 'HEAD'));
    app.route({
      method: others as never,
      url,
      config: { access: 'api-key' },
      handler: async (request) => {
        throw new MethodNotAllowedError(request.method, allow);
      },
    });
  }
}

/** CSV when the client asks for it before JSON. */
function wantsCsv(accept: string | undefined): boolean {
  if (!accept) return false;
  const types = accept.split(',').map((part) => part.split(';')[0]!.trim().toLowerCase());
  const csv = types.indexOf('text/csv');
  const json = types.indexOf('application/json');
  return csv !== -1 && (json === -1 || csv < json);
}

/** The validator's words, never a value of the body (a token). */
function describe(message: string): string {
  return message.replace(/"[^"]*"/g, '').slice(0, 200);
}
