/**
 * `Expect: 100-continue` as curl sends it for any body over 1 MB: the
 * server says "100 Continue" only once it wants the body, so a call it
 * refuses (a wrong key here) is answered before the client sends a byte of
 * its upload. Node, left to itself, said 100 at once, and the 5 MB came for
 * nothing. src/http/expect-continue.ts.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { corpusFile } from '../support/corpus.js';
import { multipartBody, parseResponse } from '../support/raw-http.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t?.close());

interface Peer {
  readonly socket: Socket;
  text(): string;
  readonly closed: Promise<void>;
}

async function open(): Promise<Peer> {
  const socket = connect(Number(new URL(t.url).port), '127.0.0.1');
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => (text += chunk));
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { socket, text: () => text, closed };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const uploadHead = (key: string, length: number, path = '/api/v1/verify') =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: multipart/form-data; boundary=optmark-boundary\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n\r\n`;

it('a call with a wrong key is answered 401 without a "100 Continue", before any of its 5 MB is sent, and its connection is closed', async () => {
  const peer = await open();
  peer.socket.write(uploadHead(`omk_${'x'.repeat(40)}`, 5_000_000, '/api/v1/protect'));
  await peer.closed;
  expect(peer.text()).not.toContain('100 Continue');
  const answer = parseResponse(peer.text());
  expect(answer.status).toBe(401);
  expect(answer.headers.connection).toBe('close');
  expect(JSON.parse(answer.body)).toMatchObject({ code: 'invalid_api_key' });
});

it('a call that is admitted is told "100 Continue" before its body, which it then sends, and is answered', async () => {
  const key = await t.key();
  const body = multipartBody([{ name: 'image', filename: 'a.jpg', data: corpusFile('exiftool/XMP.jpg').bytes }]);
  const peer = await open();
  peer.socket.write(uploadHead(key, body.length));
  await expect.poll(() => peer.text(), { timeout: 5000 }).toBe('HTTP/1.1 100 Continue\r\n\r\n');
  // Nothing else comes while the body has not: the call waits for it.
  await sleep(300);
  expect(peer.text()).toBe('HTTP/1.1 100 Continue\r\n\r\n');
  peer.socket.write(body);
  await expect.poll(() => peer.text().includes('"optedOut"'), { timeout: 10_000 }).toBe(true);
  const answer = parseResponse(peer.text().slice('HTTP/1.1 100 Continue\r\n\r\n'.length));
  expect(answer.status).toBe(200);
  expect(answer.headers.connection).not.toBe('close');
  peer.socket.destroy();
});

it('a form of a page (read before the route looks at it) is told "100 Continue" at once, and answered once sent', async () => {
  const form = 'email=someone%40example.com&password=not-it&pre=none';
  const peer = await open();
  peer.socket.write(`POST /sign-in HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${form.length}\r\nExpect: 100-continue\r\n\r\n`);
  await expect.poll(() => peer.text(), { timeout: 5000 }).toBe('HTTP/1.1 100 Continue\r\n\r\n');
  peer.socket.write(form);
  await expect.poll(() => /\r\n\r\n[\s\S]*\r\n\r\n[\s\S]*\}/.test(peer.text()), { timeout: 5000 }).toBe(true);
  const answer = parseResponse(peer.text().slice('HTTP/1.1 100 Continue\r\n\r\n'.length));
  expect(answer.status).toBeGreaterThanOrEqual(400);
  expect(JSON.parse(answer.body)).toMatchObject({ code: expect.any(String), error: expect.any(String) });
  peer.socket.destroy();
});
