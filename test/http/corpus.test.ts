/**
 * Every file of the corpus through both endpoints of a running server: the
 * valid ones give 200 (protect's output is what it says), the broken ones a
 * 422 whose message names the defect, never a 5xx, each well within 3 s;
 * and usage counts exactly the 200s.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AMBIGUOUS_XMP, CORPUS, INTENTIONALLY_CORRUPT } from '../support/corpus.js';
import { startTestServer, type TestServer } from '../support/server.js';

const PER_FILE_MS = 3000;

/**
 * What the message of each broken PngSuite file must name: its defect, as
 * PngSuite's naming documents it (xc: colour type, xs/xcr/xlf: signature
 * damaged by a text-mode transfer, xcs/xhd: a chunk's checksum, xd: bit
 * depth, xdt: no image data).
 */
const DEFECTS: ReadonlyArray<readonly [RegExp, RegExp]> = [
  [/^pngsuite\/xc\d/, /^Corrupt PNG: invalid colour type \d+$/],
  [/^pngsuite\/x(s\d|cr|lf)/, /^Corrupt PNG: damaged PNG signature/],
  [/^pngsuite\/xcs/, /^Corrupt PNG: CRC error in chunk IDAT/],
  [/^pngsuite\/xhd/, /^Corrupt PNG: CRC error in chunk IHDR/],
  [/^pngsuite\/xd\d/, /^Corrupt PNG: invalid bit depth \d+ for colour type \d+$/],
  [/^pngsuite\/xdt/, /^Corrupt PNG: no IDAT chunk/],
];

function expectDefectNamed(name: string, status: number, json: Record<string, unknown>): void {
  const defect = DEFECTS.find(([file]) => file.test(name));
  expect(defect, `no expected defect listed for ${name}`).toBeDefined();
  expect(status).toBe(422);
  expect(json.code).toBe('corrupt_image');
  expect(json.error).toMatch(defect![1]);
}

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
    if (broken) {
      expectDefectNamed(name, status, json);
    } else if (ambiguous) {
      expect(status).toBe(422);
      expect(json.code).toBe('ambiguous_xmp');
      expect(json.error).toMatch(/carries \d+ XMP packets where there must be one/);
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
      expectDefectNamed(name, status, json);
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
