/**
 * The Private Vault on the people's side (docs/vault.md): its page (the
 * meter, the owner's switch, search, the files with their previews), one
 * file's original or marked bytes, a ZIP of the files chosen, their
 * removal, and what a marking of the dashboard tells about it. Members see
 * and remove the files they marked; owners every file of the account;
 * nobody else any (404, as for a file that is not there).
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { User } from '../../app/people/ports.js';
import type { VaultViewer } from '../../app/vault/ports.js';
import type { KeepInput, KeepOutcome, Vault } from '../../app/vault/vault.js';
import { sniff } from '../../core/formats/sniff.js';
import { InvalidOptionError } from '../../errors.js';
import { formatFor, type Format } from '../../web/format.js';
import { vaultPage, type VaultView } from '../../web/pages/vault.js';
import { STATUS, wantsPage } from '../error-handler.js';
import { PAGE_HEADERS } from '../page-headers.js';
import { attachment } from './page-routes.js';
import { field, formatOf, formDone, pageContext, sendPage, takeNotice, type WebDeps } from './context.js';

/** The header of the page without JavaScript's marking: what the vault did with the file (stored, full, not_stored), when it is on. */
export const VAULT_HEADER = 'Optmark-Vault';

const viewerOf = (request: FastifyRequest): VaultViewer => {
  const { user } = request.signedIn!;
  return { accountId: user.accountId, userId: user.id, owner: user.role === 'owner' };
};

/** What a marking's answer says of the vault (null when it is off). */
export function vaultFacts(outcome: KeepOutcome | null, f: Format = formatFor('en')) {
  if (outcome === null || outcome.state === 'off') return null;
  if (outcome.state === 'stored') return { state: 'stored', fileId: outcome.fileId, message: 'Kept in your Private Vault (the original and the marked file).' };
  if (outcome.state === 'full') {
    return {
      state: 'full',
      used: outcome.used,
      limit: outcome.limit,
      needed: outcome.needed,
      message: `Not kept in your Private Vault: it is full (${f.bytes(outcome.used)} of ${f.bytes(outcome.limit)} used; this marking needs ${f.bytes(outcome.needed)} more). The file is marked all the same.`,
    };
  }
  return { state: 'not_stored', message: "Not kept in your Private Vault: its storage could not be written just now. The file is marked all the same." };
}

/** Keep a dashboard marking in the account's vault (when it is on); never fails the marking. */
export async function keepMarking(
  vault: Vault,
  input: { account: { id: string }; user: Pick<User, 'id' | 'email'>; recordId: Promise<string>; batchId: string | null; fileName: string; original: Uint8Array; sha256Original: string; marked: { bytes: Uint8Array; sha256: string; mimeType: string; filename: string } },
): Promise<KeepOutcome> {
  const keep: KeepInput = {
    account: input.account,
    user: input.user,
    recordId: input.recordId,
    batchId: input.batchId,
    original: { bytes: input.original, sha256: input.sha256Original, mimeType: sniff(input.original).mimeType, name: input.fileName },
    marked: { bytes: input.marked.bytes, sha256: input.marked.sha256, mimeType: input.marked.mimeType, name: input.marked.filename },
  };
  return vault.keep(keep);
}

/** The ids a form chose (`id`, once per file). */
const chosen = (request: FastifyRequest): string[] => (request.body instanceof URLSearchParams ? request.body.getAll('id').filter((id) => id !== '') : []);

export function vaultRoutes(app: FastifyInstance, deps: WebDeps): void {
  const { vault } = deps;
  const text = (value: unknown) => (typeof value === 'string' ? value : '');

  async function showVault(request: FastifyRequest, reply: FastifyReply, extra: Partial<VaultView> = {}, status = 200): Promise<FastifyReply> {
    const q = request.query as Record<string, unknown>;
    const query = { q: text(q.q), page: text(q.page) };
    let error = extra.error;
    let found: { files: VaultView['files']; total: number; page: number; pageSize: number } = { files: [], total: 0, page: 1, pageSize: 50 };
    try {
      found = await vault.search(viewerOf(request), query);
    } catch (caught) {
      if (!(caught instanceof InvalidOptionError) || !wantsPage(request)) throw caught;
      error = caught.message;
      status = STATUS[caught.code];
    }
    const view: VaultView = { ...found, status: await vault.status(request.signedIn!.account.id), query: { q: query.q }, format: formatOf(request), ...extra, error };
    return sendPage(reply, vaultPage(pageContext(deps, request), view), status);
  }

  /** What a form of the vault page did: said there (after a redirect, for a browser's navigation: context.ts's formDone). */
  const vaultDone = (request: FastifyRequest, reply: FastifyReply, message: string) =>
    formDone(deps, request, reply, { path: '/vault', message }, () => showVault(request, reply, { message }));

  app.get('/vault', { config: { access: 'signed-in', page: true } }, async (request, reply) => {
    const notice = await takeNotice(deps, request, '/vault');
    return showVault(request, reply, notice ? { message: notice.message } : {});
  });

  app.post('/vault/settings', { config: { access: 'owner', page: true, csrf: 'session' } }, async (request, reply) => {
    const { user, account } = request.signedIn!;
    const wanted = field(request, 'enabled');
    if (wanted !== 'on' && wanted !== 'off') throw new InvalidOptionError('enabled', '"on" or "off"', wanted);
    const removeFiles = wanted === 'off' && field(request, 'files') === 'delete';
    // Deleting everything asks first (vault.js in a dialog, which then says yes; without JavaScript, the page).
    if (removeFiles && field(request, 'confirm') !== 'yes') {
      const status = await vault.status(account.id);
      if (status.files > 0) return showVault(request, reply, { confirmDelete: { kind: 'all', turnOff: status.enabled && account.plan !== 'free' } });
    }
    const { removed } = await vault.setEnabled(user, account.plan, wanted === 'on', removeFiles, request.ip);
    const f = formatOf(request);
    const message =
      wanted === 'on'
        ? 'The Private Vault is on: from now on, every file marked on the Mark page is kept here, the original and the marked file.'
        : removeFiles
          ? `The Private Vault is off, and everything it held is deleted (${f.number(removed)} marking${removed === 1 ? '' : 's'}).`
          : 'The Private Vault is off: nothing new is kept. The files already kept stay until you delete them.';
    return vaultDone(request, reply, message);
  });

  app.get('/vault/:fileId/:which', { config: { access: 'signed-in', page: true } }, async (request, reply) => {
    const { fileId, which } = request.params as { fileId: string; which: string };
    const found = await vault.read(viewerOf(request), fileId, which);
    const disposition = (request.query as Record<string, unknown>).download === '1' ? attachment(found.name || `${fileId}-${which}`) : 'inline';
    return reply
      .headers(PAGE_HEADERS)
      .header('Cache-Control', 'private, no-store')
      .header('Content-Disposition', disposition)
      .type(found.mimeType)
      .send(found.bytes);
  });

  app.post('/vault/download', { config: { access: 'signed-in', page: true, csrf: 'session' } }, async (request, reply) => {
    const { files, stream } = await vault.archive(viewerOf(request), chosen(request));
    const day = deps.clock().toISOString().slice(0, 10);
    return reply
      .headers(PAGE_HEADERS)
      .header('Cache-Control', 'private, no-store')
      .type('application/zip')
      .header('Content-Disposition', attachment(files.length === 1 ? `optmark-vault-${files[0]!.id}.zip` : `optmark-vault-${day}.zip`))
      .send(Readable.from(stream));
  });

  app.post('/vault/delete', { config: { access: 'signed-in', page: true, csrf: 'session' } }, async (request, reply) => {
    const { user } = request.signedIn!;
    const ids = chosen(request);
    if (ids.length > 0 && field(request, 'confirm') !== 'yes') {
      const files = await vault.chosen(viewerOf(request), ids);
      return showVault(request, reply, { confirmDelete: { kind: 'chosen', files } });
    }
    const removed = await vault.remove(viewerOf(request), ids, user, request.ip);
    const f = formatOf(request);
    return vaultDone(request, reply, `Deleted ${f.number(removed)} marking${removed === 1 ? '' : 's'} from the vault: the originals and the marked files, and their bytes in storage.`);
  });

}
