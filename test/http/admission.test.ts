/**
 * Admission: at most N calls in flight per API key (429 too_many_requests)
 * and M in all (503 server_busy), both with Retry-After, refused before the
 * body is read and without touching quota; a client that goes away mid-upload
 * gives its slot back at once, and logs nothing at error level. Past the
 * pixel decoder's queue (verify's fingerprint check), 503 server_busy too,
 * and nothing counted.
 */
import { connect, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { corpusFile } from '../support/corpus.js';
import { collector } from '../support/gc.js';
import { random } from '../support/random.js';
import { HeldUpload, multipartBody } from '../support/raw-http.js';
import { startTestServer, type TestServer } from '../support/server.js';

const JPEG = corpusFile('exiftool/XMP.jpg').bytes;
const BODY = multipartBody([{ name: 'image', filename: 'a.jpg', data: JPEG }]);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What a server logged: lines per pino level (30 info, 40 warn, 50 error, 60 fatal), and the lines at error and above. */
interface CapturedLog {
  readonly byLevel: Map<number, number>;
  readonly errors: string[];
  /** fastify's "incoming request" lines for protect: one per request it received. */
  protectRequests: number;
}

/** A test server whose log (pino: one JSON object a line, at info level) is counted into `log`. */
async function startLoggingServer(env: Record<string, string>, log: CapturedLog): Promise<TestServer> {
  let pending = '';
  const take = (line: string) => {
    if (!line) return;
    const { level, msg, req } = JSON.parse(line) as { level: number; msg?: string; req?: { url?: string } };
    log.byLevel.set(level, (log.byLevel.get(level) ?? 0) + 1);
    if (level >= 50) log.errors.push(line);
    if (msg === 'incoming request' && req?.url === '/api/v1/protect') log.protectRequests++;
  };
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const lines = (pending + chunk.toString('utf8')).split('\n');
      pending = lines.pop()!;
      lines.forEach(take);
      done();
    },
  });
  const server = await startTestServer({ env, logTo: stream });
  return {
    ...server,
    async close() {
      await server.close();
      take(pending);
    },
  };
}

/**
 * process.memoryUsage() after a full collection. V8 releases the memory of
 * dead ArrayBuffers (Buffers) after the collection that finds them, on
 * another thread; a second collection finishes that, so the figures count
 * only what is still referenced.
 */
async function collected(gc: () => void): Promise<NodeJS.MemoryUsage> {
  gc();
  await new Promise((r) => setImmediate(r));
  gc();
  return process.memoryUsage();
}

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
    const held = [new HeldUpload(t.url, mine, BODY), new HeldUpload(t.url, mine, BODY)];
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
      const uploads = [new HeldUpload(t.url, key, BODY), new HeldUpload(t.url, key, BODY)];
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
    const held = [new HeldUpload(t.url, key, BODY), new HeldUpload(t.url, key, BODY)];
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
    const held = [new HeldUpload(t.url, a, BODY), new HeldUpload(t.url, b, BODY)];
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

describe('aborted uploads at scale (hardening plan, MP-2)', () => {
  /** Slots in all and per key: twice the clients, so a new upload is not refused while the server has yet to see the end of the one before it. */
  const SLOTS = 32;
  const UPLOADS = 1000;
  const CONCURRENCY = 16;
  /** The declared image: the 25 MiB limit itself, so Content-Length alone does not refuse it (413). */
  const DECLARED = 25 * 1024 * 1024;
  /** Uploads stop somewhere in their first 2 MiB: enough to cross many socket reads and multipart chunks, cheap enough for 1,000. */
  const MAX_SENT = 2 * 1024 * 1024;
  const MAX_HEAP_GROWTH = 50 * 1024 * 1024;
  /**
   * Buffer memory (arrayBuffers; external counts it too) and RSS once the uploads are cut. The run sends
   * the server about 1 GiB, each upload's chunks in Buffers (which heapUsed does not count): kept, they
   * would grow all three by about that. Freed, next to no Buffer memory is left after a collection, and
   * RSS keeps only what the allocator holds on to (some tens of MB).
   */
  const MAX_BUFFER_GROWTH = 64 * 1024 * 1024;
  const MAX_RSS_GROWTH = 256 * 1024 * 1024;
  const MAX_RECOVERY_MS = 1000;

  let t: TestServer;
  /** The server's own log (MP-2: a client going away is not a server error). */
  const log: CapturedLog = { byLevel: new Map(), errors: [], protectRequests: 0 };
  beforeAll(async () => {
    t = await startLoggingServer({ OPTMARK_MAX_IN_FLIGHT: String(SLOTS), OPTMARK_MAX_IN_FLIGHT_PER_KEY: String(SLOTS) }, log);
  });
  afterAll(async () => t?.close());

  it('1,000 uploads declaring 25 MiB, cut at random offsets 16 at a time: every slot back within 1 s, nothing counted, heap and Buffer memory bounded, no error logged', async () => {
    const key = await t.key();
    const next = random(0x4d5032);
    const partHead = Buffer.from('--optmark-boundary\r\nContent-Disposition: form-data; name="image"; filename="big.jpg"\r\nContent-Type: image/jpeg\r\n\r\n', 'latin1');
    const length = partHead.length + DECLARED + '\r\n--optmark-boundary--\r\n'.length;
    const requestHead = Buffer.from(
      `POST /api/v1/protect HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: multipart/form-data; boundary=optmark-boundary\r\nContent-Length: ${length}\r\n\r\n`,
      'latin1',
    );
    // A JPEG's start, then noise: what the first megabytes of a large photo look like to the parser.
    const body = Buffer.alloc(MAX_SENT);
    partHead.copy(body);
    JPEG.copy(body, partHead.length, 0, 2048);
    for (let i = partHead.length + 2048; i < MAX_SENT; i++) body[i] = (next() * 256) | 0;

    // The server's end of each connection, by the client's port: its bytesRead says what the server has
    // taken in. A client's writes complete when the kernel has them, well before the server has read them;
    // without waiting for that, the clients run ahead and the server is left digesting hundreds of MiB of
    // closed connections after the "last abort" (first try: 3.3 s of backlog), which measures our pacing,
    // not how fast the server gives a slot back once it learns the client is gone.
    const serverEnds = new Map<number, Socket>();
    const onConnection = (socket: Socket) => {
      const port = socket.remotePort!;
      serverEnds.set(port, socket);
      socket.once('close', () => serverEnds.get(port) === socket && serverEnds.delete(port));
    };
    t.server.app.server.on('connection', onConnection);

    /** Headers and the first `offset` bytes of the body, received by the server, then the connection destroyed. */
    const early: string[] = [];
    const abortedUpload = (offset: number) =>
      new Promise<void>((resolve) => {
        const { port } = new URL(t.url);
        const socket = connect(Number(port), '127.0.0.1');
        let text = '';
        socket.setEncoding('latin1');
        socket.on('data', (chunk: string) => (text += chunk));
        // The server may answer and close first (a refusal); writing then fails, which is not the test's concern.
        socket.on('error', () => {});
        socket.on('close', () => {
          if (text) early.push(text.slice(0, text.indexOf('\r\n')));
          resolve();
        });
        socket.write(requestHead);
        socket.write(body.subarray(0, offset), async () => {
          // No event tells when the server has read its bytes: look every few milliseconds.
          const total = requestHead.length + offset;
          for (;;) {
            const end = serverEnds.get(socket.localPort!);
            if (socket.destroyed || text || (end && (end.bytesRead >= total || end.destroyed))) break;
            await sleep(2);
          }
          socket.destroy();
        });
      });

    // Warm the server up (first protect, first usage read) before the memory baseline.
    expect((await post(t.url, key)).status).toBe(200);
    const before = await used(t.url, key);
    const gc = collector();
    const memoryBefore = await collected(gc);

    // While the run goes on, watch the reserved units: they show the uploads really were admitted and held a slot.
    let running = true;
    let peakReserved = 0;
    const watching = (async () => {
      while (running) {
        peakReserved = Math.max(peakReserved, (await used(t.url, key)) - before);
        await sleep(100);
      }
    })();

    const started = performance.now();
    let sent = 0;
    let launched = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (launched < UPLOADS) {
          launched++;
          const offset = Math.floor(next() * MAX_SENT);
          sent += offset;
          await abortedUpload(offset);
        }
      }),
    );
    const lastAbort = performance.now();
    t.server.app.server.off('connection', onConnection);
    running = false;
    await watching;

    // Every reservation is given back with its slot (settle leaves admission, then refunds): the usage this
    // account shows (used + reserved) comes back to exactly where it was, and soon.
    let now = await used(t.url, key);
    while (now !== before && performance.now() - lastAbort < MAX_RECOVERY_MS) {
      await sleep(10);
      now = await used(t.url, key);
    }
    const recoveryMs = performance.now() - lastAbort;
    // What the cut uploads still hold once the server has seen them go, before anything else runs.
    const memoryAfterCuts = await collected(gc);
    expect(now).toBe(before);
    expect(recoveryMs).toBeLessThan(MAX_RECOVERY_MS);
    // The admission count itself is 0: SLOTS held uploads all get a slot at the same time (with one slot
    // still taken, one of them would get 429). Each reserves a unit when admitted, so usage says when all are in.
    const probes = Array.from({ length: SLOTS }, () => new HeldUpload(t.url, key, BODY));
    for (const deadline = performance.now() + 5000; (await used(t.url, key)) < before + SLOTS && performance.now() < deadline; ) await sleep(10);
    const probed = await Promise.all(probes.map((p) => p.finish()));
    expect(probed.map((r) => r.status)).toEqual(Array.from({ length: SLOTS }, () => 200));
    expect(await used(t.url, key)).toBe(before + SLOTS);

    // Still serving normally.
    expect((await post(t.url, key)).status).toBe(200);
    expect(await used(t.url, key)).toBe(before + SLOTS + 1);
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);

    const heapGrowth = (await collected(gc)).heapUsed - memoryBefore.heapUsed;
    const growth = (measure: keyof NodeJS.MemoryUsage) => memoryAfterCuts[measure] - memoryBefore[measure];
    const mb = (bytes: number) => `${bytes >= 0 ? '+' : ''}${(bytes / 2 ** 20).toFixed(1)} MB`;
    console.info(
      `MP-2: ${UPLOADS} aborted uploads (${(sent / 2 ** 20).toFixed(0)} MiB sent) in ${((lastAbort - started) / 1000).toFixed(1)} s; ` +
        `peak ${peakReserved} reserved; usage back ${recoveryMs.toFixed(0)} ms after the last abort; heap ${(heapGrowth / 2 ** 20).toFixed(1)} MB; ` +
        `after the last cut (collected): arrayBuffers ${mb(growth('arrayBuffers'))}, external ${mb(growth('external'))}, RSS ${mb(growth('rss'))}, heap ${mb(growth('heapUsed'))}; ` +
        `${early.length} answered before their abort${early.length ? ` (${[...new Set(early)].join(', ')})` : ''}`,
    );
    expect(peakReserved).toBeGreaterThan(0);
    // Nothing answered an upload before it was cut but a refusal (and with SLOTS = 2 x CONCURRENCY, hardly any).
    for (const line of early) expect(line).toMatch(/^HTTP\/1\.1 (429|503) /);
    expect(heapGrowth).toBeLessThan(MAX_HEAP_GROWTH);
    // The received chunks are not kept: a leak of them would be about `sent` (here some 1,000 MB).
    expect(sent).toBeGreaterThan(8 * MAX_BUFFER_GROWTH);
    expect(growth('arrayBuffers')).toBeLessThan(MAX_BUFFER_GROWTH);
    expect(growth('external')).toBeLessThan(MAX_BUFFER_GROWTH);
    expect(growth('rss')).toBeLessThan(MAX_RSS_GROWTH);

    // The log was captured: fastify logs each request it received at info
    // level, the 1,000 cut uploads among them.
    console.info(
      `MP-2 log: ${log.protectRequests} protect requests received; lines by level: ${[...log.byLevel].sort(([a], [b]) => a - b).map(([level, n]) => `${level}: ${n}`).join(', ')}`,
    );
    expect(log.protectRequests).toBeGreaterThanOrEqual(UPLOADS);
    // An aborted upload is the client's doing: nothing at error level or above.
    expect(log.errors).toEqual([]);
    // The control: a line at error level does land in `errors`.
    t.server.app.log.error('control line');
    await sleep(10);
    expect(log.errors).toHaveLength(1);
    expect(log.errors[0]).toContain('control line');
  });
});
