/**
 * The people's side, as one fastify plugin: forms parsed (url-encoded, 16
 * KiB at most; uploads stream as on the API), every route's access and origin
 * proof checked before its handler (guard.ts), reserved units settled before
 * the answer (as on the API), then the pages, their forms and the JSON the
 * page scripts call.
 */
import type { FastifyInstance } from 'fastify';
import { RequestError } from '../../errors.js';
import type { Repeats } from '../../app/repeats.js';
import { settleTicketsOnSend } from '../reservation.js';
import { accessRoutes } from './access-routes.js';
import { appRoutes } from './app-routes.js';
import { assetRoutes, loadAssets } from './assets.js';
import { authRoutes } from './auth-routes.js';
import { signupRoutes } from './signup-routes.js';
import type { WebDeps } from './context.js';
import { createGuard } from './guard.js';
import { pageRoutes } from './page-routes.js';
import { publicRoutes } from './public-routes.js';
import { recordRoutes } from './record-routes.js';
import { scanRoutes } from './scan-routes.js';
import { vaultRoutes } from './vault-routes.js';

const FORM_BODY_LIMIT = 16 * 1024;

export interface WebPluginOptions extends Omit<WebDeps, 'asset'> {
  readonly repeats: Repeats;
  readonly requestTimeoutMs: number;
  /** Whether a request reached us over HTTPS (for Secure cookies). */
  readonly secure: Parameters<typeof createGuard>[0]['secure'];
}

export async function webPlugin(app: FastifyInstance, options: WebPluginOptions): Promise<void> {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_request, body, done) => {
    const form = new URLSearchParams(body as string);
    // No field of this service holds a NUL (the database cannot store one: it would fail as a 500).
    for (const [name, value] of form) {
      if (name.includes('\u0000') || value.includes('\u0000')) return done(new RequestError('malformed_request', 'A form field holds a NUL character, which no field of this service takes'), undefined);
    }
    return done(null, form);
  });
  const guard = createGuard({ sessions: options.sessions, secure: options.secure });
  app.addHook('preHandler', guard.check);
  settleTicketsOnSend(app, options.clock);
  const assets = assetRoutes(app, loadAssets());
  const deps: WebDeps = { ...options, asset: (name) => assets.url(name) };
  publicRoutes(app, deps);
  authRoutes(app, deps, guard);
  signupRoutes(app, deps, guard);
  pageRoutes(app, deps);
  accessRoutes(app, deps);
  recordRoutes(app, deps);
  if (deps.scans) scanRoutes(app, { ...deps, scans: deps.scans });
  vaultRoutes(app, deps);
  appRoutes(app, { ...deps, repeats: options.repeats, requestTimeoutMs: options.requestTimeoutMs });
}
