/**
 * Admission: at most N calls in flight per API key (429 too_many_requests)
 * and M in all (503 server_busy), both with Retry-After, refused before the
 * body is read and without touching quota; a client that goes away mid-upload
 * gives its slot back at once. Past the pixel decoder's queue (verify's
 * fingerprint check), 503 server_busy too, and nothing counted.
 */
import { connect, type Socket } from 'node:net';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { corpusFile } from '../support/corpus.js';
import { multipartBody, parseResponse, type RawResponse } from '../support/raw-http.js';
import { startTestServer, type TestServer } from '../support/server.js';

const JPEG = corpusFile('exiftool/XMP.jpg').bytes;
const BODY = multipartBody([{ name: 'image', filename: 'a.jpg', data: JPEG }]);

/** An upload that sends its headers and the first bytes, then waits to be finished or aborted. */
class HeldUpload {
  private readonly socket: Socket;
  private text = '';
  readonly answered: Promise<RawResponse>;

  constructor(url: string, key: string, path = '/api/v1/protect') {
    const { port } = new URL(url);
    this.socket = connect(Number(port), '127.0.0.1');
    this.socket.setEncoding('latin1');
    this.socket.write(
      `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: multipart/form-data; boundary=optmark-boundary\r\nContent-Length: ${BODY.length}\r\nConnection: close\r\n\r\n`,
    );
    this.socket.write(BODY.subarray(0, 100));
    this.answered = new Promise((resolve, reject) => {
      this.socket.on('data', (chunk: string) => (this.text += chunk));
      this.socket.on('close', () => (this.text ? resolve(parseResponse(this.text)) : reject(new Error('closed without an answer'))));
      this.socket.on('error', () => {});
    });
    this.answered.catch(() => {});
  }

  finish(): Promise<RawResponse> {
    this.socket.write(BODY.subarray(100));
    return this.answered;
  }

  /** Send `more` bytes of the rest of the body, then drop the connection. */
  abort(more = 0): void {
    if (more > 0) this.socket.write(BODY.subarray(100, 100 + more));
    this.socket.destroy();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function post(url: string, key: string): Promise<Response> {
  const form = new FormData();
  form.append('image', new Blob([JPEG]), 'a.jpg');
  return fetch(`${url}/api/v1/protect`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
}

async function used(url: string, key: string): Promise<number> {
  const report = (await (await fetch(`${url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } })).json()) as { protect: { used: number } };
  return report.protect.used;
}

describe('per key', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ env: { OPTMARK_MAX_IN_FLIGHT_PER_KEY: '2', OPTMARK_MAX_IN_FLIGHT: '100' } });
  });
  afterAll(async () => t?.close());

  it('a third call with the same key while two are uploading: 429 too_many_requests with Retry-After, other keys unaffected', async () => {
    const [mine, other] = [await t.key(), await t.key()];
    const held = [new HeldUpload(t.url, mine), new HeldUpload(t.url, mine)];
    await sleep(200);
    const started = performance.now();
    const refused = await post(t.url, mine);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({ code: 'too_many_requests', error: expect.stringMatching(/2 calls in progress/) });
    expect(performance.now() - started).toBeLessThan(1000);
    expect((await post(t.url, other)).status).toBe(200);
    for (const upload of held) expect((await upload.finish()).status).toBe(200);
    expect((await post(t.url, mine)).status).toBe(200);
    expect(await used(t.url, mine)).toBe(3);
  });

  it('uploads aborted at any point give their slots back at once, and nothing is counted', async () => {
    const key = await t.key();
    for (let round = 0; round < 25; round++) {
      const uploads = [new HeldUpload(t.url, key), new HeldUpload(t.url, key)];
      await sleep(20);
      for (const upload of uploads) upload.abort((round * 997) % (BODY.length - 200));
    }
    // The server learns of each abort when the connection closes; on a loaded
    // machine that can take a moment, so wait (bounded) for the key's slots.
    for (let waited = 0; waited < 1000; waited += 100) {
      const probe = await post(t.url, key);
      if (probe.status === 200) break;
      expect(probe.status).toBe(429);
      await sleep(100);
    }
    // Both slots are free again: two held uploads are admitted and finish.
    const held = [new HeldUpload(t.url, key), new HeldUpload(t.url, key)];
    await sleep(100);
    for (const upload of held) expect((await upload.finish()).status).toBe(200);
    expect(await used(t.url, key)).toBe(3);
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
  });
});

describe('in all', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ env: { OPTMARK_MAX_IN_FLIGHT: '2' } });
  });
  afterAll(async () => t?.close());

  it('over capacity: 503 server_busy with Retry-After for any key, nothing counted, and served again once a slot frees', async () => {
    const [a, b, c] = [await t.key(), await t.key(), await t.key()];
    const held = [new HeldUpload(t.url, a), new HeldUpload(t.url, b)];
    await sleep(200);
    const refused = await post(t.url, c);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({ code: 'server_busy' });
    expect(await used(t.url, c)).toBe(0);
    expect((await held[0]!.finish()).status).toBe(200);
    expect((await post(t.url, c)).status).toBe(200);
    expect((await held[1]!.finish()).status).toBe(200);
    expect([await used(t.url, a), await used(t.url, b), await used(t.url, c)]).toEqual([1, 1, 1]);
  });
});

describe("the pixel decoder's queue (hardening table, row 33)", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ env: { OPTMARK_DECODE_CONCURRENCY: '1', OPTMARK_DECODE_QUEUE: '0', OPTMARK_MAX_IN_FLIGHT_PER_KEY: '32' } });
  });
  afterAll(async () => t?.close());

  it('verify past it: 503 server_busy with Retry-After, only the 200s counted, the server healthy', async () => {
    const key = await t.key();
    // A PNG cannot shrink while decoding: 12 megapixels keep the one decoder busy for a while.
    const png = await sharp({ create: { width: 4000, height: 3000, channels: 3, background: '#6a8' } }).png().toBuffer();
    const verify = async () => {
      const form = new FormData();
      form.append('image', new Blob([png]), 'big.png');
      const response = await fetch(`${t.url}/api/v1/verify`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
      return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as { code?: string } };
    };
    const answers: Array<Awaited<ReturnType<typeof verify>>> = [];
    // Concurrent calls overlap in the decoder almost always; a few rounds make it certain.
    for (let round = 0; round < 5 && !answers.some((a) => a.status === 503); round++) {
      answers.push(...(await Promise.all(Array.from({ length: 12 }, verify))));
    }
    const busy = answers.filter((a) => a.status === 503);
    expect(busy.length).toBeGreaterThan(0);
    for (const a of answers) expect(a.status === 200 || (a.status === 503 && a.body.code === 'server_busy' && Number(a.retryAfter) >= 1), JSON.stringify(a)).toBe(true);
    const report = (await (await fetch(`${t.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } })).json()) as { verify: { used: number } };
    expect(report.verify.used).toBe(answers.filter((a) => a.status === 200).length);
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
  });
});
