/**
 * Clients that misbehave below HTTP get the same JSON errors as everyone
 * else: a request whose headers never finish arriving (408 request_timeout)
 * and headers over Node's 16 KB limit (431 header_too_large). Slowloris at
 * scale (hardening plan DOS-4) is cut on time without slowing anyone else,
 * and the upload stall guard cuts a stalled body but never a slow, steady
 * one (DOS-5).
 */
import { request } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { corpusFile } from '../support/corpus.js';
import { multipartBody, pacedExchange, parseResponse, rawExchange as raw, rawPost, type Paced, type RawResponse } from '../support/raw-http.js';
import { freshPgDatabase } from '../support/server.js';
import { killAll, optmarkJson, startServe, type Server } from './support.js';

let db: Awaited<ReturnType<typeof freshPgDatabase>>;
let server: Server;
let key: string;

beforeAll(async () => {
  db = await freshPgDatabase();
  const env = { DATABASE_URL: db.url };
  await optmarkJson(['accounts', 'create', '--name', 'slow', '--plan', 'pro'], env);
  ({ key } = await optmarkJson<{ key: string }>(['keys', 'issue', '--account', 'slow'], env));
  // The smallest timeouts allowed (whole seconds), so that a test waits
  // seconds, not the defaults' 10 and 20; the request timeout keeps its
  // default of 120 s, far above any test here.
  server = await startServe({ ...env, OPTMARK_HEADERS_TIMEOUT: '1', OPTMARK_UPLOAD_STALL_SECONDS: '1' });
});
afterAll(async () => {
  await killAll();
  await db?.drop();
});

const rawExchange = (bytes: string, waitMs: number) => raw(server.url, bytes, waitMs);

// Node checks the headers timeout every connectionsCheckingInterval; the
// server sets that to 1 s, so with OPTMARK_HEADERS_TIMEOUT=1 a silent client
// gets its 408 about 1 s later, not up to 30 s later.
it('half a request line and then silence gets 408 request_timeout JSON about 1 s later', async () => {
  const exchange = await rawExchange('POST /api/v1/pro', 4_000);
  expect(exchange.text, `closed=${exchange.closed} after ${Math.round(exchange.ms)} ms`).not.toBe('');
  const response = parseResponse(exchange.text);
  expect(response.status).toBe(408);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  expect(JSON.parse(response.body)).toMatchObject({ code: 'request_timeout', error: expect.any(String), requestId: expect.any(String) });
  expect(exchange.closed).toBe(true);
}, 10_000);

it('a request with a 20 KB header gets 431 header_too_large JSON', async () => {
  const { status, type, body } = await new Promise<{ status: number; type: string | undefined; body: string }>((resolve, reject) => {
    const req = request(`${server.url}/api/v1/usage`, { headers: { 'X-Padding': 'a'.repeat(20 * 1024) }, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, type: res.headers['content-type'], body: text }));
    });
    req.on('error', reject);
    req.end();
  });
  expect(status).toBe(431);
  expect(type).toMatch(/^application\/json/);
  expect(JSON.parse(body)).toMatchObject({ code: 'header_too_large', error: expect.any(String), requestId: expect.any(String) });

  // Over raw TCP too, and the connection is closed after the answer.
  const exchange = await rawExchange(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Padding: ${'a'.repeat(20 * 1024)}\r\n\r\n`, 5_000);
  expect(exchange.closed).toBe(true);
  const response = parseResponse(exchange.text);
  expect(response.status).toBe(431);
  expect(JSON.parse(response.body)).toMatchObject({ code: 'header_too_large' });

  // The server is unharmed.
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  expect(server.running).toBe(true);
});

/** A header block that never ends: the request line, then one header whose value goes on for ever. */
const NEVER_ENDING = Buffer.from(`GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ${'a'.repeat(1000)}`, 'latin1');

/**
 * One slowloris client: once connected it sends one byte of NEVER_ENDING
 * every `gapMs` until the server answers, then waits for the server to close
 * (or `giveUpMs`, after which it closes itself and the test fails on it).
 */
function trickle(url: string, onConnected: () => void, gapMs = 500, giveUpMs = 15_000): Promise<Paced> {
  return pacedExchange(url, NEVER_ENDING, (ms) => Math.floor(ms / gapMs) + 1, { tickMs: gapMs, giveUpMs, onConnected });
}

/**
 * `size` slowloris clients held open until stop(), as an attacker holds
 * them: each one the server closes is replaced at once. `full` resolves once
 * the first `size` are connected; stop() resolves with every client's
 * outcome once the last of them is closed.
 */
function slowloris(url: string, size: number) {
  const outcomes: Array<Promise<Paced>> = [];
  let attacking = true;
  let open = 0;
  let connected = 0;
  let filled: () => void;
  const full = new Promise<void>((resolve) => (filled = resolve));
  const launch = () => {
    const outcome = trickle(url, () => {
      open++;
      if (++connected === size) filled();
    }).then((result) => {
      open--;
      if (attacking) launch();
      return result;
    });
    outcomes.push(outcome);
  };
  for (let i = 0; i < size; i++) launch();
  return {
    full,
    get open() {
      return open;
    },
    stop(): Promise<Paced[]> {
      attacking = false;
      return Promise.all(outcomes);
    },
  };
}

/** One GET on a new connection (as a new client arrives), timed to its last byte. */
function timedGet(url: string, headers: Record<string, string> = {}): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, ms: performance.now() - started }));
    });
    req.on('error', reject);
    req.end();
  });
}

const quantile = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;

// Hardening plan DOS-4. 300 sockets hold 600 descriptors in all (300 here,
// 300 in the server), far under this machine's `ulimit -n` of 20000. With
// OPTMARK_HEADERS_TIMEOUT=1 and Node checking every second (the server sets
// connectionsCheckingInterval to 1 s), each socket is cut between 1 and 2 s
// after it connects, in batches: the normal requests are spread over 2.5 s
// so that they meet those batches of 408s and the attacker's reconnections.
it('300 slowloris sockets (one header byte every 500 ms) all get 408 request_timeout JSON on time, while normal requests stay fast', async () => {
  const SOCKETS = 300;
  const attack = slowloris(server.url, SOCKETS);
  await attack.full;

  const latencies: number[] = [];
  const openDuring: number[] = [];
  for (let i = 0; i < 50; i++) {
    openDuring.push(attack.open);
    const { status, ms } = await timedGet(`${server.url}/api/v1/usage`, { Authorization: `Bearer ${key}` });
    expect(status).toBe(200);
    latencies.push(ms);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const outcomes = await attack.stop();

  // The attack really was on while the requests ran.
  openDuring.sort((a, b) => a - b);
  expect(quantile(openDuring, 0.5)).toBeGreaterThanOrEqual(SOCKETS * 0.9);

  latencies.sort((a, b) => a - b);
  const cutAt = outcomes.map((o) => o.ms).sort((a, b) => a - b);
  // The figures docs/reliability.md quotes.
  console.info(
    `slowloris: ${outcomes.length} sockets (${SOCKETS} at a time); normal GET /api/v1/usage during it: p50 ${quantile(latencies, 0.5).toFixed(1)} ms, ` +
      `p99 ${quantile(latencies, 0.99).toFixed(1)} ms; 408 and close after ${cutAt[0]!.toFixed(0)}..${cutAt.at(-1)!.toFixed(0)} ms (p50 ${quantile(cutAt, 0.5).toFixed(0)})`,
  );

  // Of 50 requests, the p99 is the slowest one. The plan's bound is 200 ms
  // (its measurement: max 66 ms); 1 s here,
  // because a CPU-heavy soak may share this 2-core machine with the test.
  expect(quantile(latencies, 0.99)).toBeLessThan(1000);

  expect(outcomes.length).toBeGreaterThan(SOCKETS);
  for (const outcome of outcomes) {
    expect(outcome.closedByServer, `a socket still open after ${Math.round(outcome.ms)} ms`).toBe(true);
    const response = parseResponse(outcome.text);
    expect(response.status).toBe(408);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.headers.connection).toBe('close');
    expect(JSON.parse(response.body)).toMatchObject({ code: 'request_timeout', error: expect.any(String), requestId: expect.any(String) });
    // Never before the headers timeout: a client that is merely slow gets its second.
    expect(outcome.ms).toBeGreaterThan(950);
    // The plan's bound is the headers timeout + 1 s (one checking interval):
    // 2 s here. 1 s more for a busy machine.
    expect(outcome.ms).toBeLessThan(3000);
  }

  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  expect(server.running).toBe(true);
}, 60_000);

/**
 * POST a whole request (head and body) over a raw socket at `bytesPerSecond`,
 * on a schedule checked every 20 ms: a late timer sends what is due at once,
 * as a steady link would have delivered it. Stops writing once the server
 * answers; resolves when the server closes.
 */
async function sendAt(url: string, bytes: Buffer, bytesPerSecond: number): Promise<{ response: RawResponse; ms: number; sent: number }> {
  const paced = await pacedExchange(url, bytes, (ms) => Math.floor((ms / 1000) * bytesPerSecond), { tickMs: 20, giveUpMs: 30_000 });
  if (!paced.closedByServer) throw new Error(`no answer after 30 s (${paced.sent} of ${bytes.length} bytes sent)`);
  return { response: parseResponse(paced.text), ms: paced.ms, sent: paced.sent };
}

const usage = async () => {
  const body = (await (await fetch(`${server.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } })).json()) as { protect: { used: number } };
  return body.protect.used;
};

/** A real JPEG of 580 KB, protected in one multipart request over raw TCP. */
const IMAGE = corpusFile('exifr/cmyk-multi-icc.jpg').bytes;
const protectRequest = () =>
  rawPost(
    '/api/v1/protect',
    { Authorization: `Bearer ${key}`, 'Content-Type': 'multipart/form-data; boundary=optmark-boundary' },
    multipartBody([{ name: 'image', filename: 'slow.jpg', type: 'image/jpeg', data: IMAGE }]),
  );
const KiB = 1024;

// Hardening plan DOS-5, in our configuration: the guard's floor is 64 KiB per
// OPTMARK_UPLOAD_STALL_SECONDS (1 s here, so 64 KiB/s). An upload at twice
// the floor spans four of its windows and must never be cut; the plan's
// 25 MiB at 32 KiB/s could not finish within our 120 s request timeout
// anyway (docs/operations.md, "Timeouts and limits", has the arithmetic).
it('a slow but steady upload (128 KiB/s, twice the stall floor, over 4 s) is not cut: 200, counted once', async () => {
  const before = await usage();
  const bytes = protectRequest();
  expect(bytes.length).toBeGreaterThan(4 * 128 * KiB);
  const { response, ms, sent } = await sendAt(server.url, bytes, 128 * KiB);
  console.info(`slow upload: ${sent} bytes at 128 KiB/s answered ${response.status} after ${(ms / 1000).toFixed(1)} s`);
  expect(response.status, response.body.slice(0, 300)).toBe(200);
  expect(JSON.parse(response.body)).toMatchObject({ mimeType: 'image/jpeg', imageBase64: expect.any(String) });
  expect(sent).toBe(bytes.length);
  // It did take several stall windows (a fast send would prove nothing).
  expect(ms).toBeGreaterThan(3500);
  expect(await usage()).toBe(before + 1);
}, 30_000);

// The other side of the same floor, so that the 200 above is not the guard
// being off: half the floor is cut at the end of the first window.
it('the same upload at 32 KiB/s (half the stall floor) is cut with 408 request_timeout after about one window, counting nothing', async () => {
  const before = await usage();
  const { response, ms, sent } = await sendAt(server.url, protectRequest(), 32 * KiB);
  console.info(`stalled upload: ${sent} bytes at 32 KiB/s answered ${response.status} after ${(ms / 1000).toFixed(1)} s`);
  expect(response.status, response.body.slice(0, 300)).toBe(408);
  expect(response.headers.connection).toBe('close');
  expect(JSON.parse(response.body)).toMatchObject({ code: 'request_timeout', error: expect.any(String), requestId: expect.any(String) });
  // One 1 s window, then the answer; the rest of the body is never read. The
  // bound is two windows and 2 s more for a busy machine.
  expect(ms).toBeLessThan(4000);
  expect(sent).toBeLessThan(IMAGE.length / 2);
  expect(await usage()).toBe(before);
}, 30_000);
