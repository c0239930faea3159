/** The FFT the detector correlates with, against a direct DFT. */
import { expect, it } from 'vitest';
import { SquareFft } from '../../../src/core/fingerprint/fft.js';

it('matches a direct DFT and inverts exactly, for both sizes the detector uses', () => {
  for (const n of [64, 128]) {
    const fft = new SquareFft(n);
    const re = new Float64Array(n * n).map((_, i) => Math.sin(i * 0.37) + ((i * 7919) % 13) / 13);
    const im = new Float64Array(n * n).map((_, i) => Math.cos(i * 0.11));
    const [r0, i0] = [Float64Array.from(re), Float64Array.from(im)];
    fft.forward(re, im);
    for (const [kx, ky] of [[0, 0], [3, 5], [n - 1, 1], [n / 2, n / 2]] as const) {
      let sr = 0;
      let si = 0;
      for (let y = 0; y < n; y++) {
        for (let x = 0; x < n; x++) {
          const a = (-2 * Math.PI * (kx * x + ky * y)) / n;
          sr += r0[y * n + x]! * Math.cos(a) - i0[y * n + x]! * Math.sin(a);
          si += r0[y * n + x]! * Math.sin(a) + i0[y * n + x]! * Math.cos(a);
        }
      }
      // `forward` leaves the spectrum transposed: [kx][ky].
      expect(re[kx * n + ky]).toBeCloseTo(sr, 8);
      expect(im[kx * n + ky]).toBeCloseTo(si, 8);
    }
    fft.inverse(re, im);
    let error = 0;
    for (let i = 0; i < n * n; i++) error = Math.max(error, Math.abs(re[i]! - r0[i]!), Math.abs(im[i]! - i0[i]!));
    expect(error).toBeLessThan(1e-12);
  }
});
