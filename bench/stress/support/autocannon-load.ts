/**
 * The overload step as the hardening plan words it: autocannon (npm) at
 * concurrency 32 for 60 s, posting protect and verify of the corpus in turn.
 * Our own client (clients.ts) drives every other run, because the fault
 * scenarios judge each answer by when it was sent and by its JSON `code`;
 * this run is the cross-check with a standard tool. autocannon reports the
 * status of every answer and its latency percentiles; the `onResponse` hook
 * counts the 200s per operation, so usage can be compared with them. When
 * its time is up autocannon stops without reading the answers still on
 * their way (at most one per connection): the server counts those 200s, so
 * usage may exceed the 200s seen by up to the number of connections.
 */
import { autocannon } from '../../autocannon.js';
import type { Operation, Upload } from './corpus.js';

export interface AutocannonRun {
  readonly url: string;
  readonly key: string;
  readonly uploads: readonly Upload[];
  readonly connections: number;
  readonly seconds: number;
}

export interface AutocannonOutcome {
  readonly requests: number;
  readonly seconds: number;
  /** Answers by HTTP status. */
  readonly statuses: Readonly<Record<string, number>>;
  /** 200s by operation. */
  readonly ok: Readonly<Record<Operation, number>>;
  /** Connection errors, timeouts included. */
  readonly errors: number;
  readonly timeouts: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

export async function autocannonLoad(run: AutocannonRun): Promise<AutocannonOutcome> {
  const ok: Record<Operation, number> = { protect: 0, verify: 0 };
  // Each connection walks this list in order: each file protected, then verified, then the next file.
  const requests = run.uploads.flatMap((upload) =>
    (['protect', 'verify'] as const).map((op) => ({
      method: 'POST' as const,
      path: `/api/v1/${op}`,
      headers: { 'content-type': upload.contentType, authorization: `Bearer ${run.key}` },
      body: upload.body,
      onResponse: (status: number) => {
        if (status === 200) ok[op]++;
      },
    })),
  );
  const result = await autocannon({ url: run.url, connections: run.connections, duration: run.seconds, timeout: 30, requests });
  const statuses: Record<string, number> = {};
  for (const [status, { count }] of Object.entries(result.statusCodeStats ?? {})) statuses[status] = Number(count);
  return {
    requests: result.requests.total,
    seconds: result.duration,
    statuses,
    ok,
    errors: result.errors,
    timeouts: result.timeouts,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    maxMs: result.latency.max,
  };
}
