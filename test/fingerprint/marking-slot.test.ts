/**
 * Fingerprint marking keeps full-size pixels from decode to encode, so the
 * whole job holds one of the pixel decoder's slots (the bound that
 * OPTMARK_DECODE_CONCURRENCY and OPTMARK_DECODE_QUEUE set): with one slot and
 * no queue, a check or a decode arriving while a marking job embeds or
 * encodes is refused with ServerBusyError (503 server_busy through the
 * server), and the slot is free again once the job is done, whether it
 * succeeded or failed. The pixels go to the pool's worker and come back
 * transferred, not copied.
 */
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { isMarkedAsUntransferable } from 'node:worker_threads';
import sharp from 'sharp';
import { transferableSymbol, valueSymbol } from 'piscina';
import { afterAll, describe, expect, it } from 'vitest';
import { createWorkerPool } from '../../src/adapters/worker-pool.js';
import detect, { embed, embedAndTransfer } from '../../src/adapters/fingerprint-worker.js';
import { createPixelDecoder, type PixelDecoder } from '../../src/adapters/pixels.js';
import { createFingerprinting, type DetectTask, type EmbedPort, type EmbedTask, type PixelPort } from '../../src/app/fingerprint.js';
import { FingerprintNotPossibleError, ServerBusyError } from '../../src/errors.js';
import { signInToDashboard } from '../support/dashboard.js';
import { freshDataDir, postImage, startTestServer } from '../support/server.js';
import { fixFingerprintKey, texturedPhoto } from './support.js';

interface Pixels {
  readonly data: Uint8Array;
  readonly width: number;
  readonly height: number;
  readonly channels: number;
}

// Fixed (32 bytes derived from a label, as fixFingerprintKey does), so that a failure can be reproduced: the same mark on every run.
const secret = { version: 1, secret: createHash('sha256').update('optmark test: marking slot').digest() };
const photo = await texturedPhoto(640, 480, 'png');
const other = await texturedPhoto(320, 256, 'jpeg', 3);

/** A gate the test opens: `wait()` resolves once `open()` is called. */
function gate() {
  const { promise, resolve } = Promise.withResolvers<void>();
  return { wait: () => promise, open: () => resolve() };
}

/** The decoder as the fingerprint sees it, noting how many slots are taken each time it encodes. */
function watched(decoder: PixelDecoder, loadsAtEncode: number[]): PixelPort {
  return {
    decode: (bytes, options) => decoder.decode(bytes, options),
    probe: (bytes) => decoder.probe(bytes),
    withSlot: (bytes, job) =>
      decoder.withSlot(bytes, (held) =>
        job({
          decode: (b, options) => held.decode(b, options),
          encodeLike: (original, pixels, quality) => {
            loadsAtEncode.push(decoder.load.running);
            return held.encodeLike(original, pixels, quality);
          },
        }),
      ),
  };
}

/**
 * Fingerprinting over `pixels` whose embedder opens `embedding` and waits for
 * `release` before embedding: a marking job then holds its slot for as long
 * as the test likes. `onEmbed` runs once released, `onDetect` before each detection.
 */
function gatedMarking(pixels: PixelPort, hooks: { onEmbed?: () => void; onDetect?: (task: DetectTask) => void } = {}) {
  const embedding = gate();
  const release = gate();
  const fingerprinting = createFingerprinting({
    pixels,
    detect: async (task) => {
      hooks.onDetect?.(task);
      return detect(task);
    },
    embed: async (task) => {
      embedding.open();
      await release.wait();
      hooks.onEmbed?.();
      return embed(task);
    },
    detecting: () => [secret],
    marking: () => secret,
  });
  return { fingerprinting, embedding, release };
}

describe('a marking job holds one decode slot from decode to encode', () => {
  it('with one slot and no queue, a check and a decode during its embedding get ServerBusyError; afterwards both are served', async () => {
    const decoder = createPixelDecoder({ maxPixels: 1e8, concurrency: 1, queue: 0 });
    const loadsAtEncode: number[] = [];
    const { fingerprinting, embedding, release } = gatedMarking(watched(decoder, loadsAtEncode));

    const marking = fingerprinting.mark(photo);
    await embedding.wait();
    // The decode is over; the job is embedding and still holds its slot.
    expect(decoder.load).toEqual({ running: 1, waiting: 0 });
    await expect(fingerprinting.check(other)).rejects.toBeInstanceOf(ServerBusyError);
    await expect(decoder.decode(other)).rejects.toBeInstanceOf(ServerBusyError);
    release.open();
    const marked = (await marking).bytes;

    // It encoded in the same slot, and gave it back when done.
    expect(loadsAtEncode).toEqual([1]);
    expect(decoder.load).toEqual({ running: 0, waiting: 0 });
    expect((await fingerprinting.check(marked)).present).toBe(true);
    expect((await fingerprinting.check(other)).present).toBe(false);
  });

  it('with a queue, a check waits for the marking job instead of overtaking it', async () => {
    const decoder = createPixelDecoder({ maxPixels: 1e8, concurrency: 1, queue: 1 });
    const order: string[] = [];
    const { fingerprinting, embedding, release } = gatedMarking(decoder, { onEmbed: () => order.push('embedded') });
    const marking = fingerprinting.mark(photo).then(() => order.push('marked'));
    await embedding.wait();
    const checking = fingerprinting.check(other).then(() => order.push('checked'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(decoder.load).toEqual({ running: 1, waiting: 1 });
    release.open();
    await Promise.all([marking, checking]);
    expect(order).toEqual(['embedded', 'marked', 'checked']);
    expect(decoder.load).toEqual({ running: 0, waiting: 0 });
  });

  it('gives its slot back when the embedder refuses the image or fails', async () => {
    const decoder = createPixelDecoder({ maxPixels: 1e8, concurrency: 1, queue: 0 });
    const failing = (outcome: () => ReturnType<EmbedPort>) =>
      createFingerprinting({ pixels: decoder, detect: async (task) => detect(task), embed: outcome, detecting: () => [secret], marking: () => secret });
    await expect(failing(async () => ({ refused: 'it is unsuitable' })).mark(photo)).rejects.toBeInstanceOf(FingerprintNotPossibleError);
    expect(decoder.load).toEqual({ running: 0, waiting: 0 });
    await expect(failing(async () => Promise.reject(new ServerBusyError('fingerprint marking'))).mark(photo)).rejects.toBeInstanceOf(ServerBusyError);
    expect(decoder.load).toEqual({ running: 0, waiting: 0 });
  });

  it('a check whose client left while it waited for the slot gives up its place: blocks 0 at once, no decode, no detection', async () => {
    const decoder = createPixelDecoder({ maxPixels: 1e8, concurrency: 1, queue: 1 });
    const detected: number[] = [];
    const { fingerprinting, embedding, release } = gatedMarking(decoder, { onDetect: (task) => detected.push(task.width) });
    const marking = fingerprinting.mark(photo);
    await embedding.wait();
    const detectionsBefore = detected.length;
    const gone = new AbortController();
    const checking = fingerprinting.check(other, gone.signal);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(decoder.load).toEqual({ running: 1, waiting: 1 });
    gone.abort();
    expect(await checking).toEqual({ present: false, confidence: 0, blocks: 0 });
    expect(decoder.load).toEqual({ running: 1, waiting: 0 });
    release.open();
    await marking;
    // After the embedding, the detector ran once: the marking job's self-check (of the
    // 640 x 480 photo, reduced to 341 x 256); the abandoned check never reached it.
    expect(detected.slice(detectionsBefore)).toEqual([341]);
  });

  it('past the queue, marking itself is refused with ServerBusyError before it decodes anything', async () => {
    const decoder = createPixelDecoder({ maxPixels: 1e8, concurrency: 1, queue: 0 });
    let embeds = 0;
    const { fingerprinting, embedding, release } = gatedMarking(decoder, { onEmbed: () => embeds++ });
    const first = fingerprinting.mark(photo);
    await embedding.wait();
    await expect(fingerprinting.mark(photo)).rejects.toBeInstanceOf(ServerBusyError);
    release.open();
    await first;
    expect(embeds).toBe(1);
  });
});

describe('pixels to and from the worker', () => {
  const pool = createWorkerPool({ threads: 1, queue: 4 });
  afterAll(() => pool.close());

  const decoded = async (): Promise<Pixels> => {
    const { data, info } = await sharp(photo).raw().toBuffer({ resolveWithObject: true });
    return { data: new Uint8Array(data), width: info.width, height: info.height, channels: info.channels };
  };
  const task = (pixels: Pixels): EmbedTask => ({ ...pixels, orientation: 1, grey: false, secret });

  it("the pool's handler hands the marked pixels' buffer over for transfer, with the outcome as its value", async () => {
    const outcome = embedAndTransfer(task(await decoded())) as unknown as Record<symbol, unknown>;
    const value = outcome[valueSymbol] as { marked: { data: Uint8Array } };
    expect(value.marked.data.byteLength).toBe(640 * 480 * 3);
    expect(outcome[transferableSymbol]).toBe(value.marked.data.buffer);
    // A refusal is a plain value: nothing to transfer.
    const small = { data: new Uint8Array(100 * 100 * 3), width: 100, height: 100, channels: 3 };
    expect(embedAndTransfer(task(small))).toEqual({ refused: expect.stringMatching(/^it is 100x100/) });
  });

  it('through the pool: the input is transferred (left empty here), and the marked pixels are those marked in this thread', async () => {
    const input = await decoded();
    const expected = embed(task(await decoded()));
    const outcome = await pool.embed(task(input));
    expect(input.data.byteLength).toBe(0);
    if (!('marked' in outcome) || !('marked' in expected)) throw new Error('refused');
    expect(outcome.marked.data.byteOffset).toBe(0);
    expect(outcome.marked.data.byteLength).toBe(outcome.marked.data.buffer.byteLength);
    expect(Buffer.from(outcome.marked.data).equals(Buffer.from(expected.marked.data))).toBe(true);
  });

  // sharp's toUint8Array would hand the worker its pixels without a copy, but
  // never frees its native buffer (sharp 0.35.5): the decoder takes toBuffer,
  // external memory Node will not transfer, and the pool copies it once.
  it("the pixel decoder's output (sharp's toBuffer, external memory) is copied into the worker's task and stays whole here", async () => {
    const decoder = createPixelDecoder({ maxPixels: 1e8, concurrency: 1, queue: 0 });
    const pixels = await decoder.decode(photo);
    expect(isMarkedAsUntransferable(pixels.data.buffer)).toBe(true);
    const outcome = await pool.embed(task(pixels));
    expect(pixels.data.byteLength).toBe(pixels.width * pixels.height * pixels.channels);
    expect('marked' in outcome).toBe(true);
  });

  it("a Buffer Node will not transfer (sharp's toBuffer: external memory) is copied, not refused with DataCloneError", async () => {
    const { data, info } = await sharp(photo).raw().toBuffer({ resolveWithObject: true });
    expect(isMarkedAsUntransferable(data.buffer)).toBe(true);
    const expected = embed(task({ data: new Uint8Array(data), width: info.width, height: info.height, channels: info.channels }));
    const outcome = await pool.embed(task({ data, width: info.width, height: info.height, channels: info.channels }));
    expect(data.byteLength).toBe(640 * 480 * 3);
    if (!('marked' in outcome) || !('marked' in expected)) throw new Error('refused');
    expect(Buffer.from(outcome.marked.data).equals(Buffer.from(expected.marked.data))).toBe(true);
    // A view into a larger buffer is copied too: the rest of that buffer stays with its owner.
    const larger = new Uint8Array(data.byteLength + 16);
    larger.set(data, 16);
    const check = await pool.detect({ data: larger.subarray(16), width: info.width, height: info.height, channels: info.channels, secrets: [secret] });
    expect(larger.byteLength).toBe(data.byteLength + 16);
    expect(check.blocks).toBeGreaterThanOrEqual(0);
  });
});

describe('through the server: one decode slot, no queue', () => {
  it('verifies sent while the dashboard marks a 12-megapixel photo get 503 server_busy for the whole marking job, not only its decode', async () => {
    // The server's fingerprint key fixed too (it would create a random one): the dashboard's marking is the same on every run.
    const dataDir = freshDataDir();
    fixFingerprintKey(dataDir, 'optmark test: marking slot server');
    const t = await startTestServer({ dataDir, env: { OPTMARK_DECODE_CONCURRENCY: '1', OPTMARK_DECODE_QUEUE: '0', OPTMARK_MAX_IN_FLIGHT_PER_KEY: '32' } });
    try {
      const key = await t.key('pro', 'slot');
      const { cookie, formToken } = await signInToDashboard(t, 'slot');
      // A JPEG decodes fast (about a tenth of the job here); embedding and encoding 12 megapixels take the rest.
      const big = await texturedPhoto(4000, 3000, 'jpeg');
      const verify = async () => {
        const response = await postImage(t.url, key, other, { path: '/api/v1/verify' });
        return { status: response.status, code: ((await response.json()) as { code?: string }).code };
      };
      expect((await verify()).status).toBe(200);

      /** One marking call, with verifies sent one after the other for as long as it runs. */
      const markWhileVerifying = async () => {
        const form = new FormData();
        form.append('csrf', formToken);
        form.append('fingerprint', 'on');
        form.append('image', new Blob([big], { type: 'image/jpeg' }), 'big.jpg');
        const started = performance.now();
        let ended: number | undefined;
        const marking = fetch(`${t.url}/mark`, {
          method: 'POST',
          headers: { Cookie: cookie, 'Sec-Fetch-Site': 'same-origin' },
          body: form,
        }).then(async (response) => {
          const bytes = new Uint8Array(await response.arrayBuffer());
          ended = performance.now();
          return { status: response.status, bytes };
        });
        const answers: Array<{ sent: number; status: number; code?: string }> = [];
        while (ended === undefined) {
          const sent = performance.now();
          answers.push({ sent, ...(await verify()) });
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        return { marked: await marking, answers, started, ended: ended! };
      };
      // A verify can take the one slot just before the marking job asks for it, which then gets the 503: try again.
      let run = await markWhileVerifying();
      for (let attempt = 1; attempt < 5 && run.marked.status === 503; attempt++) run = await markWhileVerifying();
      const { marked, answers, started, ended } = run;
      expect(marked.status).toBe(200);

      for (const a of answers) expect(a.status === 200 || (a.status === 503 && a.code === 'server_busy'), JSON.stringify(a)).toBe(true);
      // The longest stretch of consecutive refusals, from the first one's sending to the answer after the last.
      let longest = 0;
      for (let i = 0; i < answers.length; i++) {
        if (answers[i]!.status !== 503) continue;
        let j = i;
        while (j + 1 < answers.length && answers[j + 1]!.status === 503) j++;
        longest = Math.max(longest, (answers[j + 1]?.sent ?? ended) - answers[i]!.sent);
        i = j;
      }
      const duration = ended - started;
      console.info(
        `marking ${duration.toFixed(0)} ms; ${answers.length} verifies meanwhile, ${answers.filter((a) => a.status === 503).length} refused; longest refused stretch ${longest.toFixed(0)} ms`,
      );
      // With only the decode in the slot, the refusals would stop after about a tenth of the job.
      expect(longest / duration).toBeGreaterThan(0.5);
      // The slot is free again once the marking is done: a verify is served. (The record's thumbnail is made
      // in the first quiet moment after the answer, in the slot too: a verify sent then may still meet it.)
      await expect.poll(() => verify(), { timeout: 10_000, interval: 100 }).toEqual({ status: 200, code: undefined });
      const { format, width, height } = await sharp(marked.bytes).metadata();
      expect({ format, width, height }).toEqual({ format: 'jpeg', width: 4000, height: 3000 });
    } finally {
      await t.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
