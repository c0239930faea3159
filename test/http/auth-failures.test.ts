/**
 * Brute force on keys (hardening plan, AUTH-4), over real HTTP from several
 * loopback addresses (127.0.0.0/8 is all loopback on Linux), with the limit
 * at 5 per minute and the server's clock in the test's hands: after 5 invalid
 * keys from one address, every request of it with a key, valid or not, gets
 * 429 too_many_requests with Retry-After until the minute ends, before the
 * key is looked up and before the body is read, and nothing is counted;
 * other addresses are unaffected; a dashboard session, which presents no
 * key, is not refused with them (sign-in has its own brake on passwords).
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/core/keys/api-key.js';
import { corpusFile } from '../support/corpus.js';
import { signInToDashboard } from '../support/dashboard.js';
import { multipartBody, parseResponse, rawExchange } from '../support/raw-http.js';
import { startTestServer, type TestServer } from '../support/server.js';

const JPEG = corpusFile('exiftool/XMP.jpg').bytes;
const BODY = multipartBody([{ name: 'image', filename: 'a.jpg', data: JPEG }]);
const MULTIPART = 'multipart/form-data; boundary=optmark-boundary';
const UNKNOWN_KEY = 'omk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA0xqHyc';
const LIMIT = 5;

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
}

/** One request from the loopback address `from`, on a connection of its own. */
function send(t: TestServer, from: string, options: { method?: string; path: string; headers?: Record<string, string>; body?: Uint8Array | string }): Promise<Answer> {
  const { port } = new URL(t.url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, localAddress: from, agent: false, method: options.method ?? 'POST', path: options.path, headers: options.headers },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

const protect = (t: TestServer, from: string, key: string | undefined, headers: Record<string, string> = {}) =>
  send(t, from, { path: '/api/v1/protect', headers: { 'Content-Type': MULTIPART, ...(key === undefined ? {} : { Authorization: `Bearer ${key}` }), ...headers }, body: BODY });

const usage = (t: TestServer, from: string, key: string) => send(t, from, { method: 'GET', path: '/api/v1/usage', headers: { Authorization: `Bearer ${key}` } });


function expectRefused(answer: Answer, retryAfter?: number): void {
  expect(answer.status, answer.text).toBe(429);
  expect(answer.headers['retry-after']).toBeDefined();
  const seconds = Number(answer.headers['retry-after']);
  if (retryAfter !== undefined) expect(seconds).toBe(retryAfter);
  else expect(seconds >= 1 && seconds <= 60).toBe(true);
  expect(answer.headers['www-authenticate']).toBeUndefined();
  expect(answer.headers.ratelimit).toBeUndefined();
}

describe('invalid API keys per client address (limit 5 per minute)', () => {
  let t: TestServer;
  const clock = { time: new Date('2026-06-10T12:00:00Z'), now: () => clock.time };
  const advance = (ms: number) => (clock.time = new Date(clock.time.getTime() + ms));
  let account: string;
  let valid: string;
  let badChecksum: string;
  let revoked: string;

  beforeAll(async () => {
    t = await startTestServer({ clock, env: { OPTMARK_AUTH_FAILURES_PER_MINUTE: String(LIMIT) } });
    account = 'brute-force-target';
    await t.server.admin.createAccount(account, 'pro');
    valid = (await t.server.admin.issueKey(account)).key;
    const gone = await t.server.admin.issueKey(account);
    await t.server.admin.revokeKey(gone.id);
    revoked = gone.key;
    badChecksum = `${valid.slice(0, -1)}${valid.endsWith('A') ? 'B' : 'A'}`;
  });
  afterAll(async () => t?.close());

  it('after 5 invalid keys from one address, its next request, even with a valid key, is 429 too_many_requests with Retry-After; nothing is counted', async () => {
    const from = '127.0.0.2';
    // Five invalid keys of every kind (malformed, bad checksum, unknown, revoked): each its 401.
    for (const key of ['not-a-key', badChecksum, UNKNOWN_KEY, revoked]) {
      const answer = await protect(t, from, key);
      expect(answer.status).toBe(401);
      expect(JSON.parse(answer.text)).toMatchObject({ code: 'invalid_api_key' });
    }
    // A request without a key does not count, and below the limit a valid key works.
    expect(JSON.parse((await protect(t, from, undefined)).text)).toMatchObject({ code: 'missing_api_key' });
    expect((await protect(t, from, valid)).status).toBe(200);
    advance(15_000);
    expect((await protect(t, from, 'omk_short')).status).toBe(401); // the fifth

    // From now on, until the minute that opened with the first failure ends (45 s from here).
    const refused = await protect(t, from, valid, { 'Request-Id': 'brute-1' });
    expectRefused(refused, 45);
    expect(refused.headers['content-type']).toBe('application/json; charset=utf-8');
    const body = JSON.parse(refused.text) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['code', 'error', 'requestId']);
    expect(body).toMatchObject({ code: 'too_many_requests', requestId: 'brute-1' });
    expect(body.error).toMatch(/invalid API key \(5 within 60 seconds\).*45 seconds/);
    expect(refused.headers['request-id']).toBe('brute-1');
    // A wrong key gets the same answer as the right one: the 429 tells nothing about keys.
    const wrong = await protect(t, from, UNKNOWN_KEY, { 'Request-Id': 'brute-1' });
    expectRefused(wrong, 45);
    expect(wrong.text).toBe(refused.text);
    expectRefused(await usage(t, from, valid), 45);
    expectRefused(await send(t, from, { path: '/api/v1/verify', headers: { Authorization: `Bearer ${valid}`, 'Content-Type': MULTIPART }, body: BODY }), 45);
    // Without a key there is nothing to refuse: still the 401 that says a key is missing.
    expect((await protect(t, from, undefined)).status).toBe(401);

    // Only the one 200 counted: no quota for refused calls.
    expect((await t.server.admin.usage(account)).protect.used).toBe(1);
    expect((await t.server.admin.usage(account)).verify.used).toBe(0);
  });

  it('is refused before the body is read: the 429 comes back with most of the upload never sent', async () => {
    const from = '127.0.0.3';
    for (let i = 0; i < LIMIT; i++) expect((await usage(t, from, UNKNOWN_KEY)).status).toBe(401);
    const head = `POST /api/v1/protect HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${valid}\r\nContent-Type: ${MULTIPART}\r\nContent-Length: ${BODY.length}\r\n\r\n`;
    const { text } = await rawExchange(t.url, [head, BODY.subarray(0, 100)], 5000, 0, { localAddress: from, until: (r) => r.includes('\r\n\r\n') && r.includes('}') });
    const answer = parseResponse(text);
    expect(answer.status).toBe(429);
    expect(JSON.parse(answer.body)).toMatchObject({ code: 'too_many_requests' });
    expect(Number(answer.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });

  it('50 unknown keys sent at once from one address: 5 are looked up (401), the other 45 wait for them and are refused without a lookup (429)', async () => {
    const from = '127.0.0.20';
    // 50 connections opened first, then the 50 requests written together, so that they arrive together.
    const { port } = new URL(t.url);
    const sockets = await Promise.all(
      Array.from({ length: 50 }, () => new Promise<Socket>((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port: Number(port), localAddress: from }, () => resolve(socket));
        socket.on('error', reject);
      })),
    );
    const answered = sockets.map(
      (socket) =>
        new Promise<Answer>((resolve) => {
          let text = '';
          socket.setEncoding('utf8');
          socket.on('data', (chunk: string) => (text += chunk));
          socket.on('end', () => {
            const parsed = parseResponse(text);
            resolve({ status: parsed.status, headers: parsed.headers, text: parsed.body });
          });
        }),
    );
    // Each a key of its own, well formed (its checksum holds), so each is looked up in the database.
    for (const socket of sockets) socket.write(`GET /api/v1/usage HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${generateApiKey((n) => randomBytes(n))}\r\nConnection: close\r\n\r\n`);
    const answers = await Promise.all(answered);
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(50 - LIMIT);
    // The others waited for those 5 to be looked up, and were then refused for the rest of the minute.
    for (const answer of answers.filter((a) => a.status === 429)) expectRefused(answer, 60);
    expectRefused(await usage(t, from, valid));
  });

  it('other addresses are unaffected: a valid key from 127.0.0.1 gets 200, a wrong one its 401', async () => {
    const from = '127.0.0.4';
    for (let i = 0; i < LIMIT; i++) expect((await protect(t, from, UNKNOWN_KEY)).status).toBe(401);
    expectRefused(await protect(t, from, valid));
    expect((await protect(t, '127.0.0.1', valid)).status).toBe(200);
    expect((await usage(t, '127.0.0.5', valid)).status).toBe(200);
    expect((await protect(t, '127.0.0.5', UNKNOWN_KEY)).status).toBe(401);
    expectRefused(await protect(t, from, valid));
  });

  it('X-Forwarded-For is not believed without OPTMARK_TRUST_PROXY: a refused address cannot name another', async () => {
    const from = '127.0.0.6';
    for (let i = 0; i < LIMIT; i++) expect((await protect(t, from, UNKNOWN_KEY, { 'X-Forwarded-For': `198.51.100.${i}` })).status).toBe(401);
    expectRefused(await protect(t, from, valid, { 'X-Forwarded-For': '198.51.100.77' }));
  });

  it('once the minute that opened with the first failure has passed, the address works again, with a fresh count', async () => {
    const from = '127.0.0.7';
    for (let i = 0; i < LIMIT; i++) expect((await protect(t, from, UNKNOWN_KEY)).status).toBe(401);
    expectRefused(await protect(t, from, valid), 60);
    advance(59_000);
    expectRefused(await protect(t, from, valid), 1);
    advance(1_000);
    expect((await protect(t, from, valid)).status).toBe(200);
    for (let i = 0; i < LIMIT - 1; i++) expect((await protect(t, from, UNKNOWN_KEY)).status).toBe(401);
    expect((await usage(t, from, valid)).status).toBe(200);
    expect((await protect(t, from, UNKNOWN_KEY)).status).toBe(401);
    expectRefused(await usage(t, from, valid), 60);
  });

  it('a dashboard session presents no key: an address refused for its keys still uses the pages it signed in to', async () => {
    const from = '127.0.0.8';
    const { cookie } = await signInToDashboard(t, account);
    for (let i = 0; i < LIMIT; i++) expect((await protect(t, from, UNKNOWN_KEY)).status).toBe(401);
    expectRefused(await protect(t, from, valid));
    const page = await send(t, from, { method: 'GET', path: '/overview', headers: { Cookie: cookie } });
    expect(page.status).toBe(200);
    expect(page.text).toContain(account);
  });
});

describe('behind a reverse proxy (OPTMARK_TRUST_PROXY)', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ env: { OPTMARK_AUTH_FAILURES_PER_MINUTE: String(LIMIT), OPTMARK_TRUST_PROXY: '127.0.0.1' } });
  });
  afterAll(async () => t?.close());

  it('counts the client that the trusted proxy names in X-Forwarded-For, not the proxy', async () => {
    const valid = await t.key();
    for (let i = 0; i < LIMIT; i++) expect((await protect(t, '127.0.0.1', UNKNOWN_KEY, { 'X-Forwarded-For': '203.0.113.5' })).status).toBe(401);
    expectRefused(await protect(t, '127.0.0.1', valid, { 'X-Forwarded-For': '203.0.113.5' }));
    // Another client through the same proxy, and the proxy's own address, are unaffected.
    expect((await protect(t, '127.0.0.1', valid, { 'X-Forwarded-For': '203.0.113.6' })).status).toBe(200);
    expect((await protect(t, '127.0.0.1', valid)).status).toBe(200);
    // A peer that is not the proxy is counted by its own address, whatever it forwards.
    for (let i = 0; i < LIMIT; i++) expect((await protect(t, '127.0.0.2', UNKNOWN_KEY, { 'X-Forwarded-For': `203.0.113.${10 + i}` })).status).toBe(401);
    expectRefused(await protect(t, '127.0.0.2', valid, { 'X-Forwarded-For': '203.0.113.99' }));
  });
});

describe('OPTMARK_AUTH_FAILURES_PER_MINUTE=0', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ env: { OPTMARK_AUTH_FAILURES_PER_MINUTE: '0' } });
  });
  afterAll(async () => t?.close());

  it('turns the limit off: invalid keys stay 401 and a valid key keeps working', async () => {
    const valid = await t.key();
    for (let i = 0; i < 20; i++) expect((await usage(t, '127.0.0.2', UNKNOWN_KEY)).status).toBe(401);
    expect((await usage(t, '127.0.0.2', valid)).status).toBe(200);
  });
});

describe('requests that came through a proxy the server does not trust', () => {
  /** A server whose warnings are collected, one JSON log line each. */
  async function logging(env: Record<string, string>): Promise<{ t: TestServer; warnings: string[] }> {
    const warnings: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n')) if (line.includes('"level":40')) warnings.push(line);
        done();
      },
    });
    return { t: await startTestServer({ env, logTo: stream }), warnings };
  }
  const proxyWarnings = (warnings: string[]) => warnings.filter((line) => line.includes('X-Forwarded-For'));

  it('without OPTMARK_TRUST_PROXY, the first request carrying X-Forwarded-For logs one warning saying that every client behind it shares one count of invalid keys', async () => {
    const { t, warnings } = await logging({ OPTMARK_AUTH_FAILURES_PER_MINUTE: String(LIMIT) });
    try {
      const valid = await t.key();
      expect((await usage(t, '127.0.0.3', valid)).status).toBe(200);
      expect(proxyWarnings(warnings)).toEqual([]);
      for (const client of ['203.0.113.7', '203.0.113.8']) {
        expect((await send(t, '127.0.0.3', { method: 'GET', path: '/api/v1/usage', headers: { Authorization: `Bearer ${valid}`, 'X-Forwarded-For': client } })).status).toBe(200);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
      const said = proxyWarnings(warnings);
      expect(said).toHaveLength(1);
      expect(JSON.parse(said[0]!)).toMatchObject({
        peer: '127.0.0.3',
        msg: expect.stringMatching(/OPTMARK_TRUST_PROXY is not set.*one client's invalid API keys lock out every client behind it/),
      });
    } finally {
      await t.close();
    }
  });

  it('with the proxy trusted, nothing is said', async () => {
    const { t, warnings } = await logging({ OPTMARK_AUTH_FAILURES_PER_MINUTE: String(LIMIT), OPTMARK_TRUST_PROXY: '127.0.0.1' });
    try {
      const valid = await t.key();
      expect((await send(t, '127.0.0.1', { method: 'GET', path: '/api/v1/usage', headers: { Authorization: `Bearer ${valid}`, 'X-Forwarded-For': '203.0.113.7' } })).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(proxyWarnings(warnings)).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
