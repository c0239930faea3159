/** Liveness (the process answers) and readiness (the database answers too, promptly). */
import type { FastifyInstance } from 'fastify';
import { ServiceUnavailableError } from '../../errors.js';
import { healthResult, errorResult } from '../schemas.js';

/** A database that takes longer than this to answer `select 1` is not ready, whatever it is doing. */
const READY_WITHIN_MS = 2000;

export async function healthRoutes(app: FastifyInstance, options: { ping: () => Promise<void> }): Promise<void> {
  app.get('/healthz', { config: { access: 'public' }, schema: { response: { 200: healthResult } } }, async () => ({ status: 'ok' as const }));
  app.get('/readyz', { config: { access: 'public' }, schema: { response: { 200: healthResult, 503: errorResult } } }, async () => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ServiceUnavailableError(`The database did not answer within ${READY_WITHIN_MS / 1000} s`, 2)), READY_WITHIN_MS);
    });
    try {
      await Promise.race([options.ping(), late]);
    } finally {
      clearTimeout(timer);
    }
    return { status: 'ok' as const };
  });
}
