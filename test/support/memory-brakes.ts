/**
 * The brakes' store in memory, for tests of the rules with the clock in the
 * test's hands (the SQL store, on both back ends, is what the HTTP tests use).
 */
import type { BrakeStore, KeptBrake } from '../../src/app/people/ports.js';

export function memoryBrakes(): BrakeStore & { readonly size: number } {
  const kept = new Map<string, KeptBrake<unknown>>();
  return {
    get size() {
      return kept.size;
    },
    async hold<S, T>(keys: readonly string[], decide: (states: readonly (S | undefined)[]) => { readonly answer: T; readonly keep?: readonly (KeptBrake<S> | undefined)[] }) {
      const { answer, keep } = decide(keys.map((key) => kept.get(key)?.state as S | undefined));
      keys.forEach((key, i) => {
        if (!keep) return;
        const next = keep[i];
        if (next === undefined) kept.delete(key);
        else kept.set(key, next);
      });
      return answer;
    },
    async sweep(now: Date) {
      let n = 0;
      for (const [key, { forgetAt }] of kept) if (forgetAt < now && kept.delete(key)) n++;
      return n;
    },
  };
}
