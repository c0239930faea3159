/**
 * Pages for everyone, signed in or not: the public API page, which says
 * what the API does, its limits (from the limits table and the server's
 * upload limit) and how a key is had, and shows the interactive reference.
 *
 * It is sent with the same strict Content-Security-Policy as every page
 * (sendPage, page-headers.ts): no exception is needed, because its renderer,
 * Swagger UI, is bundled and served by optmark, takes its stylesheet as a
 * file, styles from script only through the DOM (which `style-src 'self'`
 * allows), loads no font and calls no other origin (docs/api.md, "The
 * public API page"; test/http/api-page.test.ts checks that the browser
 * refuses nothing on it).
 */
import type { FastifyInstance } from 'fastify';
import { API_PLANS } from '../../app/ports.js';
import { apiPage } from '../../web/pages/api.js';
import { formatOf, pageContext, sendPage, type WebDeps } from './context.js';

export function publicRoutes(app: FastifyInstance, deps: WebDeps): void {
  app.get('/api', { config: { access: 'public', page: true } }, async (request, reply) => {
    const planLimits = await deps.admin.planLimits();
    return sendPage(
      reply,
      apiPage(pageContext(deps, request), {
        planLimits,
        apiPlans: API_PLANS,
        maxUploadBytes: deps.upload.maxUploadBytes,
        // The address the reader reached (through a trusted proxy, the one it names), for the examples.
        baseUrl: `${request.protocol}://${request.host}`,
        format: formatOf(request),
      }),
    );
  });
}
