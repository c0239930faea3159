/**
 * Repository scans on the people's side (docs/dashboard.md, "Scans"): the
 * Scans page and its form, one scan's page, the progress JSON its page
 * script polls, the report's exports (the API's report, as CSV and JSON),
 * cancel, and the fix (a confirmation page, then a zip or a pushed branch),
 * each marked file leaving a dated service record as a marking on the Mark
 * page does. Everyone of the account sees its scans; another account's scan
 * is 404, as an unknown id is. A token typed here is used for that scan or
 * fix only: never stored, logged or shown again.
 */
import { Readable } from 'node:stream';
import { makeZip } from 'client-zip';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { API_PLANS } from '../../app/ports.js';
import { FINISHED_STATES } from '../../app/scans/ports.js';
import type { Scans } from '../../app/scans/scans.js';
import { InvalidOptionError, isOptmarkError, type OptmarkError } from '../../errors.js';
import { fixConfirmPage, isItemStatus, scanPage, type FixConfirmView, type ScanView } from '../../web/pages/scan.js';
import { scansPage, type ScansView } from '../../web/pages/scans.js';
import { STATUS, wantsPage } from '../error-handler.js';
import { PAGE_HEADERS } from '../page-headers.js';
import { reportCsv } from '../../app/scans/report.js';
import { coverageOf, scanView, zipEntries } from '../routes/scans.js';
import { field, formatOf, pageContext, sendPage, type WebDeps } from './context.js';
import { attachment } from './page-routes.js';

/** Refusals of the scan form a person can act on: shown on the form, with what they typed (but the token). */
// service_unavailable: the scan could not be queued (and was not counted): the person may submit it again as typed.
const SCAN_FORM_ERRORS = new Set(['invalid_option', 'source_not_allowed', 'scan_limit_reached', 'scans_paused', 'service_unavailable']);
/** Refusals of a fix shown on its confirmation page. */
// repository_unavailable: the repository could not be fetched again or pushed to (a token refused, a branch that exists), said in words.
// server_busy: a fix of the account is running already, or the server runs as many as it may.
const FIX_ERRORS = new Set(['invalid_option', 'quota_exceeded', 'scan_not_finished', 'repository_unavailable', 'plan_not_allowed', 'server_busy']);
const isFormError = (codes: Set<string>) => (error: unknown): error is OptmarkError => isOptmarkError(error) && codes.has(error.code);

/** An invalid field of the scan form, in words. */
function formWords(error: OptmarkError): { text: string; field?: ScansView['errorField'] } {
  if (error.code === 'source_not_allowed') return { text: error.message, field: 'repository' };
  if (error instanceof InvalidOptionError) {
    if (error.option === 'repository') return { text: "Type the repository's URL (at most 2,048 characters)", field: 'repository' };
    if (error.option === 'ref') return { text: `“${String(error.actual).slice(0, 100)}” is not a branch or tag name git accepts`, field: 'ref' };
    if (error.option === 'token') return { text: 'The read token must be 1 to 1,024 visible characters, without spaces (it is not shown again: type it once more)', field: 'token' };
  }
  return { text: error.message };
}

export function scanRoutes(app: FastifyInstance, deps: WebDeps & { readonly scans: Scans }): void {
  const { scans } = deps;
  const context = (request: FastifyRequest) => pageContext(deps, request);
  const scanIdOf = (request: FastifyRequest) => (request.params as { scanId: string }).scanId;
  const submitter = (request: FastifyRequest) => {
    const { user, account } = request.signedIn!;
    return { accountId: account.id, userId: user.id, plan: account.plan };
  };

  async function showScans(request: FastifyRequest, reply: FastifyReply, extra: Partial<ScansView> = {}, status = 200): Promise<FastifyReply> {
    const { user, account } = request.signedIn!;
    const paid = API_PLANS.includes(account.plan);
    const [list, today] = await Promise.all([scans.list(account.id, 50), paid ? scans.today(account.id, user.id) : Promise.resolve(undefined)]);
    const view: ScansView = { scans: list, now: deps.clock(), format: formatOf(request), ...(today ? { today } : {}), ...extra };
    return sendPage(reply, scansPage(context(request), view), status);
  }

  async function showScan(request: FastifyRequest, reply: FastifyReply, extra: Partial<ScanView> = {}, status = 200): Promise<FastifyReply> {
    const { account } = request.signedIn!;
    const scan = await scans.get(account.id, scanIdOf(request));
    const items = FINISHED_STATES.includes(scan.state) ? (await scans.report(account.id, scan.id)).items : [];
    const wanted = String((request.query as Record<string, unknown>).status ?? '');
    const view: ScanView = { scan, items, filter: isItemStatus(wanted) ? wanted : '', format: formatOf(request), ...extra };
    return sendPage(reply, scanPage(context(request), view), status);
  }

  async function showFix(request: FastifyRequest, reply: FastifyReply, extra: Partial<FixConfirmView> = {}, status = 200): Promise<FastifyReply> {
    const { account } = request.signedIn!;
    const scan = await scans.get(account.id, scanIdOf(request));
    const [paths, usage] = await Promise.all([scans.fixable(account.id, scan.id), deps.access.accountUsage(account.id)]);
    return sendPage(reply, fixConfirmPage(context(request), { scan, paths, usage, format: formatOf(request), ...extra }), status);
  }

  app.get('/scans', { config: { access: 'signed-in', page: true } }, async (request, reply) => showScans(request, reply));

  app.post('/scans', { config: { access: 'paid', page: true, csrf: 'session' } }, async (request, reply) => {
    const form = { repository: field(request, 'repository').trim(), ref: field(request, 'ref').trim() };
    const token = field(request, 'token');
    let id: string;
    try {
      id = (await scans.submit(submitter(request), { repository: form.repository, ref: form.ref || null, token: token || null })).id;
    } catch (error) {
      if (!isFormError(SCAN_FORM_ERRORS)(error) || !wantsPage(request)) throw error;
      const words = formWords(error);
      const wait = (error as { retryAfterSeconds?: unknown }).retryAfterSeconds;
      if (typeof wait === 'number') reply.header('Retry-After', String(wait));
      return showScans(request, reply, { form, error: words.text, errorCode: error.code, ...(words.field ? { errorField: words.field } : {}) }, STATUS[error.code]);
    }
    return reply.redirect(`/scans/${id}`, 303);
  });

  app.get('/scans/:scanId', { config: { access: 'signed-in', page: true } }, async (request, reply) => {
    const cancelled = (request.query as Record<string, unknown>).cancelled === '1';
    return showScan(request, reply, cancelled ? { message: 'The scan is cancelled. What it checked before is in the report.' } : {});
  });

  // What the scan page's script polls while the scan runs: the API's view of it.
  app.get('/scans/:scanId/progress', { config: { access: 'signed-in', page: true } }, async (request, reply) => {
    const scan = await scans.get(request.signedIn!.account.id, scanIdOf(request));
    return reply.header('Cache-Control', 'no-store').send({ ...scanView(scan), coverage: coverageOf(scan) });
  });

  // The exports: the same content as the API's report, in CSV and in JSON.
  app.get('/scans/:scanId/report.csv', { config: { access: 'signed-in', page: true } }, async (request, reply) => {
    const { scan, items } = await scans.report(request.signedIn!.account.id, scanIdOf(request));
    return reply.headers(PAGE_HEADERS).type('text/csv; charset=utf-8').header('Content-Disposition', attachment(`${scan.id}.csv`)).send(reportCsv(items));
  });

  app.get('/scans/:scanId/report.json', { config: { access: 'signed-in', page: true } }, async (request, reply) => {
    const { scan, items } = await scans.report(request.signedIn!.account.id, scanIdOf(request));
    return reply
      .headers(PAGE_HEADERS)
      .type('application/json; charset=utf-8')
      .header('Content-Disposition', attachment(`${scan.id}.json`))
      .send(JSON.stringify({ scan: scanView(scan), coverage: coverageOf(scan), items }));
  });

  app.post('/scans/:scanId/cancel', { config: { access: 'paid', page: true, csrf: 'session' } }, async (request, reply) => {
    try {
      await scans.cancel(request.signedIn!.account.id, scanIdOf(request));
    } catch (error) {
      if (isOptmarkError(error) && error.code === 'scan_not_cancellable' && wantsPage(request)) return showScan(request, reply, { error: 'This scan has ended already: there is nothing to cancel.' }, STATUS[error.code]);
      throw error;
    }
    return reply.redirect(`/scans/${scanIdOf(request)}?cancelled=1`, 303);
  });

  // The fix: first the confirmation (how many, what they use of the month), then the marking.
  app.get('/scans/:scanId/fix', { config: { access: 'paid', page: true } }, async (request, reply) => {
    const scan = await scans.get(request.signedIn!.account.id, scanIdOf(request));
    if ((scan.state !== 'done' && scan.state !== 'failed') || scan.commit === null || scan.summary.notOptedOut === 0) return reply.redirect(`/scans/${scan.id}`, 303);
    return showFix(request, reply);
  });

  app.post('/scans/:scanId/fix', { config: { access: 'paid', page: true, csrf: 'session' } }, async (request, reply) => {
    const { user, account } = request.signedIn!;
    const mode = field(request, 'mode') === 'push' ? 'push' : 'zip';
    const token = field(request, 'token');
    const confirm = /^\d{1,9}$/.test(field(request, 'confirm')) ? Number(field(request, 'confirm')) : Number.NaN;
    // Another account's scan is not found, whatever the form holds.
    await scans.get(account.id, scanIdOf(request));
    let outcome;
    try {
      if (!Number.isSafeInteger(confirm)) throw new InvalidOptionError('confirm', 'the number of images to mark', field(request, 'confirm'), 'The confirmation did not say how many images to mark: confirm again below');
      if (mode === 'push' && !token) throw new InvalidOptionError('token', 'a token that may write', '(none)', 'To push a branch, give a token that may write to the repository');
      outcome = await scans.fix(submitter(request), { scanId: scanIdOf(request), confirm, push: mode === 'push', token: token || null });
    } catch (error) {
      if (isFormError(FIX_ERRORS)(error) && wantsPage(request)) return showFix(request, reply, { error: error.message, mode }, STATUS[error.code]);
      throw error;
    }
    // Each marked file leaves a dated service record, as a marking on the Mark page does.
    for (const file of outcome.files) {
      await deps.records.create({ account: { id: account.id, name: account.name }, user, batchId: null, fileName: file.path, sha256Original: file.original, marked: file.marked });
    }
    if (mode === 'push') {
      const pushed = { branch: outcome.branch ?? '', commit: outcome.commit, marked: outcome.files.length, failed: outcome.failed };
      const message = outcome.branch ? `Marked ${outcome.files.length} of ${confirm} images and pushed them on the branch ${outcome.branch}.` : 'No image could be marked, so no branch was pushed.';
      return showScan(request, reply, { ...(outcome.branch ? { pushed } : {}), message });
    }
    return reply
      .headers(PAGE_HEADERS)
      .type('application/zip')
      .header('Content-Disposition', attachment(`${scanIdOf(request)}-fix.zip`))
      .header('X-Optmark-Fix-Marked', String(outcome.files.length))
      .header('X-Optmark-Fix-Failed', String(outcome.failed.length))
      .send(Readable.fromWeb(makeZip(zipEntries(outcome)) as never));
  });
}
