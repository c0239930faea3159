/**
 * Synchronisation after small crops. A crop of about 1 % of the shorter side
 * still scores far above noise at step 1, so a search that stopped there
 * read the verification blocks a few samples off and lost a third of their
 * votes (confidence about 0.7, under the verdict's threshold). The fine
 * climb from step 1 must find the true step.
 */
import type { Sharp } from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { detectFingerprint, deriveFingerprintKey, embedFingerprint, type Raster } from '../../../src/core/fingerprint/index.js';
import { roundTrip, syntheticPhoto } from './synthetic.js';

const key = deriveFingerprintKey(Buffer.from('sync test secret, 32 bytes long.'), 'sync-1');
const original = syntheticPhoto(1024, 768, 21);
let marked: Raster;

beforeAll(() => {
  marked = { ...original, data: embedFingerprint(original, key).data };
});

describe('synchronisation after a small crop', () => {
  // [what, left, top, width, height]; the shorter side is 768.
  const crops: Array<[string, number, number, number, number]> = [
    ['0.5 % per side', 5, 4, 1014, 760],
    ['1 % off the top', 0, 8, 1024, 760],
    ['2 % off the top', 0, 15, 1024, 753],
    ['3 % off the bottom', 0, 0, 1024, 745],
  ];
  it.each(crops)('%s: found, at the true step', async (_, left, top, width, height) => {
    const result = detectFingerprint(await roundTrip(marked, (s: Sharp) => s.extract({ left, top, width, height }).jpeg({ quality: 90 })), [key]);
    expect(result.present).toBe(true);
    expect(result.confidence).toBeGreaterThan(0.85);
    // The canvas is scaled on the shorter side: the step that undoes the crop is 768 / height.
    expect(Math.abs(result.sync!.step - 768 / height)).toBeLessThan(0.003);
  });

  it('an uncropped copy stays at step 1', async () => {
    const result = detectFingerprint(await roundTrip(marked, (s: Sharp) => s.jpeg({ quality: 90 })), [key]);
    expect(result.present).toBe(true);
    expect(Math.abs(result.sync!.step - 1)).toBeLessThan(0.003);
  });
});
