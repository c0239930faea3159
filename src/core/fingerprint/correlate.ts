/**
 * Cyclic cross-correlation of folded tiles with a reference tile, by FFT:
 * C(o) = sum_t F(t) R(t + o) = IFFT(conj(FFT F) . FFT R)(o). F(t) holds the
 * pattern at t + c for an unknown shift c, so C peaks at o = c.
 *
 * Each fold's spectrum is whitened first, as the verification blocks' fold
 * is (spectral-whitening.ts): divided by its own amplitude averaged over
 * the 5 x 5 neighbouring frequencies. A picture with a strong regular
 * pattern (stripes, a grating, a fabric) puts much of its energy into a few
 * frequencies; where the pattern's period fits the fold's, folding keeps
 * it whole, and unwhitened it drew the correlation's peak to wherever the
 * picture's own peaks fell: such pictures, marked and re-encoded at once,
 * were found at the wrong place and missed (test/core/fingerprint/
 * periodic.test.ts: 8 of 18 gratings before, none since this and the
 * anchor's whitened fold, sync.ts). On the benchmark's photos the scores
 * of marked copies rose and those of unmarked ones stayed where they were.
 *
 * Two real folds share one complex transform: with X = FFT(A + iB), the
 * two spectra are FFT A(k) = (X(k) + conj X(-k)) / 2 and
 * FFT B(k) = (X(k) - conj X(-k)) / 2i, each whitened by its own envelope
 * and put back together, and IFFT(conj(X') . FFT R) = C_A - i C_B because
 * R is real.
 */
import { SquareFft } from './fft.js';
import { boxAverage, envelopeFloor } from './spectral-whitening.js';

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
  /** Amplitude spectra of the two folds, then their envelopes. */
  private readonly envelopeA: Float64Array;
  private readonly envelopeB: Float64Array;
  private readonly scratch: Float64Array;

  constructor(size: number) {
    this.size = size;
    this.fft = new SquareFft(size);
    this.re = new Float64Array(size * size);
    this.im = new Float64Array(size * size);
    this.envelopeA = new Float64Array(size * size);
    this.envelopeB = new Float64Array(size * size);
    this.scratch = new Float64Array(size * size);
  }

  /** Peaks of the correlations of `a` and (optionally) `b` with the reference. */
  peaks(a: Float64Array, b: Float64Array | undefined, reference: Spectrum): [Peak, Peak | undefined] {
    const { re, im, fft } = this;
    re.set(a);
    if (b) im.set(b);
    else im.fill(0);
    fft.forward(re, im);
    this.whiten(b !== undefined);
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

  /**
   * Whitens, in place, the spectra of the real folds A (and B when `two`)
   * held in X = FFT(A + iB), their means removed. Frequencies k and -k are
   * handled together with one divisor, so each whitened spectrum stays
   * exactly conjugate-symmetric and the two correlations stay apart.
   */
  private whiten(two: boolean): void {
    const { re, im, size, envelopeA, envelopeB, scratch } = this;
    const mask = size - 1;
    re[0] = 0;
    im[0] = 0;
    // 2 FFT A(k) = (re_k + re_-k, im_k - im_-k) and 2 FFT B(k) = (im_k + im_-k, re_-k - re_k).
    for (let ky = 0; ky < size; ky++) {
      const mirrorRow = ((size - ky) & mask) * size;
      for (let kx = 0; kx < size; kx++) {
        const i = ky * size + kx;
        const j = mirrorRow + ((size - kx) & mask);
        const ar = re[i]! + re[j]!;
        const ai = im[i]! - im[j]!;
        envelopeA[i] = Math.sqrt(ar * ar + ai * ai);
        if (two) {
          const br = im[i]! + im[j]!;
          const bi = re[j]! - re[i]!;
          envelopeB[i] = Math.sqrt(br * br + bi * bi);
        }
      }
    }
    boxAverage(envelopeA, size, scratch);
    const floorA = envelopeFloor(envelopeA);
    let floorB = 0;
    if (two) {
      boxAverage(envelopeB, size, scratch);
      floorB = envelopeFloor(envelopeB);
    }
    for (let ky = 0; ky < size; ky++) {
      const mirrorRow = ((size - ky) & mask) * size;
      for (let kx = 0; kx < size; kx++) {
        const i = ky * size + kx;
        const j = mirrorRow + ((size - kx) & mask);
        if (j < i) continue;
        const toA = 1 / Math.max(floorA, envelopeA[i]!);
        const ar = (re[i]! + re[j]!) * toA;
        const ai = (im[i]! - im[j]!) * toA;
        let br = 0;
        let bi = 0;
        if (two) {
          const toB = 1 / Math.max(floorB, envelopeB[i]!);
          br = (im[i]! + im[j]!) * toB;
          bi = (re[j]! - re[i]!) * toB;
        }
        // X'(k) = A'(k) + i B'(k), X'(-k) = conj A'(k) + i conj B'(k).
        re[i] = ar - bi;
        im[i] = ai + br;
        re[j] = ar + bi;
        im[j] = br - ai;
      }
    }
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
