/**
 * Node's collector, for memory figures that are not just garbage not yet
 * collected: `global.gc` when the process runs with --expose-gc (vitest's
 * workers do not), else the same function reached by setting the flag at run
 * time, which V8 allows for functions made after it.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export function collector(): () => void {
  if (globalThis.gc) return globalThis.gc;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}
