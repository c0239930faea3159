/**
 * The database goes away under a running server (PostgreSQL behind a TCP
 * proxy this test closes): calls get a JSON 503 with Retry-After, the
 * process stays up, and it serves again once the database is back.
 */
import { createServer, connect, type Server as NetServer, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { freshPgDatabase } from '../support/server.js';
import { killAll, optmarkJson, postImage, sleep, startServe } from './support.js';

/** A TCP proxy to the test PostgreSQL that can be cut (every connection destroyed) and restored on the same port. */
class DbProxy {
  private server: NetServer | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(
    private readonly upstreamHost: string,
    private readonly upstreamPort: number,
  ) {}

  async open(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.upstreamPort, this.upstreamHost);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}

let db: Awaited<ReturnType<typeof freshPgDatabase>>;
let proxy: DbProxy;

beforeAll(async () => {
  db = await freshPgDatabase();
  const upstream = new URL(inject('pgAdminUrl'));
  proxy = new DbProxy(upstream.hostname, Number(upstream.port || 5432));
  await proxy.open();
});
afterAll(async () => {
  await killAll();
  await proxy?.close();
  await db?.drop();
});

interface Answer {
  status: number;
  type: string | null;
  retryAfter: string | null;
  body: Record<string, unknown>;
  ms: number;
}

async function answer(call: () => Promise<Response>): Promise<Answer> {
  const started = performance.now();
  const response = await call();
  const text = await response.text();
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { notJson: text };
  }
  return { status: response.status, type: response.headers.get('content-type'), retryAfter: response.headers.get('retry-after'), body, ms: performance.now() - started };
}

it('database unreachable: 503 service_unavailable with Retry-After, the process stays up, and recovers when the database is back', async () => {
  const proxied = new URL(db.url);
  proxied.port = String(proxy.port);
  // Two worker processes (the default on PostgreSQL is one per CPU): both must ride the outage out.
  const env = { DATABASE_URL: proxied.toString(), OPTMARK_WORKERS: '2' };
  await optmarkJson(['accounts', 'create', '--name', 'acme', '--plan', 'pro'], env);
  const { key } = await optmarkJson<{ key: string }>(['keys', 'issue', '--account', 'acme'], env);

  const server = await startServe(env);
  // Both workers started (a worker that cannot reach the database while it starts ends and is started again).
  await server.waitFor(() => (server.stdout.match(/"msg":"Server listening at/g) ?? []).length === 2, 'both workers listening', 30_000);
  await sleep(300);
  const protect = () => answer(() => postImage(server.url, key));
  const readyz = () => answer(() => fetch(`${server.url}/readyz`));
  let granted = 0;
  expect((await protect()).status).toBe(200);
  granted++;
  expect((await readyz()).status).toBe(200);

  await proxy.close();

  const during = [await protect(), await readyz(), await protect(), await answer(() => fetch(`${server.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } })), await readyz()];
  for (const a of during) {
    expect(a.status, JSON.stringify(a.body)).toBe(503);
    expect(a.type).toMatch(/^application\/json/);
    expect(a.body).toMatchObject({ code: 'service_unavailable', error: expect.any(String), requestId: expect.any(String) });
    expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
    // FAULT-1 of the hardening plan: within the pool's connection timeout (3 s) + 0.5 s.
    expect(a.ms).toBeLessThan(3_500);
  }
  // Liveness does not depend on the database.
  expect((await answer(() => fetch(`${server.url}/healthz`))).status).toBe(200);
  await sleep(500);
  expect(server.running).toBe(true);

  await proxy.open(); // the same port again
  const deadline = Date.now() + 10_000;
  let last: Answer | undefined;
  while (Date.now() < deadline) {
    last = await protect();
    if (last.status === 200) break;
    expect(last.status).toBe(503);
    await sleep(200);
  }
  expect(last?.status, JSON.stringify(last?.body)).toBe(200);
  granted++;
  expect((await readyz()).status).toBe(200);
  expect((await protect()).status).toBe(200);
  granted++;

  // Calls that got 503 were not counted.
  const usage = await optmarkJson<{ protect: { used: number } }>(['usage', '--account', 'acme'], env);
  expect(usage.protect.used).toBe(granted);

  expect(await server.stop(), `${server.stderr.slice(-2000)}\n${server.stdout.split('\n').filter((l) => /"level":(40|50|60)/.test(l)).slice(-8).join('\n')}`).toEqual({ code: 0, signal: null });
  expect(server.stderr).not.toMatch(/Unhandled|uncaught/i);
  // With several workers (the default on PostgreSQL), none of them died either.
  expect(server.stderr).not.toMatch(/worker \d+ \(pid \d+\) ended/);
}, 60_000);
