/**
 * API access on the people's side: the API keys page and its forms
 * (request, withdraw, reveal, roll, revoke), and the operator console
 * (approve, deny, revoke). A key made here (reveal, roll) is in that one
 * answer only, a page sent with `Cache-Control: no-store` like every page.
 * A refusal a person can act on is shown on the page with what they typed;
 * another account's request or key is a 404, as if it did not exist.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { keyActive, type Actor } from '../../app/access/access.js';
import { openAccount } from '../../app/people/new-account.js';
import { createScanOperations } from '../../app/scans/operations.js';
import { InvalidOptionError, isOptmarkError, type OptmarkError } from '../../errors.js';
import { keysPage, type KeysView, type RequestForm } from '../../web/pages/keys.js';
import { planName } from '../../web/layout.js';
import { operatorPage, type OperatorView } from '../../web/pages/operator.js';
import { STATUS, wantsPage } from '../error-handler.js';
import { field, formatOf, formDone, pageContext, sendPage, takeNotice, type WebDeps } from './context.js';

const FORM_ERRORS = new Set(['invalid_option', 'access_request_exists', 'access_request_not_pending', 'grant_not_available', 'too_many_keys', 'account_exists', 'user_exists']);
const formError = (error: unknown): error is OptmarkError => isOptmarkError(error) && FORM_ERRORS.has(error.code);

const all = (request: FastifyRequest, name: string): string[] => (request.body instanceof URLSearchParams ? request.body.getAll(name) : []);

export function accessRoutes(app: FastifyInstance, deps: WebDeps): void {
  const { apiKeys } = deps;
  const person = (request: FastifyRequest): Extract<Actor, { kind: 'person' }> => {
    const { user, account } = request.signedIn!;
    return { kind: 'person', user, plan: account.plan, address: request.ip };
  };

  async function showKeys(request: FastifyRequest, reply: FastifyReply, extra: Partial<KeysView> = {}, status = 200): Promise<FastifyReply> {
    const { user } = request.signedIn!;
    const [requests, keys, activity] = await Promise.all([apiKeys.listFor(user), apiKeys.keysFor(user), user.role === 'owner' ? apiKeys.auditFor(user.accountId) : Promise.resolve(undefined)]);
    return sendPage(reply, keysPage(pageContext(deps, request), { requests, keys, activity, format: formatOf(request), now: deps.clock(), ...extra }), status);
  }

  /**
   * Run a form's action; a refusal the person can act on is shown on the
   * page, with what they typed. What was done is said on the keys page (after
   * a redirect, for a browser's navigation: context.ts's formDone), but a key
   * made (reveal, roll) is shown in this answer only.
   */
  async function onKeys(request: FastifyRequest, reply: FastifyReply, action: () => Promise<Partial<KeysView>>, form?: RequestForm): Promise<FastifyReply> {
    try {
      const done = await action();
      if (done.message !== undefined && done.revealed === undefined) {
        return await formDone(deps, request, reply, { path: '/keys', message: done.message }, () => showKeys(request, reply, done));
      }
      return await showKeys(request, reply, done);
    } catch (error) {
      if (formError(error) && wantsPage(request)) return showKeys(request, reply, { error: error.message, ...(form ? { form } : {}) }, STATUS[error.code]);
      throw error;
    }
  }

  app.get('/keys', { config: { access: 'signed-in', page: true } }, async (request, reply) => {
    const notice = await takeNotice(deps, request, '/keys');
    return showKeys(request, reply, notice ? { message: notice.message } : {});
  });

  app.post('/keys/requests', { config: { access: 'paid', page: true, csrf: 'session' } }, async (request, reply) => {
    const form: RequestForm = { name: field(request, 'name'), purpose: field(request, 'purpose'), monthlyVolume: field(request, 'monthlyVolume'), scopes: all(request, 'scopes'), contact: field(request, 'contact') };
    return onKeys(
      request,
      reply,
      async () => {
        const made = await apiKeys.request(person(request), form);
        return { message: `Your request for ${made.name} is sent to the service's team. You will see their decision here.` };
      },
      form,
    );
  });

  app.post('/keys/requests/withdraw', { config: { access: 'paid', page: true, csrf: 'session' } }, async (request, reply) =>
    onKeys(request, reply, async () => {
      const withdrawn = await apiKeys.withdraw(person(request), field(request, 'request'));
      return { message: `The request for ${withdrawn.name} is withdrawn.` };
    }),
  );

  app.post('/keys/reveal', { config: { access: 'paid', page: true, csrf: 'session' } }, async (request, reply) =>
    onKeys(request, reply, async () => ({ revealed: await apiKeys.reveal(person(request), field(request, 'request')) })),
  );

  app.post('/keys/roll', { config: { access: 'paid', page: true, csrf: 'session' } }, async (request, reply) => {
    const days = field(request, 'overlapDays');
    return onKeys(request, reply, async () => {
      const overlap = /^\d{1,2}$/.test(days) ? Number(days) : Number.NaN;
      return { revealed: await apiKeys.roll(person(request), field(request, 'key'), overlap) };
    });
  });

  app.post('/keys/revoke', { config: { access: 'signed-in', page: true, csrf: 'session' } }, async (request, reply) => {
    // Without confirm=yes, the page asks first (the button of the list sends none); a key that cannot be
    // revoked (not found, not theirs, already stopped) is refused by revoke below, in words, without asking.
    if (field(request, 'confirm') !== 'yes') {
      const { user } = request.signedIn!;
      const key = await apiKeys.findKey(field(request, 'key'));
      if (key && keyActive(key, deps.clock())) {
        // A key the person sees on this page: an owner's account's, a member's own.
        if (key.accountId === user.accountId && (user.role === 'owner' || key.userId === user.id)) return showKeys(request, reply, { confirmRevoke: key });
        // An operator may revoke any other key here too: asked as on the console, naming its account.
        if (user.operator) return showConsole(request, reply, { confirmRevoke: key });
      }
    }
    return onKeys(request, reply, async () => {
      const revoked = await apiKeys.revoke(person(request), field(request, 'key'));
      return { message: `The key ${revoked.prefix}… is revoked: calls with it get 401 from now on.` };
    });
  });

  // ---- the operator console -------------------------------------------------------------------

  async function showConsole(request: FastifyRequest, reply: FastifyReply, extra: Partial<OperatorView> = {}, status = 200): Promise<FastifyReply> {
    // The console's audit log: access and keys, and the scans' service-wide switches.
    const [requests, keys, audit, scanStatus] = await Promise.all([
      apiKeys.listAll(),
      apiKeys.allKeys(),
      deps.peopleStore.serviceAuditLog(['access.', 'key.', 'scans.', 'account.'], 200),
      deps.scans ? deps.scans.status() : Promise.resolve(undefined),
    ]);
    const pending = requests.filter((r) => r.state === 'pending');
    const history = new Map(await Promise.all([...new Set(pending.map((r) => r.accountId))].map(async (id) => [id, await apiKeys.history(id)] as const)));
    const view: OperatorView = { pending, decided: requests.filter((r) => r.state !== 'pending').slice(0, 100), history, keys, audit, ...(scanStatus ? { scans: scanStatus } : {}), format: formatOf(request), now: deps.clock(), ...extra };
    return sendPage(reply, operatorPage(pageContext(deps, request), view), status);
  }

  /** As onKeys, for the console: what was done is said on it (after a redirect, for a browser's navigation). */
  async function onConsole(request: FastifyRequest, reply: FastifyReply, action: () => Promise<string>, failed?: OperatorView['failed']): Promise<FastifyReply> {
    try {
      const message = await action();
      return await consoleDone(request, reply, message);
    } catch (error) {
      if (formError(error) && wantsPage(request)) return showConsole(request, reply, { error: error.message, ...(failed ? { failed } : {}) }, STATUS[error.code]);
      throw error;
    }
  }

  const consoleDone = (request: FastifyRequest, reply: FastifyReply, message: string) =>
    formDone(deps, request, reply, { path: '/operator', message }, () => showConsole(request, reply, { message }));

  app.get('/operator', { config: { access: 'operator', page: true } }, async (request, reply) => {
    const notice = await takeNotice(deps, request, '/operator');
    return showConsole(request, reply, notice ? { message: notice.message } : {});
  });

  app.post('/operator/requests/approve', { config: { access: 'operator', page: true, csrf: 'session' } }, async (request, reply) => {
    const id = field(request, 'request');
    const days = field(request, 'expiresInDays').trim();
    const scopes = all(request, 'scopes');
    return onConsole(
      request,
      reply,
      async () => {
        const expiresInDays = days === '' ? null : /^\d{1,5}$/.test(days) ? Number(days) : Number.NaN;
        const { request: approved, mailed } = await apiKeys.approve(person(request), id, { scopes, expiresInDays });
        return `Approved ${approved.name} for ${approved.accountName} (${approved.grantedScopes!.join(', ')}). ${approved.userEmail} can reveal the key for 14 days${mailed ? ' and was told by mail' : ''}.`;
      },
      { request: id, days, scopes },
    );
  });

  app.post('/operator/requests/deny', { config: { access: 'operator', page: true, csrf: 'session' } }, async (request, reply) => {
    const id = field(request, 'request');
    const reason = field(request, 'reason');
    return onConsole(
      request,
      reply,
      async () => {
        const { request: denied, mailed } = await apiKeys.deny(person(request), id, reason);
        return `Denied ${denied.name} for ${denied.accountName}. ${denied.userEmail} sees the reason${mailed ? ' and was told by mail' : ''}.`;
      },
      { request: id, reason },
    );
  });

  app.post('/operator/keys/revoke', { config: { access: 'operator', page: true, csrf: 'session' } }, async (request, reply) => {
    // As on the keys page: asked first without confirm=yes (a key that cannot be revoked is refused below, in words).
    if (field(request, 'confirm') !== 'yes') {
      const key = await apiKeys.findKey(field(request, 'key'));
      if (key && keyActive(key, deps.clock())) return showConsole(request, reply, { confirmRevoke: key });
    }
    return onConsole(request, reply, async () => {
      const revoked = await apiKeys.revoke(person(request), field(request, 'key'));
      return `Revoked ${revoked.prefix}… of ${revoked.accountName}: calls with it get 401 from now on.`;
    });
  });

  // ---- the operator console: accounts ------------------------------------------------------------

  app.post('/operator/accounts', { config: { access: 'operator', page: true, csrf: 'session' } }, async (request, reply) => {
    const typed = { name: field(request, 'name').trim(), plan: field(request, 'plan'), email: field(request, 'email').trim() };
    const operator = request.signedIn!.user;
    try {
      const opened = await openAccount(deps, { name: typed.name, plan: typed.plan, ownerEmail: typed.email, actor: { id: operator.id, email: operator.email } });
      const { account, owner, link } = opened;
      const mailed =
        deps.mailer.enabled &&
        (await deps.mailer
          .send({
            to: owner.email,
            subject: `Your optmark account ${account.name} is ready`,
            text: `The optmark team opened the account ${account.name} (${planName(account.plan)} plan) with you as its owner.\n\nChoose your password here (the link works once, for 24 hours):\n${link.url}\n`,
          })
          .then(
            () => true,
            (error: unknown) => {
              // The account is open all the same: the console shows the link to hand over instead.
              request.log.warn({ err: error }, 'could not mail the set-up link of a new account');
              return false;
            },
          ));
      if (mailed) {
        return await consoleDone(request, reply, `The account ${account.name} (${planName(account.plan)}) is open; its owner ${owner.email} was sent a set-up link by mail (it works once, for 24 hours).`);
      }
      // The set-up link itself is shown in this answer only: never left in a notice.
      return showConsole(request, reply, { opened: { account: account.name, plan: account.plan, email: owner.email, url: link.url } });
    } catch (error) {
      if (formError(error) && wantsPage(request)) return showConsole(request, reply, { error: error.message, failed: { request: 'new-account', account: typed } }, STATUS[error.code]);
      throw error;
    }
  });

  // ---- the operator console: repository scans, service-wide -------------------------------------

  const scans = deps.scans;
  if (!scans) return;
  const operations = createScanOperations({ scans });
  const operator = (request: FastifyRequest) => ({ user: request.signedIn!.user, address: request.ip });

  app.post('/operator/scans/pause', { config: { access: 'operator', page: true, csrf: 'session' } }, async (request, reply) =>
    onConsole(request, reply, async () => {
      await operations.pause(operator(request));
      return 'New repository scans are paused for everyone: people are told it is service-wide and temporary. Scans already running finish.';
    }),
  );

  app.post('/operator/scans/resume', { config: { access: 'operator', page: true, csrf: 'session' } }, async (request, reply) =>
    onConsole(request, reply, async () => {
      await operations.resume(operator(request));
      return 'Repository scans are open again, up to the day’s ceiling.';
    }),
  );

  app.post('/operator/scans/ceiling', { config: { access: 'operator', page: true, csrf: 'session' } }, async (request, reply) => {
    const typed = field(request, 'ceiling').trim();
    return onConsole(
      request,
      reply,
      async () => {
        if (!/^\d{1,9}$/.test(typed)) throw new InvalidOptionError('ceiling', 'a whole number of scans, from 0 to 999,999,999', typed.slice(0, 40), "Type today's ceiling as a whole number of scans, from 0 to 999,999,999");
        const perDay = Number(typed);
        const { from, to } = await operations.setCeiling(operator(request), perDay);
        return `Today's ceiling is now ${to} scans for the whole service (it was ${from}).`;
      },
      { request: 'scans-ceiling', ceiling: typed },
    );
  });
}
