/**
 * The whitened cyclic correlation: two folds through one complex transform
 * give what each gives alone (the spectra are taken apart, whitened and put
 * back together exactly), and the pattern's shift is found under a
 * sinusoid a hundred times stronger than it.
 */
import { describe, expect, it } from 'vitest';
import { Correlator, spectrumOf } from '../../../src/core/fingerprint/correlate.js';
import { random } from '../../support/random.js';

const SIZE = 64;
const rnd = random(42);
const reference = Float32Array.from({ length: SIZE * SIZE }, () => rnd() * 2 - 1);

/** The reference shifted so that the correlation peaks at (cx, cy), plus `extra` at each position. */
function shifted(cx: number, cy: number, extra: (x: number, y: number) => number): Float64Array {
  const fold = new Float64Array(SIZE * SIZE);
  for (let y = 0; y < SIZE; y++) {
    for (let x = 0; x < SIZE; x++) fold[y * SIZE + x] = reference[((y + cy) % SIZE) * SIZE + ((x + cx) % SIZE)]! + extra(x, y);
  }
  return fold;
}

describe('Correlator', () => {
  const correlator = new Correlator(SIZE);
  const spectrum = spectrumOf(reference, SIZE, correlator.fft);
  const noise = () => (rnd() - 0.5) * 2;
  // A sine of amplitude 100 whose period (8) fits the fold: what a striped picture leaves in it.
  const stripes = (x: number) => 100 * Math.sin((2 * Math.PI * x) / 8);
  const a = shifted(5, 9, (x) => stripes(x) + noise());
  const b = shifted(20, 3, () => noise());

  it('finds each shift, the sinusoid notwithstanding', () => {
    const [pa, pb] = correlator.peaks(a, b, spectrum);
    expect([pa.x, pa.y]).toEqual([5, 9]);
    expect([pb!.x, pb!.y]).toEqual([20, 3]);
    expect(pa.score).toBeGreaterThan(20);
    expect(pb!.score).toBeGreaterThan(20);
  });

  it('gives for two folds together what it gives for each alone', () => {
    const [pa, pb] = correlator.peaks(a, b, spectrum);
    const [alone] = correlator.peaks(a, undefined, spectrum);
    const [second] = correlator.peaks(b, undefined, spectrum);
    for (const [together, single] of [
      [pa, alone],
      [pb!, second],
    ] as const) {
      expect([together.x, together.y]).toEqual([single.x, single.y]);
      expect(together.score).toBeCloseTo(single.score, 9);
      expect(together.dx).toBeCloseTo(single.dx, 9);
      expect(together.dy).toBeCloseTo(single.dy, 9);
    }
  });

  it('scores a flat fold 0, never NaN', () => {
    const [flat] = correlator.peaks(new Float64Array(SIZE * SIZE).fill(3), undefined, spectrum);
    expect(flat.score).toBe(0);
  });
});
