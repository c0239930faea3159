/**
 * The load generator: N clients, each posting one request at a time on a
 * keep-alive connection, recording every outcome (status, error code,
 * Retry-After, when it started and ended). Its own code rather than wrk or
 * autocannon because the fault scenarios judge each response by when it was
 * sent relative to the fault, and need the JSON `code` of every refusal.
 */
import { Agent, request } from 'node:http';
import type { Operation, Upload } from './corpus.js';
import { Histogram } from './histogram.js';
import { sleep } from './net.js';
import { ms, table } from './report.js';

export interface Outcome {
  readonly op: Operation;
  readonly file: string;
  /** performance.now() when the request was issued and when its answer (or failure) was complete. */
  readonly start: number;
  readonly end: number;
  /** 0 when no HTTP answer came (connection refused or reset, timeout). */
  readonly status: number;
  /** The body's `code` for a non-200 answer; the socket error's code when there was no answer. */
  readonly code: string | undefined;
  readonly json: boolean;
  readonly retryAfter: string | undefined;
}

/** How an outcome is counted in tables: `200`, `503 service_unavailable`, `no answer ECONNRESET`. */
export const label = (o: Outcome) => (o.status === 200 ? '200' : o.status === 0 ? `no answer ${o.code}` : `${o.status} ${o.json ? o.code : 'non-JSON body'}`);

export interface LoadOptions {
  readonly url: string;
  readonly key: string;
  readonly clients: number;
  /** The next call; `key`, when given, replaces the load's own for that call. */
  readonly next: () => { op: Operation; upload: Upload; key?: string };
  readonly timeoutMs?: number;
  /** After a connection failure a client waits this long (the server may be restarting). */
  readonly errorPauseMs?: number;
}

const running = new Set<Load>();

/** Stop every load still running (a scenario that failed half-way must not leave clients behind). */
export async function stopAllLoads(): Promise<void> {
  await Promise.all([...running].map((load) => load.stop()));
}

export class Load {
  readonly outcomes: Outcome[] = [];
  inFlight = 0;
  private stopping = false;
  private gate: Promise<void> | undefined;
  private openGate: (() => void) | undefined;
  private loops: Promise<void>[] = [];
  private readonly agent: Agent;
  private readonly target: URL;

  constructor(private readonly options: LoadOptions) {
    this.agent = new Agent({ keepAlive: true, maxSockets: options.clients });
    this.target = new URL(options.url);
  }

  start(): this {
    running.add(this);
    this.loops = Array.from({ length: this.options.clients }, () => this.client());
    return this;
  }

  /** No new request is issued until resume(); those in flight go on. */
  pause(): void {
    this.gate ??= new Promise((resolve) => (this.openGate = resolve));
  }

  resume(): void {
    this.openGate?.();
    this.gate = this.openGate = undefined;
  }

  /** No new requests; resolves when those in flight have ended. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.resume();
    await Promise.all(this.loops);
    this.agent.destroy();
    running.delete(this);
  }

  private async client(): Promise<void> {
    while (!this.stopping) {
      if (this.gate) {
        await this.gate;
        continue;
      }
      const { op, upload, key } = this.options.next();
      const outcome = await this.send(op, upload, key ?? this.options.key);
      this.outcomes.push(outcome);
      if (outcome.status === 0) await sleep(this.options.errorPauseMs ?? 50);
    }
  }

  private send(op: Operation, upload: Upload, key: string): Promise<Outcome> {
    const start = performance.now();
    this.inFlight++;
    return new Promise<Outcome>((resolve) => {
      let done = false;
      const finish = (status: number, code: string | undefined, json: boolean, retryAfter: string | undefined) => {
        if (done) return;
        done = true;
        this.inFlight--;
        resolve({ op, file: upload.name, start, end: performance.now(), status, code, json, retryAfter });
      };
      const req = request(
        {
          host: this.target.hostname,
          port: this.target.port,
          path: `/api/v1/${op}`,
          method: 'POST',
          agent: this.agent,
          headers: { Authorization: `Bearer ${key}`, 'Content-Type': upload.contentType, 'Content-Length': upload.body.length },
        },
        (res) => {
          const status = res.statusCode ?? 0;
          const retryAfter = res.headers['retry-after'];
          // 200 bodies can be megabytes of base64: only refusals are kept and parsed.
          const parts: Buffer[] = [];
          res.on('data', (part: Buffer) => status !== 200 && parts.push(part));
          res.on('error', (error: NodeJS.ErrnoException) => finish(0, error.code ?? error.message, false, undefined));
          res.on('end', () => {
            let code: string | undefined;
            let json = status === 200;
            if (status !== 200) {
              try {
                code = (JSON.parse(Buffer.concat(parts).toString('utf8')) as { code?: string }).code;
                json = /^application\/json/.test(res.headers['content-type'] ?? '');
              } catch {
                json = false;
              }
            }
            finish(status, code, json, retryAfter);
          });
        },
      );
      req.setTimeout(this.options.timeoutMs ?? 60_000, () => req.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })));
      req.on('error', (error: NodeJS.ErrnoException) => finish(0, error.code ?? error.message, false, undefined));
      req.end(upload.body);
    });
  }
}

/** Counts per label (and operation), for tables. */
export function countBy(outcomes: readonly Outcome[], key: (o: Outcome) => string = label): Map<string, number> {
  const counts = new Map<string, number>();
  for (const o of outcomes) counts.set(key(o), (counts.get(key(o)) ?? 0) + 1);
  return new Map([...counts].sort(([a], [b]) => a.localeCompare(b)));
}

export function latencies(outcomes: readonly Outcome[]): Histogram {
  const histogram = new Histogram();
  for (const o of outcomes) histogram.record(o.end - o.start);
  return histogram;
}

export const ok = (outcomes: readonly Outcome[], op?: Operation) => outcomes.filter((o) => o.status === 200 && (op === undefined || o.op === op)).length;

/** The 200s of each operation: what the server's usage must show. */
export const okUsage = (outcomes: readonly Outcome[]): Record<Operation, number> => ({ protect: ok(outcomes, 'protect'), verify: ok(outcomes, 'verify') });

/** A JSON 503 service_unavailable with Retry-After: the answer while the database is away or cannot be written. */
export const unavailable = (o: Outcome) => o.status === 503 && o.code === 'service_unavailable' && o.json && Number(o.retryAfter) >= 1;

/** Outcomes per label, one column per operation. */
export function countsTable(outcomes: readonly Outcome[]): string {
  const labels = [...countBy(outcomes).keys()];
  const per = (op: Operation, l: string) => outcomes.filter((o) => o.op === op && label(o) === l).length;
  return table(
    ['answer', 'protect', 'verify', 'total'],
    labels.map((l) => [l, per('protect', l), per('verify', l), per('protect', l) + per('verify', l)]),
  );
}

/** Latency of answered requests per operation and outcome. */
export function latencyTable(outcomes: readonly Outcome[]): string {
  const groups = countBy(outcomes, (o) => `${o.op} ${label(o)}`);
  return table(
    ['requests', 'n', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms'],
    [...groups.keys()].map((name) => {
      const h = latencies(outcomes.filter((o) => `${o.op} ${label(o)}` === name));
      return [name, h.count, ms(h.percentile(50)), ms(h.percentile(90)), ms(h.percentile(99)), ms(h.max)];
    }),
  );
}
