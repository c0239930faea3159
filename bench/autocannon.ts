/** autocannon (an npm devDependency), typed for what the benchmarks read of its result: the package ships no types. */
import { createRequire } from 'node:module';

export interface AutocannonResult {
  duration: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  requests: { total: number; average: number };
  latency: { p50: number; p90: number; p99: number; average: number; max: number };
  statusCodeStats?: Record<string, { count: number | string }>;
}

export const autocannon = createRequire(import.meta.url)('autocannon') as (options: Record<string, unknown>) => Promise<AutocannonResult>;
