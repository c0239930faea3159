/**
 * optmark/client against a real server: typed results, typed errors, the
 * retry rule (only server_busy, service_unavailable, too_many_requests and
 * network errors, Retry-After at most 60 s, at most 5 tries), idempotency
 * (a file sent again counts once), cancellation and timeouts, and saving
 * under the answer's name. The failing answers of the moment come from a
 * small HTTP server in front of the real one.
 */
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, idempotencyKey, OptmarkError, resultFile } from '../../src/client/index.js';
import { saveResult } from '../../src/client/node.js';
import { verify } from '../../src/index.js';
import { SAMPLE_JPEG } from '../process/support.js';
import { frontServer } from '../support/front-server.js';
import { generatedImages } from '../support/generated.js';
import { signInToDashboard } from '../support/dashboard.js';
import { startTestServer, type TestServer } from '../support/server.js';

const busy = (retryAfter: string, code = 'server_busy', status = 503) => ({
  status,
  headers: { 'retry-after': retryAfter, 'request-id': `front-${code}` },
  body: JSON.stringify({ error: 'The server is at capacity (calls); try again in a moment', code, requestId: `front-${code}` }),
});

describe('optmark/client', () => {
  let t: TestServer;
  let key: string;
  let dir: string;

  beforeAll(async () => {
    t = await startTestServer();
    key = await t.key('pro');
    dir = mkdtempSync(join(tmpdir(), 'optmark-client-'));
  });
  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('protects, verifies and reports usage, typed; a file sent again is answered again and counts once', async () => {
    const client = createClient({ baseUrl: t.url, apiKey: key });
    const file = new File([SAMPLE_JPEG], 'holiday photo.png');
    const marked = await client.protect(file);
    expect(marked.filename).toBe('holiday-photo-optout.jpg');
    expect(marked.mimeType).toBe('image/jpeg');
    expect(marked.signals).toEqual(['iptc.dataMining']);
    expect(marked.optOut).toEqual({ action: 'written', value: 'DMI-PROHIBITED-AIMLTRAINING' });
    expect(marked.replayed).toBe(false);
    expect(marked.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(marked.allowance).toMatchObject({ operation: 'protect', remaining: 9999 });
    expect(verify(marked.bytes).optedOut).toBe(true);

    const again = await client.protect(file);
    expect(again.replayed).toBe(true);
    expect(again.sha256).toBe(marked.sha256);
    const report = await client.verify(marked.bytes, { detail: true });
    expect(report.optedOut).toBe(true);
    expect(report.details?.dataMining[0]?.code).toBe('DMI-PROHIBITED-AIMLTRAINING');
    const usage = await client.usage();
    expect(usage.protect.used).toBe(1);
    expect(usage.verify.used).toBe(1);
    expect((await client.jwks()).keys[0]).toMatchObject({ kty: 'OKP', crv: 'Ed25519' });
  });

  it('looks up the account’s dated service records, made by the dashboard’s marking; none is record_not_found', async () => {
    const session = await signInToDashboard(t, 'client-records');
    const batch = await session.browser.app('/app/batches');
    const form = new FormData();
    form.append('image', new Blob([SAMPLE_JPEG]), 'photo.jpg');
    const marked = await session.browser.app('/app/mark', { body: form, headers: { 'X-Batch-Id': String(batch.json.id), 'Idempotency-Key': 'client-record' } });
    expect(marked.status).toBe(200);
    const apiKey = (await t.server.admin.issueKey('client-records', { user: (await t.server.people.listUsers('client-records'))[0]!.email, scopes: ['verify'] })).key;
    const client = createClient({ baseUrl: t.url, apiKey });
    const found = await client.records(String(marked.json.sha256));
    expect(found.records.map((r) => r.recordId)).toEqual([marked.json.recordId]);
    expect(found.records[0]!.fileName).toBe('photo.jpg');
    expect(found.requestId).toMatch(/^[0-9a-f-]{36}$/);
    // protect through the API makes no record. (Another image: the same one, protected within the same second,
    // would carry the same tag and so the same marked bytes, whose record the dashboard's marking made.)
    const other = (await generatedImages()).find((g) => g.name === 'baseline.jpg')!.bytes;
    const protectedHere = await createClient({ baseUrl: t.url, apiKey: key }).protect(new File([other], 'other.jpg'));
    await expect(client.records(protectedHere.sha256)).rejects.toMatchObject({ status: 404, code: 'record_not_found' });
  });

  it('derives the Idempotency-Key from the file and the options', async () => {
    const a = await idempotencyKey('protect', SAMPLE_JPEG);
    expect(a).toMatch(/^optmark-v1-protect-[0-9a-f]{64}$/);
    expect(await idempotencyKey('protect', new Uint8Array(SAMPLE_JPEG))).toBe(a);
    expect(await idempotencyKey('verify', SAMPLE_JPEG, { detail: true })).not.toBe(await idempotencyKey('verify', SAMPLE_JPEG));
  });

  it('saves under the answer\'s name, never the input\'s extension, and does not replace a file', async () => {
    const client = createClient({ baseUrl: t.url, apiKey: key });
    const marked = await client.protect(new Uint8Array(SAMPLE_JPEG), { filename: 'scan.webp' });
    const path = await saveResult(marked, dir);
    expect(path).toBe(join(dir, 'scan-optout.jpg'));
    expect(verify(readFileSync(path)).optedOut).toBe(true);
    await expect(saveResult(marked, dir)).rejects.toMatchObject({ code: 'EEXIST' });
    expect(resultFile({ ...marked, filename: '../../etc/passwd' }).name).toBe('passwd');
    expect(resultFile(marked).type).toBe('image/jpeg');
  });

  it('surfaces input errors at once, typed, with the request id', async () => {
    const front = await frontServer(t.url, () => undefined);
    try {
      const client = createClient({ baseUrl: front.url, apiKey: key });
      const error = (await client.protect(Buffer.from('GIF89a not an image')).catch((e: unknown) => e)) as OptmarkError;
      expect(error).toBeInstanceOf(OptmarkError);
      expect(error).toMatchObject({ status: 415, code: 'unsupported_image_format', retryAfter: undefined });
      expect(error.requestId).toMatch(/^[0-9a-f-]{36}$/);
      expect(front.requests).toBe(1);
      const unauthorised = (await createClient({ baseUrl: front.url, apiKey: 'omk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA0xqHyc' }).usage().catch((e: unknown) => e)) as OptmarkError;
      expect(unauthorised).toMatchObject({ status: 401, code: 'invalid_api_key' });
      expect(front.requests).toBe(2);
    } finally {
      await front.close();
    }
  });

  it('does not retry the monthly limit, and says when it ends', async () => {
    const name = 'client-quota';
    const broke = await t.key('pro', name);
    await t.server.admin.setLimits(name, { protectPerMonth: 0 });
    const front = await frontServer(t.url, () => undefined);
    try {
      const error = (await createClient({ baseUrl: front.url, apiKey: broke }).protect(SAMPLE_JPEG).catch((e: unknown) => e)) as OptmarkError;
      expect(error).toMatchObject({ status: 429, code: 'quota_exceeded' });
      expect(error.retryAfter).toBeGreaterThan(0);
      expect(error.resetsAt!.getUTCDate()).toBe(1);
      expect(error.message).toMatch(/resets at \d{4}-\d\d-01T00:00:00/);
      expect(front.requests).toBe(1);
    } finally {
      await front.close();
    }
  });

  it('retries a busy server after Retry-After with backoff and jitter, then succeeds', async () => {
    const front = await frontServer(t.url, (request, n) => (request.url?.startsWith('/api/v1/protect') && n <= 2 ? busy('1', n === 1 ? 'too_many_requests' : 'server_busy', n === 1 ? 429 : 503) : undefined));
    const retries: number[] = [];
    try {
      const client = createClient({ baseUrl: front.url, apiKey: key, onRetry: ({ delayMs }) => retries.push(delayMs), random: () => 0.5 });
      const started = performance.now();
      const marked = await client.protect(SAMPLE_JPEG, { filename: 'busy.jpg' });
      expect(marked.filename).toBe('busy-optout.jpg');
      expect(front.requests).toBe(3);
      // Retry-After (1 s) plus half of 500 ms, then of 1000 ms.
      expect(retries).toEqual([1250, 1500]);
      expect(performance.now() - started).toBeGreaterThanOrEqual(2700);
    } finally {
      await front.close();
    }
  });

  it('tries at most 5 times; a Retry-After over 60 s surfaces at once', async () => {
    const always = await frontServer(t.url, () => busy('0', 'service_unavailable'));
    try {
      const client = createClient({ baseUrl: always.url, apiKey: key, backoffMs: { base: 10, max: 20 } });
      await expect(client.verify(SAMPLE_JPEG)).rejects.toMatchObject({ status: 503, code: 'service_unavailable', retryAfter: 0 });
      expect(always.requests).toBe(5);
    } finally {
      await always.close();
    }
    const long = await frontServer(t.url, () => busy('120', 'service_unavailable'));
    try {
      await expect(createClient({ baseUrl: long.url, apiKey: key }).verify(SAMPLE_JPEG)).rejects.toMatchObject({ code: 'service_unavailable', retryAfter: 120 });
      expect(long.requests).toBe(1);
    } finally {
      await long.close();
    }
  });

  it('retries network errors, then says so; cancels by AbortSignal and times out a try', async () => {
    const closed = await frontServer(t.url, () => undefined);
    await closed.close();
    const tries: number[] = [];
    const client = createClient({ baseUrl: closed.url, apiKey: key, backoffMs: { base: 10, max: 20 }, onRetry: ({ attempt }) => tries.push(attempt) });
    await expect(client.usage()).rejects.toMatchObject({ status: 0, code: 'network_error' });
    expect(tries).toEqual([1, 2, 3, 4]);

    const slow = await frontServer(t.url, () => busy('30', 'server_busy'));
    try {
      const controller = new AbortController();
      const started = performance.now();
      const call = createClient({ baseUrl: slow.url, apiKey: key }).protect(SAMPLE_JPEG, { signal: controller.signal });
      setTimeout(() => controller.abort(), 300);
      await expect(call).rejects.toMatchObject({ name: 'AbortError' });
      expect(performance.now() - started).toBeLessThan(10_000);
    } finally {
      await slow.close();
    }

    // A server that sends the head of its answer and then stalls its body: cancelled, or timed out, it is
    // that (not an answer that "is not JSON", nor a network error to try again).
    const stalling = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      response.write('{"protect"');
    });
    await new Promise<void>((resolve) => stalling.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(stalling.address() as AddressInfo).port}`;
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 300);
      await expect(createClient({ baseUrl: url, apiKey: key }).usage({ signal: controller.signal })).rejects.toMatchObject({ name: 'AbortError' });
      const tries: number[] = [];
      await expect(createClient({ baseUrl: url, apiKey: key, timeoutMs: 300, onRetry: ({ attempt }) => tries.push(attempt) }).usage()).rejects.toMatchObject({ status: 0, code: 'timeout' });
      expect(tries).toEqual([]);
    } finally {
      stalling.closeAllConnections();
      stalling.close();
    }

    // A server that takes the request and never answers.
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
      await expect(createClient({ baseUrl: url, apiKey: key, timeoutMs: 300 }).usage()).rejects.toMatchObject({ status: 0, code: 'timeout' });
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });

  it('keeps the saved file the server marked byte for byte', async () => {
    const source = join(dir, 'source.jpg');
    writeFileSync(source, SAMPLE_JPEG);
    const marked = await createClient({ baseUrl: t.url, apiKey: key }).protect(new File([readFileSync(source)], 'source.jpg'));
    const saved = await saveResult(marked, dir);
    expect(readFileSync(saved).equals(Buffer.from(marked.imageBase64, 'base64'))).toBe(true);
  });
});
