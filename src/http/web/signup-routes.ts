/**
 * A visitor's own Free account (OPTMARK_SIGNUP=open; app/people/signup.ts):
 * the email asked for, a link mailed to it, then the account's name and the
 * owner's password, and the person is signed in. The page answers the same
 * whether or not the email has an account already (that address is mailed a
 * note instead), under the same brake as sign-in. With sign-up off every
 * route here is 404.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isOptmarkError, LinkNotValidError, RequestError } from '../../errors.js';
import type { SignUps } from '../../app/people/signup.js';
import { normaliseEmail } from '../../app/people/users.js';
import { linkNotValidPage, signUpConfirmPage, signUpPage } from '../../web/pages/auth.js';
import { wantsPage } from '../error-handler.js';
import { field, pageContext, sendPage, type WebDeps } from './context.js';
import type { Guard } from './guard.js';

export function signupRoutes(app: FastifyInstance, deps: WebDeps, guard: Guard): void {
  const context = (request: FastifyRequest) => pageContext(deps, request);
  /** The sign-ups, or 404 where the deployment does not take them. */
  const open = (): SignUps => {
    if (!deps.signUps) throw new RequestError('not_found', "This deployment does not take sign-ups: the service's team opens accounts");
    return deps.signUps;
  };

  app.get('/sign-up', { config: { access: 'public', page: true } }, async (request, reply) => {
    open();
    if (request.signedIn) return reply.redirect('/overview', 303);
    return sendPage(reply, signUpPage(context(request), { pre: guard.preSession(request, reply) }));
  });

  app.post('/sign-up', { config: { access: 'public', page: true, csrf: 'pre-session' } }, async (request, reply) => {
    open();
    const email = field(request, 'email').trim();
    // The brake of sign-in and "forgot your password": per address, and per address and email.
    await deps.signInLimits.admit(request.ip, email);
    let address: string;
    try {
      address = normaliseEmail(email);
    } catch (error) {
      if (isOptmarkError(error) && error.code === 'invalid_option' && wantsPage(request)) {
        return sendPage(reply, signUpPage(context(request), { pre: guard.preSession(request, reply), email, error: 'Give an email address such as name@example.com.' }), 422);
      }
      throw error;
    }
    // Only queued here, the same for every address: the lookup (and for a new one, the link's write) would take longer for one kind than the other.
    await deps.linkMails.queue('sign-up', address);
    return sendPage(reply, signUpPage(context(request), { pre: guard.preSession(request, reply), email: address, sent: true }));
  });

  const confirmPage = async (request: FastifyRequest, reply: FastifyReply, token: string, typed: { accountName?: string; displayName?: string; error?: string } = {}, status = 200) => {
    const signup = await open().view(token);
    return sendPage(reply, signUpConfirmPage(context(request), { pre: guard.preSession(request, reply), token, ...signup, ...typed }), status);
  };
  const notValid = (request: FastifyRequest, reply: FastifyReply, error: LinkNotValidError) => sendPage(reply, linkNotValidPage(context(request), error.message), 404);

  app.get('/sign-up/confirm', { config: { access: 'public', page: true } }, async (request, reply) => {
    open();
    try {
      return await confirmPage(request, reply, String((request.query as { token?: string }).token ?? ''));
    } catch (error) {
      if (error instanceof LinkNotValidError) return notValid(request, reply, error);
      throw error;
    }
  });

  app.post('/sign-up/confirm', { config: { access: 'public', page: true, csrf: 'pre-session' } }, async (request, reply) => {
    const signUps = open();
    const token = field(request, 'token');
    const typed = { accountName: field(request, 'accountName'), displayName: field(request, 'displayName') };
    try {
      const user = await signUps.complete(token, { ...typed, password: field(request, 'password') });
      const { token: session } = await deps.sessions.open(user, guard.sessionToken(request));
      guard.setSessionCookie(request, reply, session);
      return reply.redirect('/overview?welcome=1', 303);
    } catch (error) {
      if (!wantsPage(request)) throw error;
      if (error instanceof LinkNotValidError) return notValid(request, reply, error);
      if (isOptmarkError(error) && ['password_not_accepted', 'invalid_option', 'account_exists', 'user_exists'].includes(error.code)) {
        return confirmPage(request, reply, token, { ...typed, error: error.message }, 422);
      }
      throw error;
    }
  });
}
