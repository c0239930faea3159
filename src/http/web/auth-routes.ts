/**
 * Signing in and out, one-time links, and asking for a reset link by mail.
 * Sign-in is limited per address and per (email, address) with back-off
 * (app/people/sign-in-limits.ts); every failure gets the same words.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { InvalidCredentialsError, isOptmarkError, LinkNotValidError, TooManySignInsError } from '../../errors.js';
import { forgotPasswordPage, linkNotValidPage, linkPage, signInPage } from '../../web/pages/auth.js';
import { wantsPage } from '../error-handler.js';
import type { Guard } from './guard.js';
import { field, pageContext, safeNext, sendPage, type WebDeps } from './context.js';

export function authRoutes(app: FastifyInstance, deps: WebDeps, guard: Guard): void {
  const { people, sessions, signInLimits } = deps;
  const context = (request: FastifyRequest) => pageContext(deps, request);

  app.get('/', { config: { access: 'public', page: true } }, async (request, reply) => reply.redirect(request.signedIn ? '/overview' : '/sign-in', 303));

  app.get('/sign-in', { config: { access: 'public', page: true } }, async (request, reply) => {
    if (request.signedIn) return reply.redirect('/overview', 303);
    const { next } = request.query as { next?: string };
    return sendPage(reply, signInPage(context(request), { pre: guard.preSession(request, reply), next: next ? safeNext(next) : undefined, canMailResets: deps.mailer.enabled, canSignUp: deps.signUps !== undefined }));
  });

  app.post('/sign-in', { config: { access: 'public', page: true, csrf: 'pre-session' } }, async (request, reply) => {
    const email = field(request, 'email').trim();
    const next = safeNext(field(request, 'next'));
    const again = (error: string, status: number) =>
      sendPage(reply, signInPage(context(request), { pre: guard.preSession(request, reply), email, next, error, canMailResets: deps.mailer.enabled, canSignUp: deps.signUps !== undefined }), status);
    try {
      const counted = await signInLimits.admit(request.ip, email);
      const user = await people.signIn(email, field(request, 'password'));
      await counted.held();
      const { token } = await sessions.open(user, guard.sessionToken(request));
      guard.setSessionCookie(request, reply, token);
      return reply.redirect(next, 303);
    } catch (error) {
      if (!wantsPage(request)) throw error;
      if (error instanceof InvalidCredentialsError) return again(`${error.message}. Check both and try again.`, 401);
      if (error instanceof TooManySignInsError) {
        reply.header('Retry-After', String(error.retryAfterSeconds));
        return again(error.message, 429);
      }
      throw error;
    }
  });

  app.post('/sign-out', { config: { access: 'signed-in', page: true, csrf: 'session' } }, async (request, reply) => {
    await sessions.close(guard.sessionToken(request));
    guard.clearSessionCookie(request, reply);
    return reply.redirect('/sign-in', 303);
  });

  app.get('/link', { config: { access: 'public', page: true } }, async (request, reply) => {
    const token = String((request.query as { token?: string }).token ?? '');
    try {
      const link = await people.viewLink(token);
      return sendPage(reply, linkPage(context(request), { pre: guard.preSession(request, reply), token, link }));
    } catch (error) {
      if (!wantsPage(request)) throw error;
      if (error instanceof LinkNotValidError) return sendPage(reply, linkNotValidPage(context(request), error.message), 404);
      throw error;
    }
  });

  app.post('/link', { config: { access: 'public', page: true, csrf: 'pre-session' } }, async (request, reply) => {
    const token = field(request, 'token');
    const email = field(request, 'email');
    const displayName = request.body instanceof URLSearchParams && request.body.has('displayName') ? field(request, 'displayName') : undefined;
    let link;
    try {
      link = await people.viewLink(token);
    } catch (error) {
      if (!wantsPage(request)) throw error;
      if (error instanceof LinkNotValidError) return sendPage(reply, linkNotValidPage(context(request), error.message), 404);
      throw error;
    }
    try {
      const user = await people.useLink(token, { password: field(request, 'password'), displayName, email: link.purpose === 'account-setup' ? email : undefined });
      // A new password ends every other session of the user; this browser is signed in.
      await sessions.endOthers(user.id);
      const { token: session } = await sessions.open(user, guard.sessionToken(request));
      guard.setSessionCookie(request, reply, session);
      return reply.redirect('/overview?welcome=1', 303);
    } catch (error) {
      if (!wantsPage(request)) throw error;
      if (error instanceof LinkNotValidError) return sendPage(reply, linkNotValidPage(context(request), error.message), 404);
      if (isOptmarkError(error) && ['password_not_accepted', 'invalid_option', 'user_exists'].includes(error.code)) {
        return sendPage(reply, linkPage(context(request), { pre: guard.preSession(request, reply), token, link, error: error.message, email, displayName }), 422);
      }
      throw error;
    }
  });

  app.get('/forgot-password', { config: { access: 'public', page: true } }, async (request, reply) => {
    if (!deps.mailer.enabled) return reply.redirect('/sign-in', 303);
    return sendPage(reply, forgotPasswordPage(context(request), { pre: guard.preSession(request, reply) }));
  });

  app.post('/forgot-password', { config: { access: 'public', page: true, csrf: 'pre-session' } }, async (request, reply) => {
    if (!deps.mailer.enabled) return reply.redirect('/sign-in', 303);
    const email = field(request, 'email').trim();
    // The same answer whether or not the email has a user; the same brake as sign-in.
    await signInLimits.admit(request.ip, email);
    // Only queued here, the same for every email: the lookup and the link would take longer for an email that has a user.
    await deps.linkMails.queue('password-reset', email);
    return sendPage(reply, forgotPasswordPage(context(request), { pre: guard.preSession(request, reply), sent: true }));
  });
}
