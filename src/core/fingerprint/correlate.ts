/**
 * Cyclic cross-correlation of folded tiles with a reference tile, by FFT:
 * C(o) = sum_t F(t) R(t + o) = IFFT(conj(FFT F) . FFT R)(o). F(t) holds the
 * pattern at t + c for an unknown shift c, so C peaks at o = c.
 *
 * Two real folds share one complex transform: with X = FFT(A + iB),
 * IFFT(conj(X) . FFT R) = C_A - i C_B because R is real.
 */
import { SquareFft } from './fft.js';

export interface Peak {
  /** (max - mean) / standard deviation over all offsets; 0 for a flat correlation. */
  readonly score: number;
  /** Integer offset of the maximum, in [0, size). */
  readonly x: number;
  readonly y: number;
  /** Sub-pixel correction from a parabola through the neighbours, in [-0.5, 0.5]. */
  readonly dx: number;
  readonly dy: number;
}

/** The reference tile's spectrum, as SquareFft.forward leaves it. */
export interface Spectrum {
  readonly size: number;
  readonly re: Float64Array;
  readonly im: Float64Array;
}

export function spectrumOf(tile: Float32Array, size: number, fft: SquareFft): Spectrum {
  const re = Float64Array.from(tile);
  const im = new Float64Array(size * size);
  fft.forward(re, im);
  return { size, re, im };
}

export class Correlator {
  readonly size: number;
  readonly fft: SquareFft;
  private readonly re: Float64Array;
  private readonly im: Float64Array;

  constructor(size: number) {
    this.size = size;
    this.fft = new SquareFft(size);
    this.re = new Float64Array(size * size);
    this.im = new Float64Array(size * size);
  }

  /** Peaks of the correlations of `a` and (optionally) `b` with the reference. */
  peaks(a: Float64Array, b: Float64Array | undefined, reference: Spectrum): [Peak, Peak | undefined] {
    const { re, im, fft } = this;
    re.set(a);
    if (b) im.set(b);
    else im.fill(0);
    fft.forward(re, im);
    const { re: rr, im: ri } = reference;
    for (let i = 0; i < re.length; i++) {
      // conj(x) . r
      const xr = re[i]!;
      const xi = im[i]!;
      re[i] = xr * rr[i]! + xi * ri[i]!;
      im[i] = xr * ri[i]! - xi * rr[i]!;
    }
    fft.inverse(re, im);
    const first = peakOf(re, this.size, 1);
    return [first, b ? peakOf(im, this.size, -1) : undefined];
  }
}

/** Peak of sign * c over the size x size map. */
function peakOf(c: Float64Array, size: number, sign: number): Peak {
  let sum = 0;
  let sumSquares = 0;
  let best = Number.NEGATIVE_INFINITY;
  let at = 0;
  for (let i = 0; i < c.length; i++) {
    const v = sign * c[i]!;
    sum += v;
    sumSquares += v * v;
    if (v > best) {
      best = v;
      at = i;
    }
  }
  const n = c.length;
  const mean = sum / n;
  const sd = Math.sqrt(Math.max(0, sumSquares / n - mean * mean));
  const score = sd > 0 && Number.isFinite(sd) && Number.isFinite(best) ? (best - mean) / sd : 0;
  const x = at % size;
  const y = (at - x) / size;
  const mask = size - 1;
  const value = (xx: number, yy: number) => sign * c[(yy & mask) * size + (xx & mask)]!;
  return { score, x, y, dx: vertex(value(x - 1, y), best, value(x + 1, y)), dy: vertex(value(x, y - 1), best, value(x, y + 1)) };
}

/** Offset of the vertex of the parabola through (-1, a), (0, b), (1, c), within [-0.5, 0.5]. */
export function vertex(a: number, b: number, c: number): number {
  const curvature = a - 2 * b + c;
  if (!(curvature < 0)) return 0;
  return Math.min(0.5, Math.max(-0.5, (0.5 * (a - c)) / curvature));
}
