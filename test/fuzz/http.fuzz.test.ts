/**
 * Mutated images through a real server on both endpoints: every answer is
 * a 2xx or a client error with a JSON body naming its code (never a 5xx),
 * each code the library's own for the same bytes, the server stays healthy,
 * and usage counts exactly the 200s. The server runs with its production
 * upload cap (25 MB), far above any mutated input (the seeds are at most
 * 128 KB, the XMP a mutation writes at most 96 KiB), so every input reaches
 * the parsers and none is refused for size. Verify runs the pixel decoder
 * (src/adapters/pixels.ts) for the fingerprint on every input whose
 * container is sound and whose sides are 64 pixels or more: this is where
 * the npm test fuzzes our sharp decode path (protect does not decode), so
 * half of each format's inputs are mutations of the seeds that size (most of
 * the corpus, PngSuite's 32 x 32 images above all, is smaller).
 */
import { generateKeyPairSync } from 'node:crypto';
import { Agent, request } from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MIN_DETECT_SIDE } from '../../src/core/fingerprint/index.js';
import { declaredDimensions } from '../../src/core/formats/dimensions.js';
import { createProvenance, OptmarkError, protect, verify } from '../../src/index.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { serialise, type Format } from './containers.js';
import { fuzzCase, type FuzzCase, type Seed } from './mutators.js';
import { loadSeeds } from './seeds.js';

const SEED = 0x0b7a2d;
/**
 * Inputs per format, each sent to protect and to verify: 900 calls. Chosen
 * for time, like the library runs (fuzz-format.ts): a call costs this
 * process (client, server and the server's threads) 5 to 10 ms of processor
 * time, the idle machine to a busy one, several times an input through the
 * library alone (HTTP, multipart, the usage count; on verify, the decode and
 * the detection of the fingerprint check, 45 ms for an image of 300 x 200).
 * With the server's start this file then takes about as long as the library
 * runs beside it.
 */
const CASES_PER_FORMAT = 150;
/** Calls in flight: enough to keep the server's two decode slots and the event loop busy at once. */
const CONCURRENCY = 4;
/** The statuses a bad image may get: 400 empty, 415 not an image we take, 422 broken; nothing else, 413 included. */
const CLIENT_STATUSES = new Set([200, 400, 415, 422]);

let t: TestServer;
let key: string;
let serverStartMs = 0;
/** Connections kept open between calls, as fetch keeps them. */
const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
/** A signer of our own for the library's protect: the server's protect always signs, and so writes a tag too. */
const signer = (() => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return createProvenance({ keys: { active: { kid: 'fuzz', privateKey }, publicKey: () => publicKey }, issuer: () => 'http://127.0.0.1', clock: { now: () => new Date() } }).signer;
})();

beforeAll(async () => {
  const started = performance.now();
  // No OPTMARK_MAX_UPLOAD_BYTES: the default cap, as deployed.
  t = await startTestServer();
  key = await t.key('pro');
  serverStartMs = performance.now() - started;
});
afterAll(async () => {
  agent.destroy();
  await t?.close();
});

const BOUNDARY = 'optmark-fuzz-boundary-7d1f0c';
const PART_HEAD = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="upload.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
const PART_TAIL = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);

/**
 * One multipart upload of `bytes`, as test/support/server.ts postImage sends
 * it, over node:http rather than fetch: fetch (undici, its web streams, Blob
 * and FormData) cost this test process about 1.7 ms of processor time a call,
 * as much as the server's own handling of a refused file; the server sees the
 * same request either way.
 */
function postImage(url: string, key: string, path: string, bytes: Uint8Array): Promise<{ status: number; body: Record<string, unknown> }> {
  const body = Buffer.concat([PART_HEAD, bytes, PART_TAIL]);
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      {
        method: 'POST',
        agent,
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': `multipart/form-data; boundary=${BOUNDARY}`, 'Content-Length': body.length },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> });
          } catch (error) {
            reject(new Error(`${path}: answer ${res.statusCode} is not JSON`, { cause: error }));
          }
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function libraryCode(call: () => unknown): string {
  try {
    call();
    return 'ok';
  } catch (error) {
    if (error instanceof OptmarkError) return error.code;
    throw error;
  }
}

it(`${3 * CASES_PER_FORMAT} mutated files on protect and verify: client statuses only, the library's codes, JSON errors, usage counts the 200s`, { timeout: 120_000 }, async () => {
  const seeds = await loadSeeds();
  const decoderSized = seeds.filter((s: Seed) => {
    const size = declaredDimensions(serialise(s.parts, { fixCrc: false }), s.parts.format);
    return size !== undefined && Math.min(size.width, size.height) >= MIN_DETECT_SIDE;
  });
  const sample = (from: Seed[], format: Format, n: number) => fc.sample(fuzzCase(from, format, { maxXmpBytes: 96 * 1024 }), { seed: SEED, numRuns: n });
  const cases = (['jpeg', 'png', 'webp'] as Format[]).flatMap((format) => [
    ...sample(seeds, format, CASES_PER_FORMAT / 2),
    ...sample(decoderSized, format, CASES_PER_FORMAT / 2),
  ]);
  const counted = { protect: 0, verify: 0 };
  const statuses = { protect: new Map<number, number>(), verify: new Map<number, number>() };
  let largest = 0;
  let slowestMs = 0;
  /** Verify answers whose fingerprint check examined blocks: the input went through the pixel decoder and the detector. */
  let examined = 0;

  async function check(c: FuzzCase, operation: 'protect' | 'verify'): Promise<void> {
    const what = String(fc.stringify(c));
    const started = performance.now();
    const response = await postImage(t.url, key, `/api/v1/${operation}`, c.bytes);
    const body = response.body;
    slowestMs = Math.max(slowestMs, performance.now() - started);
    statuses[operation].set(response.status, (statuses[operation].get(response.status) ?? 0) + 1);
    expect(CLIENT_STATUSES.has(response.status), `${operation} ${what}: ${response.status} ${JSON.stringify(body)}`).toBe(true);
    // The server answers what the library answers for the same bytes.
    const expected = operation === 'verify' ? libraryCode(() => verify(c.bytes)) : libraryCode(() => protect(c.bytes, { signer }));
    if (response.status === 200) {
      expect('ok', `${operation} ${what}`).toBe(expected);
      counted[operation]++;
      if (operation === 'verify' && ((body.fingerprint as { blocks?: number } | undefined)?.blocks ?? 0) > 0) examined++;
      return;
    }
    expect(typeof body.error, what).toBe('string');
    expect(body.code, `${operation} ${what}`).toBe(expected);
  }

  const started = performance.now();
  // The server runs in this process: its threads (the database's, the decoder's, the fingerprint workers) count here too.
  const cpuBefore = process.cpuUsage();
  const queue = [...cases];
  const worker = async () => {
    for (let c = queue.shift(); c; c = queue.shift()) {
      largest = Math.max(largest, c.bytes.length);
      await check(c, 'protect');
      await check(c, 'verify');
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;

  expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
  const usage = (await (await fetch(`${t.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } })).json()) as Record<string, { used: number }>;
  expect({ protect: usage.protect!.used, verify: usage.verify!.used }).toEqual(counted);
  const show = (m: Map<number, number>) => JSON.stringify(Object.fromEntries([...m].sort((a, b) => a[0] - b[0])));
  console.info(
    `http fuzz: ${cases.length} inputs (seed ${SEED}, ${CASES_PER_FORMAT} per format, largest ${(largest / 1024).toFixed(0)} KB), ${2 * cases.length} calls in ${seconds.toFixed(1)} s ` +
      `(${((2 * cases.length) / seconds).toFixed(0)}/s, processor ${cpuSeconds.toFixed(1)} s = ${((cpuSeconds * 1000) / (2 * cases.length)).toFixed(1)} ms a call, slowest ${slowestMs.toFixed(0)} ms); protect ${show(statuses.protect)}, verify ${show(statuses.verify)} (${examined} of the 200s decoded and examined for the fingerprint); ` +
      `usage = the 200s (${counted.protect} + ${counted.verify}); ` +
      `the server took ${(serverStartMs / 1000).toFixed(1)} s to start, this test process has run ${(performance.now() / 1000).toFixed(1)} s`,
  );
  // The sample must reach success and each family of refusal on both endpoints, and the decoder, or it proves little.
  for (const operation of ['protect', 'verify'] as const) {
    for (const status of CLIENT_STATUSES) expect(statuses[operation].get(status) ?? 0, `${operation} status ${status}`).toBeGreaterThan(0);
  }
  expect(examined).toBeGreaterThan(CASES_PER_FORMAT / 10);
});
