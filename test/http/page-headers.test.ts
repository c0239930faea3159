/**
 * Every HTML page the server sends carries the dashboard's security headers
 * (a Content-Security-Policy that allows nothing but this site's stylesheet,
 * scripts and images, no framing, no caching, no referrer), the error pages
 * answered before the dashboard's own hooks run included: a 413 refused
 * from Content-Length, and a 503 while the server stops.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { HeldUpload, multipartBody, parseResponse, rawExchange } from '../support/raw-http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { corpusFile } from '../support/corpus.js';

const EXPECTED = {
  'content-security-policy':
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' blob: data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'cross-origin-opener-policy': 'same-origin',
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
};

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t?.close());

function expectPageHeaders(headers: Record<string, string>): void {
  expect(headers['content-type']).toBe('text/html; charset=utf-8');
  for (const [name, value] of Object.entries(EXPECTED)) expect(headers[name], name).toBe(value);
}

it('a page of the dashboard itself (the reference)', async () => {
  const response = await fetch(`${t.url}/sign-in`, { headers: { Accept: 'text/html' } });
  expect(response.status).toBe(200);
  expectPageHeaders(Object.fromEntries(response.headers));
});

it('a 413 page, refused from Content-Length before any route hook', async () => {
  const head = `POST /mark HTTP/1.1\r\nHost: x\r\nAccept: text/html\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: ${30 * 1024 * 1024}\r\n\r\n`;
  const exchange = await rawExchange(t.url, [head], 5000);
  const answer = parseResponse(exchange.text);
  expect(answer.status).toBe(413);
  expectPageHeaders(answer.headers);
});

it('a 503 page, while the server stops', async () => {
  // A call in flight keeps the server stopping (not stopped); a page asked for on a
  // connection whose request began before the stop (so it is not idle, and not closed) gets the 503.
  const key = await t.key();
  const held = new HeldUpload(t.url, key, multipartBody([{ name: 'image', filename: 'a.jpg', data: corpusFile('exiftool/XMP.jpg').bytes }]));
  await new Promise((resolve) => setTimeout(resolve, 200));
  const { port } = new URL(t.url);
  const socket = connect(Number(port), '127.0.0.1');
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => (text += chunk));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.write('GET /sign-in HTTP/1.1\r\nHost: x\r\n');
  await new Promise((resolve) => setTimeout(resolve, 100));
  const closing = t.server.app.close();
  await new Promise((resolve) => setTimeout(resolve, 100));
  socket.write('Accept: text/html\r\n\r\n');
  await expect.poll(() => text.includes('</html>'), { timeout: 5000 }).toBe(true);
  const answer = parseResponse(text);
  expect(answer.status).toBe(503);
  expectPageHeaders(answer.headers);
  socket.destroy();
  expect((await held.finish()).status).toBe(200);
  await closing;
});
