/**
 * Who may use each route of the people's side, and proof that a request
 * came from this site's own page. Every route declares `config.access`
 * (docs/permissions.md has the table, and test/http/permissions.test.ts
 * holds every registered route to it); a state-changing route of a session
 * declares `config.csrf: 'session'` and must carry the session's form token
 * (in the `X-CSRF-Token` header, or a `csrf` form field); sign-in and the
 * one-time link's form, which have no session yet, carry a pre-session token
 * bound to a cookie. The token never travels in a URL, where it would stay in
 * the browser's history and address bar: an upload form without JavaScript
 * (`config.uploadForm`), whose body is streamed, sends it as the body's first
 * field, and the upload reader checks it before it takes any file
 * (`request.formTokenFirst`, http/reservation.ts).
 *
 * A browser's `Sec-Fetch-Site` (or, from older browsers, `Origin`) must also
 * name this site: a page of another site cannot act here even with a token.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { parseCookie, stringifySetCookie } from 'cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SignedIn, Sessions } from '../../app/people/sessions.js';
import { SESSION_DAYS } from '../../app/people/sessions.js';
import { API_PLANS } from '../../app/ports.js';
import { CrossSiteRequestError, NotSignedInError, PlanNotAllowedError, RoleNotAllowedError } from '../../errors.js';
import { wantsPage } from '../error-handler.js';

/** Who may call a route: anyone; an API key (the API's own checks); a signed-in user (any plan); a user of a paid plan; an owner; an operator. */
export type Access = 'public' | 'api-key' | 'signed-in' | 'paid' | 'owner' | 'operator';
export const ACCESS_LEVELS: readonly Access[] = ['public', 'api-key', 'signed-in', 'paid', 'owner', 'operator'];

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
    /** A public route that never needs to know who is asking (the built assets): no session is looked up. */
    anonymous?: boolean;
    /** The proof of origin the route needs: the session's form token, or the sign-in form's pre-session token. */
    csrf?: 'session' | 'pre-session';
    /** A multipart upload form that works without JavaScript: sent without the header, its form token is the body's first field. */
    uploadForm?: boolean;
  }
  interface FastifyRequest {
    /** The session behind the request's cookie, when there is one. */
    signedIn?: SignedIn;
    /**
     * On an upload form sent without the header: whether the body's first
     * field, named `csrf`, is the session's form token. The upload reader
     * must call it before it takes any part (http/upload.ts).
     */
    formTokenFirst?: (token: string) => boolean;
  }
}

export const SESSION_COOKIE = 'optmark_session';
export const PRE_SESSION_COOKIE = 'optmark_pre';
/**
 * Over HTTPS the cookies' names carry the `__Host-` prefix: a browser then
 * takes them only with Secure, Path=/ and no Domain, so a page of a sibling
 * host, or a plain-HTTP answer slipped into the connection, cannot set or
 * replace them (a planted session cookie would sign a person in as someone
 * else). Over plain HTTP (a local server) the browser would refuse such a
 * name, so the plain one is used.
 */
const HOST_PREFIX = '__Host-';
const PRE_SESSION_SECONDS = 3600;

export interface GuardOptions {
  readonly sessions: Sessions;
  /** Cookies only over HTTPS: the deployment's address is https, or a trusted proxy says the request was. */
  readonly secure: (request: FastifyRequest) => boolean;
}

/** A browser says where a request comes from; a page of another site must not act here. */
export function fromThisSite(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin' || site === 'none';
  const origin = request.headers.origin;
  if (origin === undefined) return true; // not a browser, or an old one: the token decides
  try {
    return new URL(origin).host === request.headers.host;
  } catch {
    return false;
  }
}

const cookiesOf = (request: FastifyRequest) => parseCookie(request.headers.cookie ?? '');

function sameToken(expected: string, candidate: unknown): boolean {
  if (typeof candidate !== 'string') return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(candidate);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The token a request presents: the header (page scripts), or the form field of a form's urlencoded body. */
function presentedToken(request: FastifyRequest, field: string): unknown {
  const header = request.headers['x-csrf-token'];
  if (typeof header === 'string') return header;
  const body = request.body;
  if (body instanceof URLSearchParams && body.has(field)) return body.get(field);
  return undefined;
}

const isMultipart = (request: FastifyRequest) => /^multipart\/form-data\b/i.test(request.headers['content-type'] ?? '');

export function createGuard(options: GuardOptions) {
  const { sessions } = options;

  /** A cookie's name for this request: prefixed over HTTPS (only such a cookie is read there). */
  const named = (request: FastifyRequest, name: string) => (options.secure(request) ? `${HOST_PREFIX}${name}` : name);
  const cookie = (request: FastifyRequest, name: string, value: string, maxAge: number, sameSite: 'lax' | 'strict') =>
    stringifySetCookie({ name: named(request, name), value, httpOnly: true, sameSite, secure: options.secure(request), path: '/', maxAge });
  const cookieOf = (request: FastifyRequest, name: string) => cookiesOf(request)[named(request, name)];
  /** The session token the request's cookie carries, if any. */
  const sessionToken = (request: FastifyRequest) => cookieOf(request, SESSION_COOKIE);

  return {
    sessionToken,

    /** The preHandler of every people's route: load the session, check the route's access and origin proof. */
    async check(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
      const { access = 'public', csrf, page, anonymous, uploadForm } = request.routeOptions.config;
      if (access === 'api-key' || anonymous) return undefined;
      request.signedIn = await sessions.find(sessionToken(request));
      const signedIn = request.signedIn;
      if (access !== 'public') {
        if (!signedIn) {
          // A person opening a page is taken to sign in, and back afterwards; a script asking for JSON is told (401).
          if (page && request.method === 'GET' && wantsPage(request)) {
            const next = request.url.split('?')[0]!;
            return reply.redirect(`/sign-in${next === '/' ? '' : `?next=${encodeURIComponent(next)}`}`, 303);
          }
          throw new NotSignedInError();
        }
        if (access === 'paid' && !API_PLANS.includes(signedIn.account.plan)) throw new PlanNotAllowedError(signedIn.account.plan);
        if (access === 'owner' && signedIn.user.role !== 'owner') throw new RoleNotAllowedError("Only the account's owners may do this");
        if (access === 'operator' && !signedIn.user.operator) throw new RoleNotAllowedError("Only the service's operators may do this");
      }
      if (csrf === 'session' && uploadForm && request.headers['x-csrf-token'] === undefined && isMultipart(request)) {
        // The token is in the body, read later: the origin is checked now, the token before any file is taken.
        if (!signedIn || !fromThisSite(request)) throw new CrossSiteRequestError();
        const { session } = signedIn;
        request.formTokenFirst = (token) => sessions.formTokenMatches(session, token);
      } else if (csrf === 'session') {
        if (!signedIn || !fromThisSite(request) || !sessions.formTokenMatches(signedIn.session, presentedToken(request, 'csrf') as string | undefined)) {
          throw new CrossSiteRequestError();
        }
      }
      if (csrf === 'pre-session') {
        const expected = cookieOf(request, PRE_SESSION_COOKIE);
        if (!fromThisSite(request) || expected === undefined || !sameToken(expected, presentedToken(request, 'pre'))) throw new CrossSiteRequestError();
      }
      return undefined;
    },

    /** A pre-session token for a form of a person not signed in yet (sign-in, a one-time link): set in a cookie, and returned for the form. */
    preSession(request: FastifyRequest, reply: FastifyReply): string {
      const existing = cookieOf(request, PRE_SESSION_COOKIE);
      const token = existing && /^[A-Za-z0-9_-]{32}$/.test(existing) ? existing : randomBytes(24).toString('base64url');
      reply.header('Set-Cookie', cookie(request, PRE_SESSION_COOKIE, token, PRE_SESSION_SECONDS, 'strict'));
      return token;
    },

    /** Start a session for the browser (its previous session, if any, ends). */
    setSessionCookie(request: FastifyRequest, reply: FastifyReply, token: string): void {
      reply.header('Set-Cookie', cookie(request, SESSION_COOKIE, token, SESSION_DAYS * 86_400, 'lax'));
    },

    clearSessionCookie(request: FastifyRequest, reply: FastifyReply): void {
      reply.header('Set-Cookie', cookie(request, SESSION_COOKIE, '', 0, 'lax'));
    },
  };
}

export type Guard = ReturnType<typeof createGuard>;
