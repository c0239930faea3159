/**
 * Node's collector, for memory figures that are not just garbage not yet
 * collected. The test workers run with --expose-gc (vitest.config.ts's
 * `execArgv`): V8's flags are set before it starts, as Node's documentation
 * asks, rather than by `v8.setFlagsFromString` in a running worker, which
 * it warns may crash.
 */
export function collector(): () => void {
  if (typeof globalThis.gc !== 'function') {
    throw new Error('global.gc is missing: run the tests with --expose-gc (vitest.config.ts sets it for its workers)');
  }
  return globalThis.gc;
}
