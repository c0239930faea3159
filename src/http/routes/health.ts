/** Liveness (the process answers) and readiness (the database answers too). */
import type { FastifyInstance } from 'fastify';
import { healthResult, errorResult } from '../schemas.js';

export async function healthRoutes(app: FastifyInstance, options: { ping: () => Promise<void> }): Promise<void> {
  app.get('/healthz', { schema: { response: { 200: healthResult } } }, async () => ({ status: 'ok' as const }));
  app.get('/readyz', { schema: { response: { 200: healthResult, 503: errorResult } } }, async () => {
    await options.ping();
    return { status: 'ok' as const };
  });
}
