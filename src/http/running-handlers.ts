/**
 * Route handlers still at work. A client that goes away mid-call closes its
 * connection, so the HTTP server no longer counts the call, yet its handler
 * runs on (a fingerprint check on the worker pool, a database write). The
 * server must not close the pool and the database under it when it stops:
 * app.close() waits for these handlers (buildHttpApp's onClose hook), up to
 * a bound, before the rest of the shutdown runs.
 */
import type { FastifyInstance, RouteHandlerMethod } from 'fastify';

export interface RunningHandlers {
  /** Resolves when no handler is running, or after `limitMs` with the number still running. */
  idle(limitMs: number): Promise<number>;
}

/** Counts every route's handler from its call until it returns or its promise settles. Call before any route is added. */
export function trackRunningHandlers(app: FastifyInstance): RunningHandlers {
  let count = 0;
  const waiters = new Set<() => void>();
  const finished = () => {
    count--;
    if (count === 0) for (const wake of waiters) wake();
  };
  app.addHook('onRoute', (route) => {
    const handler = route.handler as RouteHandlerMethod;
    route.handler = function (this: FastifyInstance, request, reply) {
      count++;
      let result: unknown;
      try {
        result = handler.call(this, request, reply);
      } catch (error) {
        finished();
        throw error;
      }
      if (result instanceof Promise) return result.finally(finished);
      finished();
      return result;
    } as RouteHandlerMethod;
  });
  return {
    idle(limitMs) {
      if (count === 0) return Promise.resolve(0);
      return new Promise<number>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          waiters.delete(wake);
          resolve(count);
        };
        const timer = setTimeout(wake, limitMs);
        waiters.add(wake);
      });
    },
  };
}
