/**
 * decodeCost reads from the container what a pixel decode would cost: the
 * coefficient buffer and block visits of a multi-scan JPEG (counted from its
 * frame header and its SOS headers, against sharp's own progressive
 * output), and the frames of an animated WebP. And the fingerprint does not
 * decode what costs too much: verify answers `blocks: 0` without decoding,
 * marking refuses in words.
 */
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { decodeCost } from '../../../src/core/formats/decode-cost.js';
import { overDecodeBudget } from '../../../src/app/decode-budget.js';
import { createFingerprinting, type PixelPort } from '../../../src/app/fingerprint.js';
import { FingerprintNotPossibleError } from '../../../src/errors.js';
import { progressiveHeaders, riff, riffChunk } from '../../support/build.js';

const noise = (width: number, height: number) => {
  const data = Buffer.alloc(width * height * 3);
  for (let i = 0; i < data.length; i++) data[i] = (Math.imul(i, 2654435761) >>> 24) & 0xff;
  return sharp(data, { raw: { width, height, channels: 3 } });
};

describe('decodeCost', () => {
  it('a baseline JPEG: one scan, no coefficient buffer', async () => {
    const bytes = await noise(640, 480).jpeg({ quality: 90 }).toBuffer();
    expect(decodeCost(bytes, 'jpeg')).toMatchObject({ scans: 1, coefficientBytes: 0, frames: 1 });
  });

  it("sharp's progressive JPEG (4:2:0): its scans, and 128 bytes for every block of every component", async () => {
    const bytes = await noise(640, 480).jpeg({ quality: 90, progressive: true }).toBuffer();
    const cost = decodeCost(bytes, 'jpeg');
    expect(cost.scans).toBeGreaterThan(1);
    // Luma 80 x 60 blocks; each chroma component, half each way: 40 x 30.
    expect(cost.coefficientBytes).toBe((80 * 60 + 2 * 40 * 30) * 128);
    expect(cost.blockVisits).toBeGreaterThanOrEqual(80 * 60 + 2 * 40 * 30);
  });

  it('a scan bomb: block visits grow with every scan header', () => {
    const few = decodeCost(progressiveHeaders(10000, 10000, 10), 'jpeg');
    const many = decodeCost(progressiveHeaders(10000, 10000, 2000), 'jpeg');
    const luma = 1250 * 1250;
    const chroma = 625 * 625;
    expect(few).toMatchObject({ scans: 10, coefficientBytes: (luma + 2 * chroma) * 128 });
    expect(many.scans).toBe(2000);
    expect(many.blockVisits).toBe(luma + 2 * chroma + 1999 * luma);
  });

  it('an animated WebP: its frames; a still one and a PNG: one', async () => {
    const still = await noise(64, 64).webp().toBuffer();
    const frame = riffChunk('ANMF', Buffer.alloc(16));
    const animated = riff([riffChunk('VP8X', Buffer.from([0x02, 0, 0, 0, 63, 0, 0, 63, 0, 0])), riffChunk('ANIM', Buffer.alloc(6)), ...Array.from({ length: 1500 }, () => frame)]);
    expect(decodeCost(still, 'webp').frames).toBe(1);
    expect(decodeCost(animated, 'webp').frames).toBe(1500);
    expect(decodeCost(await noise(64, 64).png().toBuffer(), 'png').frames).toBe(1);
  });
});

describe('the fingerprint within the decode budget', () => {
  it('takes real photographs of 12 and 100 megapixels, progressive 4:2:0 included', async () => {
    for (const [width, height] of [
      [4000, 3000],
      [10000, 10000],
    ] as const) {
      expect(overDecodeBudget(progressiveHeaders(width, height, 10)), `${width} x ${height}`).toBeUndefined();
    }
    expect(overDecodeBudget(await noise(640, 480).jpeg({ progressive: true }).toBuffer())).toBeUndefined();
  });

  it('verify does not decode a scan bomb or a WebP of thousands of frames (blocks: 0); marking refuses them in words', async () => {
    const decodes: string[] = [];
    const pixels: PixelPort = {
      decode: async () => {
        decodes.push('decode');
        throw new Error('the decoder was called');
      },
      probe: async () => {
        decodes.push('probe');
        throw new Error('the decoder was called');
      },
      withSlot: async () => {
        decodes.push('slot');
        throw new Error('the decoder was called');
      },
    };
    const secret = { version: 1, secret: new Uint8Array(32).fill(7) };
    const fingerprinting = createFingerprinting({
      pixels,
      detect: async () => ({ present: true, confidence: 1, blocks: 128 }),
      embed: async () => ({ refused: 'not reached' }),
      detecting: () => [secret],
      marking: () => secret,
    });
    const bomb = progressiveHeaders(10000, 10000, 400);
    const frame = riffChunk('ANMF', Buffer.alloc(16));
    const frames = riff([riffChunk('VP8X', Buffer.from([0x02, 0, 0, 0, 0xff, 0x03, 0, 0xff, 0x03, 0])), riffChunk('ANIM', Buffer.alloc(6)), ...Array.from({ length: 5000 }, () => frame)]);
    const coefficients = progressiveHeaders(10000, 10000, 10, 0x11);
    for (const [name, bytes, words] of [
      ['scan bomb', bomb, /400 scans would take \d+ million block decodes, over the 40 million allowed/],
      ['5000 frames', frames, /5000 animation frames, over the 1000 allowed/],
      ['100 MP progressive 4:4:4', coefficients, /would need 572 MiB of coefficients to decode, over the 400 MiB allowed/],
    ] as const) {
      expect(await fingerprinting.check(bytes), name).toEqual({ present: false, confidence: 0, blocks: 0 });
      const refusal = await fingerprinting.mark(bytes).catch((error: unknown) => error);
      expect(refusal, name).toBeInstanceOf(FingerprintNotPossibleError);
      expect((refusal as Error).message, name).toMatch(words);
    }
    expect(decodes).toEqual([]);
  });
});
