/**
 * Small timing helpers. Each measurement warms up first (JIT, allocator,
 * page cache), then repeats until it has both a minimum run count and a
 * minimum wall time, and reports the median: robust against GC pauses and
 * the odd scheduler hiccup on a shared two-core machine.
 */

export interface Sample {
  /** Median of the timed runs, in milliseconds. */
  readonly medianMs: number;
  readonly minMs: number;
  readonly runs: number;
}

export interface Budget {
  readonly warmupRuns: number;
  readonly minRuns: number;
  readonly minTimeMs: number;
  /** Upper bound so a very fast operation does not spin for ages. */
  readonly maxRuns: number;
}

export const DEFAULT_BUDGET: Budget = { warmupRuns: 3, minRuns: 15, minTimeMs: 1000, maxRuns: 500 };

export function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}

/** The q-quantile, interpolated between the two nearest values. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const at = (sorted.length - 1) * q;
  const lo = Math.floor(at);
  return sorted[lo]! + (sorted[Math.min(lo + 1, sorted.length - 1)]! - sorted[lo]!) * (at - lo);
}

export function summarise(times: readonly number[]): Sample {
  return { medianMs: median(times), minMs: Math.min(...times), runs: times.length };
}

/**
 * Time several synchronous operations round-robin: one run of each per round,
 * so they share the same conditions (CPU frequency, other load on the box)
 * and their ratios stay meaningful even when the absolute times drift.
 * Runs until every operation has `minRuns` runs and the rounds have taken
 * `minTimeMs` per operation.
 */
export function measureInterleaved<K extends string>(fns: Record<K, () => unknown>, budget: Budget = DEFAULT_BUDGET): Record<K, Sample> {
  const keys = Object.keys(fns) as K[];
  const times = new Map<K, number[]>(keys.map((k) => [k, []]));
  let sink: unknown;
  for (const { key, timed } of rounds(keys, budget)) {
    const t0 = performance.now();
    sink = fns[key]();
    if (timed) times.get(key)!.push(performance.now() - t0);
  }
  if (sink === Symbol.for('never')) console.log(sink);
  return Object.fromEntries(keys.map((k) => [k, summarise(times.get(k)!)])) as Record<K, Sample>;
}

/**
 * The runs of measureInterleaved, in order: `warmupRuns` untimed rounds,
 * then timed rounds of one run of each operation, until every operation has
 * `minRuns` runs and the timed rounds have taken `minTimeMs` per operation
 * (or `maxRuns` rounds).
 */
function* rounds<K extends string>(keys: readonly K[], budget: Budget): Generator<{ readonly key: K; readonly timed: boolean }> {
  for (let i = 0; i < budget.warmupRuns; i++) for (const key of keys) yield { key, timed: false };
  const started = performance.now();
  for (let round = 0; round < budget.maxRuns; round++) {
    if (round >= budget.minRuns && performance.now() - started >= budget.minTimeMs * keys.length) break;
    for (const key of keys) yield { key, timed: true };
  }
}

/** Time one call of an async operation (used per ExifTool command). */
export async function timeAsync(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

/** measureInterleaved for operations that return promises (a decode by sharp, the fingerprint check). */
export async function measureInterleavedAsync<K extends string>(fns: Record<K, () => Promise<unknown>>, budget: Budget = DEFAULT_BUDGET): Promise<Record<K, Sample>> {
  const keys = Object.keys(fns) as K[];
  const times = new Map<K, number[]>(keys.map((k) => [k, []]));
  for (const { key, timed } of rounds(keys, budget)) {
    const ms = await timeAsync(fns[key]);
    if (timed) times.get(key)!.push(ms);
  }
  return Object.fromEntries(keys.map((k) => [k, summarise(times.get(k)!)])) as Record<K, Sample>;
}
