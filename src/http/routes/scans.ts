/**
 * The repository scans of the API (docs/scans.md):
 *
 *   POST   /api/v1/scans               {"repository", "ref"?, "token"?} -> 202 {id, status, links}
 *   GET    /api/v1/scans               the account's recent scans
 *   GET    /api/v1/scans/{id}          status, progress, and once ended the summary
 *   GET    /api/v1/scans/{id}/report   JSON, or CSV with Accept: text/csv
 *   DELETE /api/v1/scans/{id}          cancel
 *   POST   /api/v1/scans/{id}/fix      {"confirm": N, "push"?, "token"?} -> a zip of the marked files, or the pushed branch
 *
 * Creating or cancelling needs the `verify` scope; reading, any scope. Plans
 * with API access only. Another account's scan is not found, as an unknown
 * id is. A token is never echoed, stored or logged.
 */
import { Readable } from 'node:stream';
import { makeZip } from 'client-zip';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { bearerCredential, presentsKey, type ApiAccess } from '../../app/api-access.js';
import type { AuthFailures } from '../../app/auth-failures.js';
import { API_PLANS, type Principal } from '../../app/ports.js';
import { FINISHED_STATES, type Scan } from '../../app/scans/ports.js';
import type { Scans } from '../../app/scans/scans.js';
import type { FixOutcome } from '../../app/scans/fix.js';
import { coverageOf as coverageFor, reportCsv, summaryOf } from '../../app/scans/report.js';
import { InvalidOptionError, PlanNotAllowedError, RoleNotAllowedError, ScopeNotAllowedError } from '../../errors.js';
import { errorResult } from '../schemas.js';
import { answerOtherMethods } from './other-methods.js';

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
    summary: ended ? summaryOf(scan.summary) : null,
    otherFiles: scan.summary.otherFiles,
    links: { self: base, report: `${base}/report` },
  };
}

/** Coverage of a scan's images (app/scans/report.ts). */
export const coverageOf = (scan: Scan) => coverageFor(scan.summary);

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
  const principalOf = async (request: FastifyRequest, scope?: 'verify' | 'protect'): Promise<Principal> => {
    const principal = await authFailures.counting(request.ip, presentsKey(request.headers.authorization), async () => access.authenticate(bearerCredential(request.headers.authorization)));
    if (!API_PLANS.includes(principal.plan)) throw new PlanNotAllowedError(principal.plan);
    if (scope && !principal.scopes.includes(scope)) throw new ScopeNotAllowedError(scope === 'verify' ? 'repository scans (creating or cancelling one needs the verify scope)' : 'a scan\'s fix (it marks images: the protect scope)', principal.scopes);
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

  app.post('/api/v1/scans/:id/fix', {
    config: { access: 'api-key' },
    onRequest: refuseKeyGuessers,
    handler: async (request, reply: FastifyReply) => {
      // It spends protect units: the protect scope.
      const principal = await principalOf(request, 'protect');
      const body = (request.body ?? {}) as Record<string, unknown>;
      const unknown = Object.keys(body).find((name) => !['confirm', 'push', 'token'].includes(name));
      if (unknown !== undefined) throw new InvalidOptionError('the body', 'only "confirm", "push" and "token"', unknown.slice(0, 100));
      if (typeof body.confirm !== 'number' || !Number.isSafeInteger(body.confirm)) {
        throw new InvalidOptionError('confirm', 'the number of images the fix marks', typeof body.confirm === 'number' ? body.confirm : typeof body.confirm, 'Send "confirm": N, the number of images without the opt-out this fix marks (each one protect call); GET the report to see them');
      }
      if (body.push !== undefined && typeof body.push !== 'boolean') throw new InvalidOptionError('push', 'true or false', typeof body.push);
      if (body.token !== undefined && body.token !== null && (typeof body.token !== 'string' || body.token.length === 0 || body.token.length > 1024)) {
        throw new InvalidOptionError('token', 'a token of 1 to 1024 characters', '(not shown)');
      }
      if (body.push === true && !body.token) throw new InvalidOptionError('token', 'a token that may write to the repository, to push the branch', '(none)');
      const outcome = await scans.fix(
        { accountId: principal.accountId, userId: principal.userId ?? '', plan: principal.plan },
        { scanId: idOf(request), confirm: body.confirm, push: body.push === true, token: (body.token as string | undefined) ?? null },
      );
      if (body.push === true) {
        return { branch: outcome.branch, commit: outcome.commit, marked: outcome.files.map((f) => ({ path: f.path, sha256: f.marked.sha256 })), failed: outcome.failed };
      }
      reply.header('Content-Disposition', `attachment; filename="${idOf(request)}-fix.zip"`);
      reply.header('X-Optmark-Fix-Failed', String(outcome.failed.length));
      return reply.type('application/zip').send(Readable.fromWeb(makeZip(zipEntries(outcome)) as never));
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

  answerOtherMethods(app, [
    ['/api/v1/scans', 'GET, POST'],
    ['/api/v1/scans/:id', 'GET, DELETE'],
    ['/api/v1/scans/:id/report', 'GET'],
    ['/api/v1/scans/:id/fix', 'POST'],
  ]);
}

/**
 * A repository path as a zip entry no unzip can write outside its folder
 * (APPNOTE 4.4.17: `/` separates folders; no drive letter): a backslash or
 * a colon (a drive letter, an NTFS stream) becomes `_`, control characters
 * go, and a part `.` or `..` (git refuses them; a folder source cannot have
 * them) becomes `_`.
 */
export function zipEntryPath(path: string): string {
  return path
    .split('/')
    .filter((part) => part !== '')
    .map((part) => part.replace(/[\\:]/g, '_').replace(/[\u0000-\u001f\u007f]/g, ''))
    .map((part) => (part === '' || part === '.' || part === '..' ? '_' : part))
    .join('/');
}

/**
 * The zip of a fix: each marked file at its repository path (made safe, and
 * unique), and, when some could not be marked or were renamed, a
 * FIX-REPORT.txt saying which and why.
 */
export function zipEntries(outcome: FixOutcome) {
  const now = new Date();
  const used = new Set<string>();
  const unique = (name: string) => {
    let candidate = name;
    for (let n = 2; used.has(candidate.toLowerCase()); n++) candidate = name.replace(/(\.[^./]*)?$/, (ext) => ` (${n})${ext}`);
    used.add(candidate.toLowerCase());
    return candidate;
  };
  const renamed: string[] = [];
  const entries: Array<{ name: string; input: Uint8Array | string; lastModified: Date }> = outcome.files.map((f) => {
    const name = unique(zipEntryPath(f.path));
    if (name !== f.path) renamed.push(`${JSON.stringify(f.path)} is ${name}`);
    return { name, input: f.marked.bytes, lastModified: now };
  });
  const lines = [
    ...(outcome.failed.length > 0 ? ['Not marked:', ...outcome.failed.map((f) => `${f.path}: ${f.reason}`)] : []),
    ...(renamed.length > 0 ? ['Renamed in this zip (a name a zip cannot carry safely, or another file\'s but for case):', ...renamed] : []),
  ];
  if (lines.length > 0) entries.push({ name: unique('FIX-REPORT.txt'), input: `${lines.join('\n')}\n`, lastModified: now });
  return entries;
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
