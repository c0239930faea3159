/**
 * Marking does no work its answer will not use: an image whose shape the
 * embedder refuses (too small, too elongated) is refused from its header,
 * before anything is decoded; and a marking whose signal is aborted (the
 * client left the dashboard) stops before its next costly step, and an
 * embedding under way on the worker pool is stopped, its slot given back.
 */
import { createHash } from 'node:crypto';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { createPixelDecoder } from '../../src/adapters/pixels.js';
import { createWorkerPool } from '../../src/adapters/worker-pool.js';
import { createFingerprinting, type EmbedTask, type PixelPort } from '../../src/app/fingerprint.js';
import { FingerprintNotPossibleError } from '../../src/errors.js';

const secret = { version: 1, secret: createHash('sha256').update('optmark test: marking abort').digest() };
const pool = createWorkerPool({ threads: 1, queue: 4 });
afterAll(() => pool.close());

/** The real decoder, counting what is asked of it. */
function counted() {
  const decoder = createPixelDecoder({ maxPixels: 1e8, concurrency: 1, queue: 4 });
  const calls = { decode: 0, probe: 0, withSlot: 0 };
  const pixels: PixelPort = {
    decode: (bytes, options) => (calls.decode++, decoder.decode(bytes, options)),
    probe: (bytes) => (calls.probe++, decoder.probe(bytes)),
    withSlot: (bytes, job, signal) => (calls.withSlot++, decoder.withSlot(bytes, job, signal)),
  };
  return { decoder, calls, pixels };
}

describe('refused from the header', () => {
  it.each([
    ['too elongated', 300, 1500, /^This image cannot be fingerprinted: it is 300x1500; a fingerprint needs a side ratio of at most 4:1$/],
    ['too small', 200, 200, /^This image cannot be fingerprinted: it is 200x200; a fingerprint needs at least 256 pixels on the shorter side$/],
  ])('an image %s: refused as the embedder would refuse it, with nothing decoded or probed', async (_, width, height, message) => {
    const { calls, pixels } = counted();
    let embeds = 0;
    const fingerprinting = createFingerprinting({
      pixels,
      detect: (task) => pool.detect(task),
      embed: (task) => (embeds++, pool.embed(task)),
      detecting: () => [secret],
      marking: () => secret,
    });
    const image = await sharp({ create: { width, height, channels: 3, background: '#7a8' } }).png().toBuffer();
    const refusal = fingerprinting.mark(image);
    await expect(refusal).rejects.toBeInstanceOf(FingerprintNotPossibleError);
    await expect(refusal).rejects.toThrow(message);
    expect({ ...calls, embeds }).toEqual({ decode: 0, probe: 0, withSlot: 0, embeds: 0 });
  });
});

describe('a marking whose signal is aborted', () => {
  // 24 megapixels of noise: an embedding of a second or more on one thread.
  const big = sharp({ create: { width: 6000, height: 4000, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } }).jpeg({ quality: 90 }).toBuffer();

  it('before it starts: nothing is probed, decoded or embedded; it rejects with the reason', async () => {
    const { calls, pixels } = counted();
    const fingerprinting = createFingerprinting({ pixels, detect: (task) => pool.detect(task), embed: (task, signal) => pool.embed(task, signal), detecting: () => [secret], marking: () => secret });
    const gone = new AbortController();
    const reason = new Error('the client left');
    gone.abort(reason);
    await expect(fingerprinting.mark(await big, gone.signal)).rejects.toBe(reason);
    expect(calls).toEqual({ decode: 0, probe: 0, withSlot: 0 });
  });

  it('during the embedding on the pool: the embedding is stopped, the marking rejects at once, and its decoder slot is free again', async () => {
    const { decoder, pixels } = counted();
    const gone = new AbortController();
    let embeddingSince = 0;
    let embedded = false;
    const fingerprinting = createFingerprinting({
      pixels,
      detect: (task) => pool.detect(task),
      embed: async (task: EmbedTask, signal) => {
        embeddingSince = performance.now();
        const outcome = await pool.embed(task, signal);
        embedded = true;
        return outcome;
      },
      detecting: () => [secret],
      marking: () => secret,
    });
    const marking = fingerprinting.mark(await big, gone.signal);
    marking.catch(() => {});
    await expect.poll(() => embeddingSince > 0, { timeout: 30_000, interval: 10 }).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const reason = new Error('the client left');
    const abortedAt = performance.now();
    gone.abort(reason);
    await expect(marking).rejects.toBe(reason);
    const stoppedMs = performance.now() - abortedAt;
    expect(embedded).toBe(false);
    expect(stoppedMs).toBeLessThan(500);
    expect(decoder.load).toEqual({ running: 0, waiting: 0 });

    // The control: the same embedding, not stopped, takes far longer than it took to stop it.
    const started = performance.now();
    const control = await createFingerprinting({ pixels, detect: (task) => pool.detect(task), embed: (task) => pool.embed(task), detecting: () => [secret], marking: () => secret })
      .mark(await big)
      .then(
        () => 'marked',
        (error: unknown) => (error instanceof FingerprintNotPossibleError ? 'refused after the whole job' : Promise.reject(error)),
      );
    const wholeMs = performance.now() - started;
    console.info(`marking 24 MP: stopped ${stoppedMs.toFixed(0)} ms after the abort; the whole job takes ${wholeMs.toFixed(0)} ms (${control})`);
    expect(wholeMs).toBeGreaterThan(4 * stoppedMs);
  });
});
