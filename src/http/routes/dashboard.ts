/**
 * The web dashboard: sign in with an API key, see this month's usage, mark
 * an image (with the optional in-pixel fingerprint, which the API's protect
 * never adds) and check one. The same use cases, authentication and quota
 * as the API; only the transport differs (a session cookie, HTML forms).
 *
 * Forms from other sites are refused before any work: the session cookie is
 * SameSite=Strict, a browser's Sec-Fetch-Site or Origin must name this site,
 * and every action carries the session's form token in its URL.
 *
 * Sign-in presents a key, so it shares the API's count of invalid keys per
 * client address (app/auth-failures.ts): an address past it gets 429 before
 * its form is read, and a wrong key at sign-in counts like one on the API.
 */
import { parseCookie, stringifySetCookie } from 'cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { SESSION_HOURS, type DashboardSession, type DashboardSessions } from '../../app/dashboard-sessions.js';
import type { ApiAccess } from '../../app/api-access.js';
import type { AuthFailures } from '../../app/auth-failures.js';
import type { Fingerprinting } from '../../app/fingerprint.js';
import type { MetadataWorkers } from '../../app/off-loop.js';
import { protectOffLoop, protectWithFingerprint } from '../../app/protect-image.js';
import type { Provenance } from '../../app/provenance.js';
import { inspectWithFingerprint } from '../../app/verify-image.js';
import { CrossSiteRequestError, InvalidApiKeyError, NotSignedInError, type Operation } from '../../errors.js';
import { dashboardPage, signInPage, STYLE_PATH, verifyPage } from '../../web/pages.js';
import { STYLE } from '../../web/style.js';
import { runCallWork } from '../call-work.js';
import { PAGE_HEADERS } from '../page-headers.js';
import { holdTicket, readCallUpload, settleTicketsOnSend } from '../reservation.js';
import { C2PA_HEADER, FINGERPRINT_HEADER } from '../schemas.js';
import type { UploadLimits } from '../upload.js';

const COOKIE = 'optmark_session';
const SIGN_IN_BODY_LIMIT = 4096;

declare module 'fastify' {
  interface FastifyRequest {
    dashboardSession?: DashboardSession;
  }
}

export interface DashboardRouteOptions {
  readonly access: ApiAccess;
  /** Invalid keys per client address, shared with the API. */
  readonly authFailures: AuthFailures;
  readonly sessions: DashboardSessions;
  readonly provenance: Provenance;
  readonly fingerprint: Fingerprinting;
  /** Where a file whose XMP is too long for the event loop is read and written (app/off-loop.ts). */
  readonly workers: MetadataWorkers | undefined;
  /** How long a call's work may take after its body was read (OPTMARK_REQUEST_TIMEOUT): http/call-work.ts. */
  readonly callSeconds: number;
  readonly upload: UploadLimits;
  /** Largest declared width x height protect and verify take (OPTMARK_MAX_IMAGE_PIXELS), as on the API. */
  readonly maxImagePixels: number;
  readonly clock: () => Date;
  /** Cookies only over HTTPS when the deployment's public address is https. */
  readonly secureCookies: boolean;
}


/** A browser says where a request comes from; a form of another site must not act here. */
function fromThisSite(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin' || site === 'none';
  const origin = request.headers.origin;
  if (origin === undefined) return true; // not a browser, or an old one: the form token decides
  try {
    return new URL(origin).host === request.headers.host;
  } catch {
    return false;
  }
}

/** `attachment` with the name twice: plain for old clients, RFC 5987 UTF-8 for the rest. */
function attachment(filename: string): string {
  const plain = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `attachment; filename="${plain}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

export async function dashboardRoutes(app: FastifyInstance, options: DashboardRouteOptions): Promise<void> {
  const { access, authFailures, sessions, provenance, fingerprint, workers, callSeconds, upload: uploadLimits, maxImagePixels, clock } = options;
  const tokenOf = (request: FastifyRequest) => parseCookie(request.headers.cookie ?? '')[COOKIE];
  const cookie = (value: string, maxAge: number) =>
    stringifySetCookie({ name: COOKIE, value, httpOnly: true, sameSite: 'strict', secure: options.secureCookies, path: '/dashboard', maxAge });

  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: SIGN_IN_BODY_LIMIT }, (_request, body, done) =>
    done(null, new URLSearchParams(body as string)),
  );
  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config.page) reply.headers(PAGE_HEADERS);
  });
  settleTicketsOnSend(app, clock);

  /** A session whose key was revoked or has expired since sign-in ends with it: true when that is what `error` says. */
  const keyGone = (token: string | undefined, error: unknown) => {
    if (!(error instanceof InvalidApiKeyError)) return false;
    sessions.signOut(token);
    return true;
  };

  /** The principal behind a session, or undefined once its key is gone. */
  const principalOf = async (token: string | undefined, session: DashboardSession) => {
    try {
      return await access.authenticate(session.credential);
    } catch (error) {
      if (keyGone(token, error)) return undefined;
      throw error;
    }
  };

  /** An action of a signed-in person, from this site's own page, with the session's form token. */
  const signedInAction = async (request: FastifyRequest, token: string | undefined) => {
    const session = sessions.find(token);
    if (!session) throw new NotSignedInError();
    const { form } = request.query as { form?: string };
    if (!fromThisSite(request) || !sessions.formTokenMatches(session, form)) throw new CrossSiteRequestError();
    request.dashboardSession = session;
  };

  const reserve = (operation: Operation) => async (request: FastifyRequest, reply: FastifyReply) => {
    const token = tokenOf(request);
    await signedInAction(request, token);
    try {
      await holdTicket(request, reply, await access.open(request.dashboardSession!.credential, operation));
    } catch (error) {
      throw keyGone(token, error) ? new NotSignedInError() : error;
    }
  };

  const sendPage = (reply: FastifyReply, body: string) => reply.type('text/html; charset=utf-8').send(body);

  app.get('/', async (_request, reply) => reply.redirect('/dashboard', 302));
  // The actions' addresses opened as pages (the back button, a bookmark of a result): back to the dashboard.
  for (const action of ['sign-in', 'sign-out', 'protect', 'verify']) {
    app.get(`/dashboard/${action}`, async (_request, reply) => reply.redirect('/dashboard', 303));
  }

  app.get(STYLE_PATH, async (_request, reply) => reply.type('text/css; charset=utf-8').header('Cache-Control', 'public, max-age=3600').send(STYLE));

  app.get('/dashboard', { config: { page: true } }, async (request, reply) => {
    const token = tokenOf(request);
    const session = sessions.find(token);
    const principal = session && (await principalOf(token, session));
    if (!session || !principal) return sendPage(reply, signInPage());
    return sendPage(reply, dashboardPage({ principal, usage: await access.usage(principal), formToken: session.formToken }));
  });

  app.post('/dashboard/sign-in', {
    config: { page: true },
    // Every sign-in presents a key (in its form): an address past its invalid keys is refused before the form is read.
    onRequest: async (request) => authFailures.admit(request.ip),
  }, async (request, reply) => {
    if (!fromThisSite(request)) throw new CrossSiteRequestError();
    const key = request.body instanceof URLSearchParams ? (request.body.get('key') ?? '') : '';
    const signIn = () => sessions.signIn(key);
    // An empty field presents no key (as a request without Authorization): refused, not counted.
    const signedIn = key.trim() === '' ? await signIn() : await authFailures.counting(request.ip, signIn);
    reply.header('Set-Cookie', cookie(signedIn.token, SESSION_HOURS * 3600));
    return reply.redirect('/dashboard', 303);
  });

  app.post('/dashboard/sign-out', { config: { page: true } }, async (request, reply) => {
    const token = tokenOf(request);
    if (sessions.find(token)) await signedInAction(request, token);
    sessions.signOut(token);
    reply.header('Set-Cookie', cookie('', 0));
    return reply.redirect('/dashboard', 303);
  });

  app.post('/dashboard/protect', { config: { page: true }, preHandler: reserve('protect') }, async (request, reply) => {
    const upload = await readCallUpload(request, uploadLimits, ['value', 'fingerprint']);
    // The value is checked by protect (invalid_option), before any pixel work.
    const protectOptions = { value: upload.fields.value, filename: upload.filename, maxImagePixels };
    const result = await runCallWork(request, reply, callSeconds, (signal) =>
      upload.fields.fingerprint === 'on'
        ? protectWithFingerprint(upload.bytes, fingerprint, protectOptions, { workers, signal, provenance })
        : protectOffLoop(upload.bytes, protectOptions, provenance, { workers, signal }),
    );
    // As the API says it (the page cannot: the answer is the file); the page warns before marking.
    if (result.c2paInvalidated) reply.header(C2PA_HEADER, 'invalidated');
    if (result.fingerprint) reply.header(FINGERPRINT_HEADER, result.fingerprint);
    return reply.type(result.mimeType).header('Content-Disposition', attachment(result.filename)).send(Buffer.from(result.bytes.buffer, result.bytes.byteOffset, result.bytes.byteLength));
  });

  app.post('/dashboard/verify', { config: { page: true }, preHandler: reserve('verify') }, async (request, reply) => {
    const upload = await readCallUpload(request, uploadLimits);
    const { result, details } = await runCallWork(request, reply, callSeconds, (signal) => inspectWithFingerprint(upload.bytes, { provenance, fingerprint, maxImagePixels, signal, workers }));
    return sendPage(reply, verifyPage({ principal: request.ticket!.principal, formToken: request.dashboardSession!.formToken, filename: upload.filename, result, details }));
  });
}
