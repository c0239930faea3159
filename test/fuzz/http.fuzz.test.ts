/**
 * Mutated images through a real server on both endpoints: every answer is
 * a 2xx or a client error with a JSON body naming its code (never a 5xx),
 * verify's code is the library's, the server stays healthy, and usage
 * counts exactly the 200s. The upload limit is lowered so that the larger
 * mutated files meet it too (413).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { OptmarkError, verify } from '../../src/index.js';
import { startTestServer, postImage, type TestServer } from '../support/server.js';
import type { Format } from './containers.js';
import { fuzzCase } from './mutators.js';
import { loadSeeds } from './seeds.js';

const SEED = 0x0b7a2d;
const CASES_PER_FORMAT = 60;
const MAX_UPLOAD_BYTES = 96 * 1024;
const CONCURRENCY = 4;
const CLIENT_STATUSES = new Set([200, 400, 413, 415, 422]);

let t: TestServer;
let key: string;

beforeAll(async () => {
  t = await startTestServer({ env: { OPTMARK_MAX_UPLOAD_BYTES: String(MAX_UPLOAD_BYTES) } });
  key = await t.key('pro');
});
afterAll(async () => t?.close());

function libraryVerifyCode(bytes: Uint8Array): string {
  try {
    verify(bytes);
    return 'ok';
  } catch (error) {
    if (error instanceof OptmarkError) return error.code;
    throw error;
  }
}

it(`${3 * CASES_PER_FORMAT} mutated files on protect and verify: client statuses only, JSON errors, usage counts the 200s`, async () => {
  const seeds = await loadSeeds();
  const cases = (['jpeg', 'png', 'webp'] as Format[]).flatMap((format) =>
    fc.sample(fuzzCase(seeds, format, { maxXmpBytes: 96 * 1024 }), { seed: SEED, numRuns: CASES_PER_FORMAT }),
  );
  const counted = { protect: 0, verify: 0 };
  const statuses = new Map<number, number>();

  async function check(bytes: Buffer, operation: 'protect' | 'verify', what: string): Promise<void> {
    const response = await postImage(t.url, key, bytes, { path: `/api/v1/${operation}` });
    const body = (await response.json()) as Record<string, unknown>;
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    expect(CLIENT_STATUSES.has(response.status), `${operation} ${what}: ${response.status} ${JSON.stringify(body)}`).toBe(true);
    if (response.status === 200) {
      counted[operation]++;
      return;
    }
    expect(typeof body.error, what).toBe('string');
    expect(typeof body.code, what).toBe('string');
    if (response.status === 413) expect(bytes.length).toBeGreaterThan(MAX_UPLOAD_BYTES - 1024);
    else if (operation === 'verify') expect(body.code, what).toBe(libraryVerifyCode(bytes));
  }

  const queue = [...cases];
  const worker = async () => {
    for (let c = queue.shift(); c; c = queue.shift()) {
      const what = String(fc.stringify(c));
      await check(c.bytes, 'protect', what);
      await check(c.bytes, 'verify', what);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));

  expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
  const usage = (await (await fetch(`${t.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } })).json()) as Record<string, { used: number }>;
  expect({ protect: usage.protect!.used, verify: usage.verify!.used }).toEqual(counted);
  // The sample must reach success and each family of refusal, or it proves little.
  console.info(`http fuzz statuses: ${JSON.stringify(Object.fromEntries(statuses))}`);
  for (const status of [200, 400, 413, 415, 422]) expect(statuses.get(status) ?? 0, `status ${status}`).toBeGreaterThan(0);
});
