/**
 * Every file of the corpus through both endpoints of a running server: the
 * valid ones give 200 (protect's output is what it says), the broken ones a
 * 4xx whose message says what is wrong, never a 5xx, each well within 3 s;
 * and usage counts exactly the 200s.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AMBIGUOUS_XMP, CORPUS, INTENTIONALLY_CORRUPT } from '../support/corpus.js';
import { startTestServer, type TestServer } from '../support/server.js';

const PER_FILE_MS = 3000;

let t: TestServer;
let key: string;
const counted = { protect: 0, verify: 0 };
let slowestMs = 0;

beforeAll(async () => {
  t = await startTestServer();
  key = await t.key('pro');
});
afterAll(async () => t?.close());

async function post(bytes: Uint8Array, operation: 'protect' | 'verify', name: string) {
  const form = new FormData();
  form.append('image', new Blob([bytes]), name.split('/').pop());
  const started = performance.now();
  const response = await fetch(`${t.url}/api/v1/${operation}`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
  const json = (await response.json()) as Record<string, unknown>;
  const ms = performance.now() - started;
  slowestMs = Math.max(slowestMs, ms);
  if (response.status === 200) counted[operation]++;
  return { status: response.status, json, ms };
}

describe.each(CORPUS.map((file) => [file.name, file] as const))('%s', (name, file) => {
  const broken = INTENTIONALLY_CORRUPT.has(name);
  const ambiguous = AMBIGUOUS_XMP.has(name);

  it(broken ? 'protect: 4xx with a clear message' : ambiguous ? 'protect: 422 ambiguous_xmp' : 'protect: 200, and the image is what sha256 says', async () => {
    const { status, json, ms } = await post(file.bytes, 'protect', name);
    expect(ms).toBeLessThan(PER_FILE_MS);
    if (broken || ambiguous) {
      expect(status).toBeGreaterThanOrEqual(400);
      expect(status).toBeLessThan(500);
      expect(json.error).toMatch(/corrupt|invalid|not|XMP/i);
      if (ambiguous) expect(json.code).toBe('ambiguous_xmp');
    } else {
      expect(status, JSON.stringify(json)).toBe(200);
      const output = Buffer.from(json.imageBase64 as string, 'base64');
      expect(createHash('sha256').update(output).digest('hex')).toBe(json.sha256);
      expect(json.signals).toContain('iptc.dataMining');
    }
  });

  it(broken ? 'verify: 4xx with a clear message' : 'verify: 200', async () => {
    const { status, json, ms } = await post(file.bytes, 'verify', name);
    expect(ms).toBeLessThan(PER_FILE_MS);
    if (broken) {
      expect([415, 422]).toContain(status);
      expect((json.error as string).length).toBeGreaterThan(15);
    } else {
      expect(status, JSON.stringify(json)).toBe(200);
      expect(json.sha256).toBe(createHash('sha256').update(file.bytes).digest('hex'));
    }
  });
});

it('usage counts exactly the 200s, the slowest call is well within the bound, and the server is healthy', async () => {
  expect(slowestMs).toBeLessThan(PER_FILE_MS);
  const report = (await (await fetch(`${t.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } })).json()) as Record<string, { used: number }>;
  expect({ protect: report.protect!.used, verify: report.verify!.used }).toEqual(counted);
  expect(counted.protect).toBe(CORPUS.length - INTENTIONALLY_CORRUPT.size - AMBIGUOUS_XMP.size);
  expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
  // The figure docs/reliability.md quotes.
  console.info(`corpus over HTTP: ${CORPUS.length} files, ${counted.protect + counted.verify} answers of 200, slowest call ${slowestMs.toFixed(0)} ms`);
});
