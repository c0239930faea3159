/**
 * The decoder path of /api/v1/verify, assembled as the server assembles it
 * (src/server/start.ts), in this process: the pixel decoder with the
 * server's default limits (src/adapters/pixels.ts createPixelDecoder) and
 * the fingerprint check on top, with a secret of its own. Detection runs
 * here rather than in a worker pool: the same function the pool's threads
 * run (src/adapters/fingerprint-worker.ts), so an exception in it reaches
 * the property as it would reach the server's error handler.
 *
 * The long fuzz (long-run-child.ts) passes this to the property for every
 * input, and so does the replay of the fixtures it saves
 * (regressions.test.ts), so that a fixture saved for the decoder path fails
 * `npm test` until it is fixed. Free of test-runner imports.
 */
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import detect, { embed } from '../../src/adapters/fingerprint-worker.js';
import { createPixelDecoder } from '../../src/adapters/pixels.js';
import { createFingerprinting, type FingerprintSecret, type Fingerprinting } from '../../src/app/fingerprint.js';
import { loadConfig } from '../../src/config.js';

/** What the decoder was given: calls, and how many of them it refused (typed errors: the check then examines no block). */
export interface PixelPathStats {
  decodes: number;
  refused: number;
}

export interface PixelPath extends Fingerprinting {
  readonly stats: PixelPathStats;
  /**
   * One check of an image of our own, before the first input: the first
   * detection derives the key's tile and compiles the detector (0.3 s on an
   * idle machine, several times that on a loaded one), a cost of the process
   * that would otherwise count against the first input's time bound.
   */
  warm(): Promise<void>;
}

export function createPixelPath(): PixelPath {
  // The server's defaults (OPTMARK_MAX_PIXELS, 100 megapixels), read from its configuration so that they stay the same.
  const { maxPixels } = loadConfig({});
  // One decode at a time: the property calls it once per input and waits; the queue is never used.
  const decoder = createPixelDecoder({ maxPixels, concurrency: 1, queue: 1 });
  const stats: PixelPathStats = { decodes: 0, refused: 0 };
  // Counted on the way through, so that a run can say how much of it reached the decoder (images under 64 pixels a
  // side are answered without decoding); errors pass unchanged.
  const pixels: typeof decoder = {
    ...decoder,
    async decode(bytes, options) {
      stats.decodes++;
      try {
        return await decoder.decode(bytes, options);
      } catch (error) {
        stats.refused++;
        throw error;
      }
    },
    get load() {
      return decoder.load;
    },
  };
  const secret: FingerprintSecret = { version: 1, secret: randomBytes(32) };
  const fingerprinting = createFingerprinting({
    pixels,
    detect: async (task) => detect(task),
    embed: async (task) => embed(task),
    detecting: () => [secret],
    marking: () => secret,
  });
  return {
    ...fingerprinting,
    stats,
    async warm() {
      const noise = await sharp({ create: { width: 320, height: 240, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } })
        .png()
        .toBuffer();
      for (let i = 0; i < 3; i++) await fingerprinting.check(noise);
      stats.decodes = 0;
      stats.refused = 0;
    },
  };
}
