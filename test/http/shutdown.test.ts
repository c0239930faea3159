/**
 * Stopping the HTTP server while connections are open. Node stops enforcing
 * its header and request timeouts as server.close() begins, and waits for
 * every connection: a connection left silent (a browser's preconnect) held a
 * restart past a minute. src/http/connections.ts bounds each kind.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { corpusFile } from '../support/corpus.js';
import { multipartBody, parseResponse } from '../support/raw-http.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

interface Peer {
  readonly socket: Socket;
  /** Everything the server sent so far. */
  text(): string;
  /** Resolves with the ms from `since` at which the server closed the connection. */
  readonly closed: Promise<number>;
}

async function open(url: string, since: () => number): Promise<Peer> {
  const socket = connect(Number(new URL(url).port), '127.0.0.1');
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => (text += chunk));
  socket.on('error', () => {});
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(performance.now() - since())));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { socket, text: () => text, closed };
}

/** The app's close, or a failure after `ms` (without the fix, it never ended). */
async function closeWithin(server: TestServer, ms: number): Promise<number> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    server.server.app.close(),
    new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`the HTTP server did not close within ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
  return performance.now() - started;
}

it('a connection opened and left silent, and one idle after an answer, do not hold the stop: both are closed at once (the request timeout is 120 s)', async () => {
  t = await startTestServer();
  let stopAt = 0;
  const since = () => stopAt;
  const silent = await open(t.url, since);
  const idle = await open(t.url, since);
  idle.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  await expect.poll(() => idle.text().includes('\r\n\r\n')).toBe(true);
  expect(parseResponse(idle.text()).status).toBe(200);

  stopAt = performance.now();
  expect(await closeWithin(t, 10_000)).toBeLessThan(2000);
  expect(await silent.closed).toBeLessThan(2000);
  expect(await idle.closed).toBeLessThan(2000);
  expect(silent.text()).toBe('');
});

it('a request half sent when the stop begins has until the headers timeout (2 s here) for the rest, then its connection is closed', async () => {
  t = await startTestServer({ env: { OPTMARK_HEADERS_TIMEOUT: '2' } });
  let stopAt = 0;
  const half = await open(t.url, () => stopAt);
  half.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
  await new Promise((resolve) => setTimeout(resolve, 100));

  stopAt = performance.now();
  const ms = await closeWithin(t, 10_000);
  expect(ms).toBeGreaterThan(1500);
  expect(ms).toBeLessThan(5000);
  expect(await half.closed).toBeGreaterThan(1500);
  expect(half.text()).toBe('');
});

it('a call in flight when the stop begins is answered whole; its connection, kept alive, is closed with the answer', async () => {
  t = await startTestServer();
  const key = await t.key();
  let stopAt = 0;
  const call = await open(t.url, () => stopAt);
  const body = multipartBody([{ name: 'image', filename: 'a.jpg', data: corpusFile('exiftool/XMP.jpg').bytes }]);
  call.socket.write(`POST /api/v1/verify HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: multipart/form-data; boundary=optmark-boundary\r\nContent-Length: ${body.length}\r\n\r\n`);
  call.socket.write(body.subarray(0, 100));
  await new Promise((resolve) => setTimeout(resolve, 200));

  stopAt = performance.now();
  const closing = closeWithin(t, 10_000);
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(call.socket.destroyed).toBe(false);
  call.socket.write(body.subarray(100));
  const closedAt = await call.closed;
  const answer = parseResponse(call.text());
  expect(answer.status).toBe(200);
  expect(JSON.parse(answer.body)).toMatchObject({ optedOut: expect.any(Boolean) });
  // Not left open for the keep-alive timeout (5 s) after its answer.
  expect(closedAt).toBeLessThan(2000);
  expect(await closing).toBeLessThan(2000);
});
