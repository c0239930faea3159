/**
 * Dated service records on the people's side (docs/records.md): the records
 * page (search, CSV export), the certificates (one record, one batch) for the
 * account's people only, the owner's switch for the public lookup, and the
 * public lookup itself: a marked file's hash, answered for anyone when the
 * account turned it on (a page, or JSON with `Accept: application/json`),
 * else 404 as for a hash nobody marked.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceRecord } from '../../app/records/ports.js';
import { filterOf, type SearchInput } from '../../app/records/records.js';
import { InvalidOptionError } from '../../errors.js';
import { publicRecordPage, recordsPage, type RecordsQuery, type RecordsView } from '../../web/pages/records.js';
import { STATUS, wantsPage } from '../error-handler.js';
import { PAGE_HEADERS } from '../page-headers.js';
import { attachment } from './page-routes.js';
import { csvField } from '../../core/csv.js';
import { field, formatOf, formDone, pageContext, sendPage, takeNotice, type WebDeps } from './context.js';

const CSV_COLUMNS = ['recordId', 'createdAt', 'fileName', 'user', 'sha256Original', 'sha256Marked', 'value', 'layers', 'kid', 'batchId', 'publicJws', 'privateJws'] as const;


function csvLine(record: ServiceRecord): string {
  return `${[
    csvField(record.id),
    csvField(record.createdAt.toISOString()),
    csvField(record.fileName, true),
    csvField(record.userEmail, true),
    csvField(record.sha256Original),
    csvField(record.sha256Marked),
    csvField(record.value),
    csvField(JSON.stringify(record.layers)),
    csvField(record.kid),
    csvField(record.batchId ?? ''),
    csvField(record.publicJws),
    csvField(record.privateJws),
  ].join(',')}\r\n`;
}

/** A JSON answer rather than a page: the client asks for JSON and not for HTML (as the error pages decide). */
const wantsJson = (request: FastifyRequest) => {
  const accept = request.headers.accept ?? '';
  return accept.includes('application/json') && !accept.includes('text/html');
};

const pdf = (reply: FastifyReply, name: string, bytes: Uint8Array) =>
  reply.headers(PAGE_HEADERS).type('application/pdf').header('Content-Disposition', attachment(name)).send(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));

export function recordRoutes(app: FastifyInstance, deps: WebDeps): void {
  const { records } = deps;
  const text = (value: unknown) => (typeof value === 'string' ? value : '');
  const queryOf = (request: FastifyRequest): RecordsQuery & SearchInput => {
    const q = request.query as Record<string, unknown>;
    return { q: text(q.q), from: text(q.from), to: text(q.to), page: text(q.page) };
  };

  async function showRecords(request: FastifyRequest, reply: FastifyReply, extra: Partial<RecordsView> = {}, status = 200): Promise<FastifyReply> {
    const { account } = request.signedIn!;
    const query = queryOf(request);
    let found: { records: ServiceRecord[]; total: number; page: number; pageSize: number } = { records: [], total: 0, page: 1, pageSize: 50 };
    let error = extra.error;
    try {
      found = await records.search(account.id, query);
    } catch (caught) {
      // A search that cannot be run (a date that is not one) is said on the page, with what was typed.
      if (!(caught instanceof InvalidOptionError) || !wantsPage(request)) throw caught;
      error = caught.message;
      status = STATUS[caught.code];
    }
    const view: RecordsView = { ...found, query: { q: query.q, from: query.from, to: query.to }, publicLookup: await records.publicLookupEnabled(account.id), format: formatOf(request), ...extra, error };
    return sendPage(reply, recordsPage(pageContext(deps, request), view), status);
  }

  app.get('/history', { config: { access: 'signed-in', page: true } }, async (request, reply) => {
    const notice = await takeNotice(deps, request, '/history');
    return showRecords(request, reply, notice ? { message: notice.message } : {});
  });

  app.get('/history/export.csv', { config: { access: 'signed-in', page: true } }, async (request, reply) => {
    const { account } = request.signedIn!;
    const query = queryOf(request);
    filterOf(query); // a search that cannot be run is refused before the answer starts
    async function* lines() {
      yield `\uFEFF${CSV_COLUMNS.join(',')}\r\n`;
      for await (const record of records.all(account.id, query)) yield csvLine(record);
    }
    const day = deps.clock().toISOString().slice(0, 10);
    return reply.headers(PAGE_HEADERS).type('text/csv; charset=utf-8').header('Content-Disposition', attachment(`optmark-records-${day}.csv`)).send(Readable.from(lines()));
  });

  app.post('/history/public-lookup', { config: { access: 'owner', page: true, csrf: 'session' } }, async (request, reply) => {
    const wanted = field(request, 'enabled');
    if (wanted !== 'on' && wanted !== 'off') throw new InvalidOptionError('enabled', '"on" or "off"', wanted);
    await records.setPublicLookup(request.signedIn!.user, wanted === 'on', request.ip);
    const message = wanted === 'on' ? 'The public lookup is on: anyone with a file your account marked can look its SHA-256 up.' : 'The public lookup is off: nobody outside the account can look your records up.';
    return formDone(deps, request, reply, { path: '/history', message }, () => showRecords(request, reply, { message }));
  });

  app.get('/history/:recordId/certificate.pdf', { config: { access: 'signed-in', page: true } }, async (request, reply) => {
    const { account } = request.signedIn!;
    const { record, pdf: bytes } = await records.certificate(account, (request.params as { recordId: string }).recordId);
    return pdf(reply, `optmark-certificate-${record.id}.pdf`, bytes);
  });

  app.get('/history/batches/:batchId/certificate.pdf', { config: { access: 'signed-in', page: true } }, async (request, reply) => {
    const { account } = request.signedIn!;
    const batchId = (request.params as { batchId: string }).batchId;
    return pdf(reply, `optmark-certificate-${batchId}.pdf`, await records.batchCertificate(account, batchId));
  });

  // The public lookup: anyone, a marked file's hash only, only where the account turned it on.
  app.get('/records/:sha256', { config: { access: 'public', page: true } }, async (request, reply) => {
    const sha256 = (request.params as { sha256: string }).sha256;
    const found = await records.publicLookup(sha256);
    const normal = sha256.toLowerCase();
    if (wantsJson(request)) {
      return reply
        .headers(PAGE_HEADERS)
        .type('application/json; charset=utf-8')
        .send({ sha256Marked: normal, records: found.map((r) => ({ markedAt: r.createdAt.toISOString(), value: r.value, jws: r.publicJws })) });
    }
    return sendPage(reply, publicRecordPage(pageContext(deps, request), { sha256: normal, records: found, format: formatOf(request) }));
  });
}
