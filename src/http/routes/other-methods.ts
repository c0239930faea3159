/**
 * The API's paths answer the methods they do not take with 405
 * method_not_allowed and an `Allow` header naming those they take (HEAD
 * goes with GET).
 */
import type { FastifyInstance } from 'fastify';
import { MethodNotAllowedError } from '../../errors.js';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;

/** `paths`: each URL with the methods it takes, as the Allow header says them ("GET, POST"). */
export function answerOtherMethods(app: FastifyInstance, paths: ReadonlyArray<readonly [url: string, allow: string]>): void {
  for (const [url, allow] of paths) {
    const taken = allow.split(', ');
    const others = METHODS.filter((m) => !taken.includes(m) && !(taken.includes('GET') && m === 'HEAD'));
    app.route({
      method: others as never,
      url,
      config: { access: 'api-key' },
      handler: async (request) => {
        throw new MethodNotAllowedError(request.method, allow);
      },
    });
  }
}
