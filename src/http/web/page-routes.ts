/**
 * The signed-in pages: overview, mark, check and account, and the account
 * page's forms (profile, password, members). Marking and checking one image
 * without JavaScript post the page's own form here; with JavaScript the page
 * uses app-routes.ts.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isOptmarkError, TooManyInvitationsError, type OptmarkError } from '../../errors.js';
import { protectOffLoop, protectWithFingerprint } from '../../app/protect-image.js';
import { verdictOf } from '../../app/verdict.js';
import { inspectWithFingerprint } from '../../app/verify-image.js';
import { accountPage, type AccountView } from '../../web/pages/account.js';
import type { User } from '../../app/people/ports.js';
import type { IssuedLink } from '../../app/people/users.js';
import { overviewPage } from '../../web/pages/overview.js';
import { checkPage, checkResultPage, markPage } from '../../web/pages/work.js';
import { runCallWork } from '../call-work.js';
import { STATUS, wantsPage } from '../error-handler.js';
import { holdTicket, readCallUpload } from '../reservation.js';
import { C2PA_HEADER, FINGERPRINT_HEADER, OPT_OUT_HEADER, optOutHeader, RECORD_HEADER } from '../schemas.js';
import { sha256Hex } from '../../core/bytes/digest.js';
import { recordLink } from './app-routes.js';
import { field, formatOf, formDone, pageContext, sendPage, takeNotice, type WebDeps } from './context.js';
import { keepMarking, VAULT_HEADER } from './vault-routes.js';

/** `attachment` with the name twice: plain for old clients, RFC 5987 UTF-8 for the rest. */
export function attachment(filename: string): string {
  const plain = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `attachment; filename="${plain}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

/** Refusals a person can act on: shown on the form, with what was typed kept. (Someone not in the account is a 404, not a form's problem.) */
const FORM_ERRORS = new Set(['invalid_option', 'password_not_accepted', 'user_exists', 'invalid_credentials']);
const formError = (error: unknown): error is OptmarkError => isOptmarkError(error) && FORM_ERRORS.has(error.code);
/**
 * What the image itself was refused for, once it was read whole: the Mark or
 * Check page again, with why and the choices kept, rather than an error page.
 * (A refusal while reading, such as an image over the size limit, closes the
 * connection and is the error page.)
 */
const IMAGE_ERRORS = new Set(['unsupported_image_format', 'corrupt_image', 'image_dimensions_too_large', 'invalid_xmp', 'ambiguous_xmp', 'conflicting_xmp', 'fingerprint_not_possible']);
const imageError = (error: unknown): error is OptmarkError => isOptmarkError(error) && IMAGE_ERRORS.has(error.code);

/** The overview's recent activity: the last few lines a person may see, out of the account's latest. */
const ACTIVITY_SHOWN = 10;
const ACTIVITY_READ = 100;

/**
 * Who sees which line of the account's activity (docs/permissions.md): an
 * owner, every line; a member, what happens to the account's people and
 * what they did themselves, not the others' keys, requests or vault.
 */
function seesActivity(viewer: { readonly id: string; readonly role: string }, entry: { readonly actor: string; readonly action: string }): boolean {
  return viewer.role === 'owner' || entry.actor === viewer.id || entry.action.startsWith('user.') || entry.action.startsWith('member.');
}

export function pageRoutes(app: FastifyInstance, deps: WebDeps): void {
  const { access, people, sessions } = deps;
  const context = (request: FastifyRequest) => pageContext(deps, request);
  const usageOf = (request: FastifyRequest) => access.accountUsage(request.signedIn!.account.id);
  const { inviteLimits } = deps;

  app.get('/overview', { config: { access: 'signed-in', page: true } }, async (request, reply) => {
    const { account, user } = request.signedIn!;
    const [usage, log, members] = await Promise.all([usageOf(request), deps.peopleStore.auditLog(account.id, ACTIVITY_READ), deps.peopleStore.listUsers(account.id)]);
    const activity = log.filter((entry) => seesActivity(user, entry)).slice(0, ACTIVITY_SHOWN);
    const welcome = (request.query as { welcome?: string }).welcome === '1' ? 'Your password is set: you are signed in.' : undefined;
    return sendPage(reply, overviewPage(context(request), { usage, activity, members, format: formatOf(request), message: welcome }));
  });

  const workView = async (request: FastifyRequest, error?: string) => ({ usage: await usageOf(request), format: formatOf(request), maxUploadBytes: deps.upload.maxUploadBytes, error });

  app.get('/mark', { config: { access: 'signed-in', page: true } }, async (request, reply) => sendPage(reply, markPage(context(request), await workView(request))));
  app.get('/check', { config: { access: 'signed-in', page: true } }, async (request, reply) => sendPage(reply, checkPage(context(request), await workView(request))));

  const reserve = (operation: 'protect' | 'verify') => async (request: FastifyRequest, reply: FastifyReply) => {
    const { user, account } = request.signedIn!;
    await holdTicket(request, reply, await access.openForUser({ accountId: account.id, accountName: account.name, plan: account.plan, userId: user.id }, operation));
  };

  // One image, without JavaScript: the marked file comes back as a download.
  app.post('/mark', { config: { access: 'paid', page: true, csrf: 'session', uploadForm: true, upload: true }, preHandler: reserve('protect') }, async (request, reply) => {
    const upload = await readCallUpload(request, deps.upload, ['value', 'fingerprint', 'overwrite', 'otherConstraints']);
    const { fields } = upload;
    const options = {
      value: fields.value || undefined,
      keepExisting: fields.overwrite !== 'on',
      otherConstraints: fields.otherConstraints || undefined,
      filename: upload.filename,
      maxImagePixels: deps.maxImagePixels,
    };
    const { provenance, workers } = deps;
    let result;
    try {
      result = await runCallWork(request, reply, deps.callSeconds, (signal) =>
        fields.fingerprint === 'on'
          ? protectWithFingerprint(upload.bytes, deps.fingerprint, options, { workers, signal, provenance })
          : protectOffLoop(upload.bytes, options, provenance, { workers, signal }),
      );
    } catch (error) {
      // A choice the form can put right (the value, its constraints text), or the image: the form again, as it was sent, with why.
      const byForm = formError(error);
      if ((!byForm && !imageError(error)) || !wantsPage(request)) throw error;
      const markForm = { value: fields.value, otherConstraints: fields.otherConstraints, overwrite: fields.overwrite === 'on', fingerprint: fields.fingerprint === 'on' };
      return sendPage(reply, markPage(context(request), { ...(await workView(request, error.message)), markForm }), byForm ? 422 : STATUS[(error as OptmarkError).code]);
    }
    const { user, account } = request.signedIn!;
    // Its dated service record (docs/records.md): named in a header; the records page lists it.
    const sha256Original = sha256Hex(upload.bytes);
    // Kept in the Private Vault at the same time when the account's is on; the header says what became of it.
    const making = deps.records.create({ account: { id: account.id, name: account.name }, user, batchId: null, fileName: upload.filename ?? '', sha256Original, marked: result });
    const keeping = keepMarking(deps.vault, { account, user, recordId: making.then((r) => r.id), batchId: null, fileName: upload.filename ?? '', original: upload.bytes, sha256Original, marked: result });
    const [record, kept] = await Promise.all([making, keeping]);
    reply.header(RECORD_HEADER, record.id);
    if (kept.state !== 'off') reply.header(VAULT_HEADER, kept.state);
    if (result.c2paInvalidated) reply.header(C2PA_HEADER, 'invalidated');
    if (result.fingerprint) reply.header(FINGERPRINT_HEADER, result.fingerprint);
    reply.header(OPT_OUT_HEADER, optOutHeader(result));
    return reply.type(result.mimeType).header('Content-Disposition', attachment(result.filename)).send(Buffer.from(result.bytes.buffer, result.bytes.byteOffset, result.bytes.byteLength));
  });

  // One image, without JavaScript: a result page, the verdict in words first.
  app.post('/check', { config: { access: 'paid', page: true, csrf: 'session', uploadForm: true, upload: true }, preHandler: reserve('verify') }, async (request, reply) => {
    const upload = await readCallUpload(request, deps.upload);
    let checked;
    try {
      checked = await runCallWork(request, reply, deps.callSeconds, (signal) =>
        inspectWithFingerprint(upload.bytes, { provenance: deps.provenance, fingerprint: deps.fingerprint, maxImagePixels: deps.maxImagePixels, signal, workers: deps.workers }),
      );
    } catch (error) {
      if (!imageError(error) || !wantsPage(request)) throw error;
      return sendPage(reply, checkPage(context(request), await workView(request, `${upload.filename ?? 'The file'}: ${error.message}`)), STATUS[error.code]);
    }
    const { result, details } = checked;
    const record = await recordLink(deps.records, request.signedIn!.account.id, result.sha256);
    return sendPage(reply, checkResultPage(context(request), { filename: upload.filename, result, details, verdict: verdictOf(result, details), record, format: formatOf(request) }));
  });

  const accountView = async (request: FastifyRequest, extra: Partial<AccountView> = {}): Promise<AccountView> => {
    const { user, account } = request.signedIn!;
    const [members, keys] = await Promise.all([deps.peopleStore.listUsers(account.id), deps.admin.listKeys(account.name)]);
    const visibleKeys = user.role === 'owner' ? keys : keys.filter((k) => k.user === user.email);
    return { members, keys: visibleKeys, format: formatOf(request), ...extra };
  };
  const showAccount = async (request: FastifyRequest, reply: FastifyReply, extra: Partial<AccountView> = {}, status = 200) =>
    sendPage(reply, accountPage(context(request), await accountView(request, extra)), status);

  /** A form of the account page done: its message there (after a redirect, for a browser's navigation: context.ts's formDone). */
  const accountDone = (request: FastifyRequest, reply: FastifyReply, form: NonNullable<AccountView['form']>, message: string) =>
    formDone(deps, request, reply, { path: '/account', form, message }, () => showAccount(request, reply, { form, message }));

  app.get('/account', { config: { access: 'signed-in', page: true } }, async (request, reply) => {
    const notice = await takeNotice(deps, request, '/account');
    return showAccount(request, reply, notice ? { form: notice.form as AccountView['form'], message: notice.message } : {});
  });

  app.post('/account/profile', { config: { access: 'signed-in', page: true, csrf: 'session' } }, async (request, reply) => {
    const displayName = field(request, 'displayName');
    const user = await people.setDisplayName(request.signedIn!.user, displayName);
    request.signedIn = { ...request.signedIn!, user };
    return accountDone(request, reply, 'profile', user.displayName ? `Your name is now ${user.displayName}.` : 'Your name is removed.');
  });

  app.post('/account/password', { config: { access: 'signed-in', page: true, csrf: 'session' } }, async (request, reply) => {
    const { user, session } = request.signedIn!;
    try {
      await people.changePassword(user, field(request, 'current'), field(request, 'password'));
    } catch (error) {
      if (formError(error) && wantsPage(request)) return showAccount(request, reply, { form: 'password', error: error.message }, 422);
      throw error;
    }
    await sessions.endOthers(user.id, session.id);
    return accountDone(request, reply, 'password', 'Your password is changed. Your other sessions have ended.');
  });

  app.post('/account/members', { config: { access: 'owner', page: true, csrf: 'session' } }, async (request, reply) => {
    const email = field(request, 'email');
    const role = field(request, 'role') || 'member';
    let invited;
    try {
      await inviteLimits.admit(request.signedIn!.account.id);
      invited = await people.invite(request.signedIn!.user, email, role);
    } catch (error) {
      return invitationRefused(request, reply, error, { form: 'invite', invite: { email, role } });
    }
    return handOver(request, reply, invited, 'invite');
  });

  /** An invitation refused: the page again with why (429 with Retry-After at the hour's brake), or the error itself. */
  function invitationRefused(request: FastifyRequest, reply: FastifyReply, error: unknown, view: Partial<AccountView>) {
    if (!wantsPage(request)) throw error;
    if (error instanceof TooManyInvitationsError) {
      reply.header('Retry-After', String(error.retryAfterSeconds));
      return showAccount(request, reply, { ...view, error: error.message }, 429);
    }
    if (formError(error)) return showAccount(request, reply, { ...view, error: error.message }, 422);
    throw error;
  }

  /** An invitation's link: mailed when mail is set up, or shown to hand over. */
  async function handOver(request: FastifyRequest, reply: FastifyReply, { user, link }: { user: User; link: IssuedLink }, form: 'invite' | 'members') {
    if (deps.mailer.enabled) {
      const from = request.signedIn!.user;
      await deps.mailer.send({
        to: user.email,
        subject: `${from.displayName || from.email} invites you to ${request.signedIn!.account.name} on optmark`,
        text: `${from.displayName || from.email} invites you to the account ${request.signedIn!.account.name} on optmark, as ${user.role}.\n\nChoose your password here (the link works once, for 24 hours):\n${link.url}\n`,
      });
      return accountDone(request, reply, form, `An invitation is mailed to ${user.email}. Its link works once, for 24 hours${form === 'members' ? '; the link sent before no longer works' : ''}.`);
    }
    // The link itself is shown in this answer only: never left in a notice.
    return showAccount(request, reply, { form, invitation: { email: user.email, url: link.url } });
  }

  // A new link for someone invited who has not chosen a password yet (the first one lapsed, or the mail went astray).
  app.post('/account/members/reinvite', { config: { access: 'owner', page: true, csrf: 'session' } }, async (request, reply) => {
    let invited;
    try {
      await inviteLimits.admit(request.signedIn!.account.id);
      invited = await people.reinvite(request.signedIn!.user, field(request, 'user'));
    } catch (error) {
      return invitationRefused(request, reply, error, { form: 'members' });
    }
    return handOver(request, reply, invited, 'members');
  });

  app.post('/account/members/role', { config: { access: 'owner', page: true, csrf: 'session' } }, async (request, reply) => {
    try {
      const changed = await people.changeRole(request.signedIn!.user, field(request, 'user'), field(request, 'role'));
      return await accountDone(request, reply, 'members', `${changed.email} is now ${changed.role === 'owner' ? 'an owner' : 'a member'}.`);
    } catch (error) {
      if (formError(error) && wantsPage(request)) return showAccount(request, reply, { form: 'members', error: error.message }, 422);
      throw error;
    }
  });

  app.post('/account/members/remove', { config: { access: 'owner', page: true, csrf: 'session' } }, async (request, reply) => {
    // Without confirm=yes, the page asks first (the button of the list sends none); one that cannot be removed
    // (not in the account, or oneself) is refused by removeMember below, in words, without asking.
    const { user: me } = request.signedIn!;
    if (field(request, 'confirm') !== 'yes') {
      const view = await accountView(request);
      const member = view.members.find((m) => m.id === field(request, 'user'));
      if (member && member.id !== me.id) {
        const activeKeys = view.keys.filter((k) => k.active && k.user === member.email).length;
        return sendPage(reply, accountPage(context(request), { ...view, confirmRemove: { member, activeKeys } }));
      }
    }
    try {
      const removed = await people.removeMember(request.signedIn!.user, field(request, 'user'));
      return await accountDone(request, reply, 'members', `${removed.email} is removed from the account: their sessions have ended and their API keys are revoked.`);
    } catch (error) {
      if (formError(error) && wantsPage(request)) return showAccount(request, reply, { form: 'members', error: error.message }, 422);
      throw error;
    }
  });
}
