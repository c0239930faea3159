/** What the fault scenarios share: their context, a timeline of answers, waiting for usage to settle. */
import { label, type Outcome } from '../support/clients.js';
import { checkEmbeddedIntegrity } from '../support/integrity.js';
import { sleep } from '../support/net.js';
import type { PgCluster } from '../support/pg-cluster.js';
import { table, type Checks } from '../support/report.js';
import { cli, usageOf, type Usage } from '../support/server.js';
import { scratchDir } from '../support/setup.js';

export interface Context {
  readonly log: (line?: string) => void;
  readonly checks: Checks;
  /** The migrated embedded database to copy. */
  readonly template: string;
  /** The run's own PostgreSQL cluster, made on first use. */
  cluster(): Promise<PgCluster>;
}

/** A usage figure per operation from a function of the operation. */
export const per = (count: (op: 'protect' | 'verify') => number): Usage => ({ protect: count('protect'), verify: count('verify') });

/** The operations, for checks over both. */
export const OPS = ['protect', 'verify'] as const;

/**
 * What every fault run's server gets: one key drives all the clients (the
 * per-key admission limit must not be what we measure), and monthly limits
 * out of reach (a run makes tens of thousands of calls; the plan's 10,000
 * would end it in 429s).
 */
export const UNDER_LOAD = { OPTMARK_MAX_IN_FLIGHT_PER_KEY: '64', OPTMARK_PROTECT_LIMIT: '1000000000', OPTMARK_VERIFY_LIMIT: '1000000000', OPTMARK_WORKERS: '1' } as const;

/** Seconds since `t0`, for reports. */
export const since = (t0: number, t: number) => `${((t - t0) / 1000).toFixed(2)} s`;

/** Answers per `bucketMs` by the time they ended, with the scenario's events marked. */
export function timeline(outcomes: readonly Outcome[], t0: number, events: ReadonlyArray<readonly [string, number]>, bucketMs = 1000): string {
  const labels = [...new Set(outcomes.map(label))].sort();
  const last = [...outcomes.map((o) => o.end), ...events.map(([, at]) => at)].reduce((a, b) => (b > a ? b : a), t0);
  const rows: Array<Array<string | number>> = [];
  for (let from = t0; from <= last; from += bucketMs) {
    const inBucket = outcomes.filter((o) => o.end >= from && o.end < from + bucketMs);
    const marks = events.filter(([, at]) => at >= from && at < from + bucketMs).map(([name, at]) => `${name} @${since(t0, at)}`);
    const digits = bucketMs % 1000 === 0 ? 0 : 1;
    rows.push([`${((from - t0) / 1000).toFixed(digits)}-${((from - t0 + bucketMs) / 1000).toFixed(digits)} s`, ...labels.map((l) => inBucket.filter((o) => label(o) === l).length), marks.join(', ')]);
  }
  return table(['ended', ...labels, 'events'], rows);
}

/** Poll usage until `settled` holds or `timeoutMs` passes; the last value and how long it took. */
export async function awaitUsage(url: string, key: string, settled: (u: Usage) => boolean, timeoutMs: number): Promise<{ usage: Usage; afterMs: number; settled: boolean }> {
  const began = performance.now();
  for (;;) {
    const usage = await usageOf(url, key);
    const afterMs = performance.now() - began;
    if (settled(usage)) return { usage, afterMs, settled: true };
    if (afterMs > timeoutMs) return { usage, afterMs, settled: false };
    await sleep(1000);
  }
}

/**
 * A server environment on a new database of the run's own PostgreSQL
 * cluster (the data directory then only holds the key files), and an
 * account with a key made through the admin CLI alone.
 */
export async function pgServer(ctx: Context, database: string, extra: Record<string, string> = {}): Promise<{ env: Record<string, string>; key: string }> {
  const cluster = await ctx.cluster();
  const env = { DATABASE_URL: await cluster.createDatabase(database), OPTMARK_DATA_DIR: scratchDir('unused'), ...UNDER_LOAD, ...extra };
  await cli(['accounts', 'create', '--name', 'acme', '--plan', 'pro'], env);
  return { env, key: (await cli<{ key: string }>(['keys', 'issue', '--account', 'acme'], env)).key };
}

/** Resolves at `t` (a performance.now() time). */
export const until = (t: number) => sleep(Math.max(0, t - performance.now()));

export const fmtUsage = (u: Usage) => `protect ${u.protect}, verify ${u.verify}`;

/** One GET with a deadline, described for the report: `503 service_unavailable in 4 ms`, `no answer within 5000 ms`. */
export async function probe(url: string, path: string, key?: string, timeoutMs = 5_000): Promise<{ status: number; text: string }> {
  const began = performance.now();
  try {
    const response = await fetch(`${url}${path}`, { headers: key ? { Authorization: `Bearer ${key}` } : {}, signal: AbortSignal.timeout(timeoutMs) });
    const body = (await response.json().catch(() => ({}))) as { code?: string; status?: string };
    return { status: response.status, text: `${response.status} ${body.code ?? body.status ?? ''} in ${Math.round(performance.now() - began)} ms` };
  } catch (error) {
    const e = error as Error;
    return { status: 0, text: e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : `failed: ${e.message}` };
  }
}

/** amcheck over the embedded database left in `dataDir` (the server stopped): every heap page and B-tree index sound. */
export async function checkIntegrity(ctx: Context, scope: string, dataDir: string): Promise<void> {
  try {
    const found = await checkEmbeddedIntegrity(dataDir);
    ctx.checks.check(
      scope,
      'no corruption (amcheck: heap pages and B-tree indexes)',
      found.problems.length === 0,
      `${found.tables} tables (${found.rows} rows), ${found.indexes} indexes checked; ${found.problems.length ? found.problems.slice(0, 5).join('; ') : 'no problem found'}`,
    );
  } catch (error) {
    ctx.checks.check(scope, 'no corruption (amcheck: heap pages and B-tree indexes)', false, `the check could not open the database: ${(error as Error).message.slice(0, 500)}`);
  }
}
