/** The spectral whitening the verification blocks vote on (src/core/fingerprint/spectral-whitening.ts). */
import { describe, expect, it } from 'vitest';
import { SpectralWhitener } from '../../../src/core/fingerprint/spectral-whitening.js';
import { random } from '../../support/random.js';

const N = 128;

/** A weak white +/-1 pattern under strong, strongly coloured noise (noise blurred by repeated 3-tap averaging). */
function weakPatternUnderColouredNoise(seed: number): { pattern: Float64Array; plane: Float64Array } {
  const next = random(seed);
  const pattern = Float64Array.from({ length: N * N }, () => (next() < 0.5 ? -1 : 1));
  let noise = Float64Array.from({ length: N * N }, () => next() - 0.5);
  for (let pass = 0; pass < 4; pass++) {
    const blurred = new Float64Array(N * N);
    for (let y = 0; y < N; y++) {
      for (let x = 0; x < N; x++) {
        let sum = 0;
        for (let d = -1; d <= 1; d++) sum += noise[y * N + ((x + d) & (N - 1))]! + noise[((y + d) & (N - 1)) * N + x]!;
        blurred[y * N + x] = sum / 6;
      }
    }
    noise = blurred;
  }
  let rms = 0;
  for (const v of noise) rms += v * v;
  rms = Math.sqrt(rms / noise.length);
  // Noise 40 times the pattern's amplitude, nearly all of it at low frequencies.
  const plane = Float64Array.from(pattern, (p, i) => 0.5 * p + (20 / rms) * noise[i]!);
  return { pattern, plane };
}

/** Correlation with the pattern over 8 x 8 blocks: how many of the 256 blocks have the pattern's sign. */
function blocksMatching(plane: Float64Array, pattern: Float64Array): number {
  let matches = 0;
  for (let by = 0; by < N; by += 8) {
    for (let bx = 0; bx < N; bx += 8) {
      let c = 0;
      for (let y = by; y < by + 8; y++) for (let x = bx; x < bx + 8; x++) c += plane[y * N + x]! * pattern[y * N + x]!;
      if (c > 0) matches++;
    }
  }
  return matches;
}

describe('spectral whitening', () => {
  it('lets a weak white pattern under strong coloured noise win far more block votes', () => {
    const whitener = new SpectralWhitener(N);
    for (const seed of [1, 2, 3]) {
      const { pattern, plane } = weakPatternUnderColouredNoise(seed);
      const raw = blocksMatching(plane, pattern);
      const whitened = blocksMatching(whitener.whiten(plane), pattern);
      // Without whitening the noise decides most blocks (about half match); whitened, nearly all match.
      expect(raw).toBeLessThan(180);
      expect(whitened).toBeGreaterThan(240);
    }
  });

  it('removes the mean and does not depend on the input scale', () => {
    const whitener = new SpectralWhitener(N);
    const { plane } = weakPatternUnderColouredNoise(4);
    const shifted = Float64Array.from(plane, (v) => 3 * v + 1000);
    const a = Float64Array.from(whitener.whiten(plane));
    const b = whitener.whiten(shifted);
    let mean = 0;
    let difference = 0;
    for (let i = 0; i < a.length; i++) {
      mean += a[i]!;
      difference = Math.max(difference, Math.abs(a[i]! - b[i]!));
    }
    expect(Math.abs(mean / a.length)).toBeLessThan(1e-9);
    expect(difference).toBeLessThan(1e-9);
  });

  it('gives zeros for a flat or empty fold, never NaN', () => {
    const whitener = new SpectralWhitener(N);
    for (const value of [0, 7]) {
      const out = whitener.whiten(new Float64Array(N * N).fill(value));
      expect(out.every((v) => v === 0 || (Number.isFinite(v) && Math.abs(v) < 1e-6))).toBe(true);
    }
  });
});
