/**
 * Latencies in logarithmic buckets 1 % wide: constant memory however long a
 * soak runs, and percentiles within 1 % of the exact value.
 */
const MIN_MS = 0.01;
const GROWTH = 1.01;
const LOG_GROWTH = Math.log(GROWTH);

export class Histogram {
  private readonly buckets = new Map<number, number>();
  count = 0;
  max = 0;

  record(ms: number): void {
    const index = ms <= MIN_MS ? 0 : Math.ceil(Math.log(ms / MIN_MS) / LOG_GROWTH);
    this.buckets.set(index, (this.buckets.get(index) ?? 0) + 1);
    this.count++;
    if (ms > this.max) this.max = ms;
  }

  /** The latency below which `p` percent of the recorded ones fall (upper edge of its bucket, capped at the maximum). */
  percentile(p: number): number {
    if (this.count === 0) return Number.NaN;
    const rank = Math.max(1, Math.ceil((p / 100) * this.count));
    let seen = 0;
    for (const index of [...this.buckets.keys()].sort((a, b) => a - b)) {
      seen += this.buckets.get(index)!;
      if (seen >= rank) return Math.min(this.max, MIN_MS * GROWTH ** index);
    }
    return this.max;
  }
}
