/**
 * JSON for the page scripts of the mark and check pages: a batch, one file
 * marked or checked (each with the session's form token in X-CSRF-Token, the
 * batch's id in X-Batch-Id and the file's own Idempotency-Key), and the
 * usage meters. Every failure is JSON with `error` and `code`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { protectOffLoop, protectWithFingerprint, type ProtectResult } from '../../app/protect-image.js';
import type { Provenance } from '../../app/provenance.js';
import type { Records } from '../../app/records/records.js';
import { checkIdempotencyKey, type Repeats } from '../../app/repeats.js';
import { verdictOf } from '../../app/verdict.js';
import { inspectWithFingerprint } from '../../app/verify-image.js';
import { sha256Hex } from '../../core/bytes/digest.js';
import { DATA_MINING_LABELS, type DataMiningCode } from '../../core/xmp/vocabulary.js';
import { runCallWork } from '../call-work.js';
import { idempotent } from '../idempotent.js';
import { holdTicket, readCallUpload } from '../reservation.js';
import type { WebDeps } from './context.js';
import { keepMarking, vaultFacts } from './vault-routes.js';

const header = (request: FastifyRequest, name: string): string | undefined => {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
};

/** The header holding what a marking did (the body is the marked file itself): percent-encoded JSON. */
export const RESULT_HEADER = 'Optmark-Result';

/** Where a record's certificate is downloaded (the dashboard's, for the account's people: record-routes.ts). */
export const certificateUrl = (recordId: string) => `/history/${recordId}/certificate.pdf`;

/** What the page shows of a marking, beside the file. */
function markFacts(result: ProtectResult, sizeBefore: number, recordId: string | null, vault: ReturnType<typeof vaultFacts>) {
  const value = result.value;
  return {
    /** What the Private Vault did with the original and the marked file (null when the account's vault is off). */
    vault,
    /** The dated service record of this marking, and its certificate (docs/records.md). */
    recordId,
    certificate: recordId === null ? null : certificateUrl(recordId),
    mimeType: result.mimeType,
    filename: result.filename,
    sha256: result.sha256,
    signals: result.signals,
    value,
    valueLabel: DATA_MINING_LABELS[value as DataMiningCode] ?? value,
    /** The file carried this value already (kept, or asked for again). */
    alreadyCarried: result.alreadyCarried,
    /** The plus:OtherConstraints text written with DMI-PROHIBITED-SEECONSTRAINT, or null. */
    otherConstraints: result.otherConstraints ?? null,
    sizeBefore,
    sizeAfter: result.bytes.byteLength,
    changed: result.changed,
    fingerprint: result.fingerprint ?? null,
    /** How a fingerprinted file was re-encoded (the original's format and quality), or null. */
    fingerprintEncoding: result.fingerprintEncoding ?? null,
    c2paInvalidated: result.c2paInvalidated,
  };
}

/** The account's record a checked file belongs to, as the check page links it: it is the marked file, or the original, of that record. */
export async function recordLink(records: Records, accountId: string, sha256: string) {
  const match = await records.matchFor(accountId, sha256);
  if (!match) return null;
  const { record, as } = match;
  return { recordId: record.id, createdAt: record.createdAt.toISOString(), as, fileName: record.fileName, certificate: certificateUrl(record.id), page: `/history?q=${record.sha256Marked}` };
}

/** The dashboard's routes as its Idempotency-Keys are kept: apart from the API's, so one key never answers both. */
const ROUTES = { protect: 'mark', verify: 'check' } as const;

export function appRoutes(app: FastifyInstance, deps: WebDeps & { readonly repeats: Repeats; readonly requestTimeoutMs: number }): void {
  const { access, repeats } = deps;

  /**
   * Before the body is read: one unit of the account reserved, then the
   * file's place in its batch. In that order, a call refused for the month's
   * limit or for too many calls at once takes no place (25 such refusals
   * filled a batch that had marked nothing); one refused for a full batch
   * gives its unit back with its answer, as every failure does.
   */
  const admit = (operation: 'protect' | 'verify') => async (request: FastifyRequest, reply: FastifyReply) => {
    const { user, account } = request.signedIn!;
    const key = checkIdempotencyKey(header(request, 'idempotency-key'));
    const batch = header(request, 'x-batch-id');
    // The repeat of a file that was marked or checked is answered again at the month's limit too: it counts nothing.
    const countsNothing = key === undefined ? undefined : (accountId: string) => repeats.succeeded(accountId, ROUTES[operation], key);
    await holdTicket(request, reply, await access.openForUser({ accountId: account.id, accountName: account.name, plan: account.plan, userId: user.id }, operation, countsNothing));
    if (batch !== undefined) await repeats.admitToBatch(batch, account.id, key);
  };

  app.post('/app/batches', { config: { access: 'paid', csrf: 'session' } }, async (request) => {
    const { user, account } = request.signedIn!;
    return repeats.createBatch(account.id, user.id);
  });

  app.get('/app/usage', { config: { access: 'signed-in' } }, async (request) => access.accountUsage(request.signedIn!.account.id));

  app.post('/app/mark', { config: { access: 'paid', csrf: 'session', upload: true }, preHandler: admit('protect') }, async (request, reply) => {
    const { user, account } = request.signedIn!;
    const upload = await readCallUpload(request, deps.upload, ['value', 'fingerprint', 'overwrite', 'otherConstraints']);
    let original: string | undefined;
    const sha256Original = () => (original ??= sha256Hex(upload.bytes));
    const value = upload.fields.value || undefined;
    const otherConstraints = upload.fields.otherConstraints || undefined;
    const keepExisting = upload.fields.overwrite !== 'on';
    const layers = upload.fields.fingerprint === 'on' ? ['fingerprint'] : [];
    const run = (provenance: Provenance) =>
      runCallWork(request, reply, deps.callSeconds, (signal) => {
        const options = { value, keepExisting, otherConstraints, filename: upload.filename, maxImagePixels: deps.maxImagePixels };
        const server = { workers: deps.workers, signal, provenance };
        return layers.includes('fingerprint') ? protectWithFingerprint(upload.bytes, deps.fingerprint, options, server) : protectOffLoop(upload.bytes, options, provenance, server);
      });
    const marked = await idempotent(request, reply, {
      repeats,
      accountId: request.signedIn!.account.id,
      route: ROUTES.protect,
      key: checkIdempotencyKey(header(request, 'idempotency-key')),
      // The text is one of the options (absent, it leaves the hash as it was before the text existed).
      requestHash: () => repeats.requestHash(sha256Original(), { value: value ?? null, keepExisting, layers, otherConstraints }),
      waitMs: deps.requestTimeoutMs,
      async run() {
        const iat = Math.floor(deps.clock().getTime() / 1000);
        const result = await run(deps.provenance.at(iat));
        // Its dated service record, made once: a repeat of this call is answered with the same record. Kept
        // in the Private Vault at the same time when the account's is on (the original and the marked file,
        // before the answer); the vault's file names the record once it is made, and goes if it is not.
        const making = deps.records.create({
          account: { id: account.id, name: account.name },
          user,
          batchId: header(request, 'x-batch-id') ?? null,
          fileName: upload.filename ?? '',
          sha256Original: sha256Original(),
          marked: result,
        });
        const keeping = keepMarking(deps.vault, { account, user, recordId: making.then((r) => r.id), batchId: header(request, 'x-batch-id') ?? null, fileName: upload.filename ?? '', original: upload.bytes, sha256Original: sha256Original(), marked: result });
        const [record, kept] = await Promise.all([making, keeping]);
        const vault = vaultFacts(kept);
        return {
          answer: { result, recordId: record.id, vault },
          kept: { iat, kid: deps.provenance.activeKid(), sha256: result.sha256, filename: result.filename, mimeType: result.mimeType, recordId: record.id, vault },
        };
      },
      replay: async (kept) => ({
        result: await run(deps.provenance.at(Number(kept.iat))),
        recordId: typeof kept.recordId === 'string' ? kept.recordId : null,
        vault: (kept.vault ?? null) as ReturnType<typeof vaultFacts>,
      }),
    });
    if (marked === undefined) return reply;
    const { result } = marked;
    // The file itself, not base64 in JSON: the page keeps it as a Blob for the download and the zip.
    return reply
      .type(result.mimeType)
      .header(RESULT_HEADER, encodeURIComponent(JSON.stringify(markFacts(result, upload.bytes.byteLength, marked.recordId, marked.vault))))
      .send(Buffer.from(result.bytes.buffer, result.bytes.byteOffset, result.bytes.byteLength));
  });

  app.post('/app/check', { config: { access: 'paid', csrf: 'session', upload: true }, preHandler: admit('verify') }, async (request, reply) => {
    const upload = await readCallUpload(request, deps.upload);
    const check = async () => {
      const { result, details } = await runCallWork(request, reply, deps.callSeconds, (signal) =>
        inspectWithFingerprint(upload.bytes, { provenance: deps.provenance, fingerprint: deps.fingerprint, maxImagePixels: deps.maxImagePixels, signal, workers: deps.workers }),
      );
      const record = await recordLink(deps.records, request.signedIn!.account.id, result.sha256);
      return { filename: upload.filename ?? null, result, details, verdict: verdictOf(result, details), record };
    };
    return idempotent(request, reply, {
      repeats,
      accountId: request.signedIn!.account.id,
      route: ROUTES.verify,
      key: checkIdempotencyKey(header(request, 'idempotency-key')),
      requestHash: () => repeats.requestHash(sha256Hex(upload.bytes), {}),
      waitMs: deps.requestTimeoutMs,
      async run() {
        const answer = await check();
        return { answer, kept: { sha256: answer.result.sha256 } };
      },
      replay: () => check(),
    });
  });
}
