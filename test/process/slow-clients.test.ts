/**
 * Clients that misbehave below HTTP get the same JSON errors as everyone
 * else: a request whose headers never finish arriving (408 request_timeout)
 * and headers over Node's 16 KB limit (431 header_too_large).
 */
import { request } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseResponse, rawExchange as raw } from '../support/raw-http.js';
import { freshPgDatabase } from '../support/server.js';
import { killAll, startServe, type Server } from './support.js';

let db: Awaited<ReturnType<typeof freshPgDatabase>>;
let server: Server;

beforeAll(async () => {
  db = await freshPgDatabase();
  server = await startServe({ DATABASE_URL: db.url, OPTMARK_HEADERS_TIMEOUT: '1' });
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
