/**
 * Square 2-D complex FFT for the power-of-two sizes the detector folds into
 * (64 and 128), on separate real and imaginary float64 arrays, in place.
 *
 * Iterative radix-2, organised for JavaScript engines: each pass transforms
 * all columns at once, a butterfly combining two whole rows with one
 * twiddle factor, so the innermost loop is long, sequential and has no
 * table lookups; a transpose then lets the same pass do the other
 * dimension; stages go two at a time. (A textbook row-by-row loop was
 * 3-4 times slower in V8.)
 *
 * `forward` leaves the spectrum transposed ([kx][ky]); `inverse` expects it
 * that way and returns the plane in its original orientation. Spectra are
 * only ever multiplied point by point with other spectra from `forward`, so
 * the orientation never matters and two transposes are saved per call.
 */
export class SquareFft {
  readonly size: number;
  private readonly cos: Float64Array;
  private readonly sin: Float64Array;
  private readonly reversed: Uint32Array;
  private readonly scratch: Float64Array;

  constructor(size: number) {
    if (!Number.isInteger(Math.log2(size)) || size < 2) throw new RangeError(`FFT size must be a power of two, got ${size}`);
    this.size = size;
    this.cos = new Float64Array(size / 2);
    this.sin = new Float64Array(size / 2);
    for (let i = 0; i < size / 2; i++) {
      this.cos[i] = Math.cos((2 * Math.PI * i) / size);
      this.sin[i] = Math.sin((2 * Math.PI * i) / size);
    }
    const bits = Math.log2(size);
    this.reversed = new Uint32Array(size);
    for (let i = 0; i < size; i++) {
      let r = 0;
      for (let b = 0; b < bits; b++) r |= ((i >> b) & 1) << (bits - 1 - b);
      this.reversed[i] = r;
    }
    this.scratch = new Float64Array(size);
  }

  forward(re: Float64Array, im: Float64Array): void {
    this.columns(re, im, -1);
    transpose(re, this.size);
    transpose(im, this.size);
    this.columns(re, im, -1);
  }

  /** Inverse transform, scaled by 1 / size^2 so inverse(forward(x)) = x. */
  inverse(re: Float64Array, im: Float64Array): void {
    this.columns(re, im, 1);
    transpose(re, this.size);
    transpose(im, this.size);
    this.columns(re, im, 1);
    const scale = 1 / (this.size * this.size);
    for (let i = 0; i < re.length; i++) {
      re[i]! *= scale;
      im[i]! *= scale;
    }
  }

  /** The 1-D transform of every column; sign -1 forward, +1 inverse (unscaled). */
  private columns(re: Float64Array, im: Float64Array, sign: number): void {
    const n = this.size;
    const { reversed, scratch } = this;
    for (let i = 0; i < n; i++) {
      const j = reversed[i]!;
      if (j > i) {
        swapRows(re, i, j, n, scratch);
        swapRows(im, i, j, n, scratch);
      }
    }
    let half = 1;
    if (Math.log2(n) % 2 === 1) {
      this.stage(re, im);
      half = 2;
    }
    for (; half < n; half <<= 2) this.twoStages(re, im, half, sign);
  }

  /**
   * The first radix-2 stage (half = 1), when the number of stages is odd.
   * Its only twiddle factor is 1, so it is the same forward and inverse.
   */
  private stage(re: Float64Array, im: Float64Array): void {
    const n = this.size;
    for (let start = 0; start < n; start += 2) {
      const a = start * n;
      const b = a + n;
      for (let c = 0; c < n; c++) {
        const br = re[b + c]!;
        const bi = im[b + c]!;
        const ar = re[a + c]!;
        const ai = im[a + c]!;
        re[b + c] = ar - br;
        im[b + c] = ai - bi;
        re[a + c] = ar + br;
        im[a + c] = ai + bi;
      }
    }
  }

  /**
   * Radix-2 stages `half` and `2 * half` fused: four rows are loaded once,
   * go through both stages' butterflies and are stored once, which halves
   * the memory traffic of the textbook loop (same arithmetic).
   */
  private twoStages(re: Float64Array, im: Float64Array, half: number, sign: number): void {
    const n = this.size;
    const { cos, sin } = this;
    const step1 = n / (2 * half);
    const step2 = n / (4 * half);
    const rowStride = half * n;
    for (let start = 0; start < n; start += 4 * half) {
      for (let k = 0; k < half; k++) {
        const w1r = cos[k * step1]!;
        const w1i = sign * sin[k * step1]!;
        const w2r = cos[k * step2]!;
        const w2i = sign * sin[k * step2]!;
        const w3r = cos[(k + half) * step2]!;
        const w3i = sign * sin[(k + half) * step2]!;
        const r0 = (start + k) * n;
        const r1 = r0 + rowStride;
        const r2 = r1 + rowStride;
        const r3 = r2 + rowStride;
        for (let c = 0; c < n; c++) {
          const x0r = re[r0 + c]!;
          const x0i = im[r0 + c]!;
          const x1r = re[r1 + c]!;
          const x1i = im[r1 + c]!;
          const x2r = re[r2 + c]!;
          const x2i = im[r2 + c]!;
          const x3r = re[r3 + c]!;
          const x3i = im[r3 + c]!;
          // stage `half`: (0, 1) and (2, 3), twiddle w1
          const b1r = x1r * w1r - x1i * w1i;
          const b1i = x1r * w1i + x1i * w1r;
          const b3r = x3r * w1r - x3i * w1i;
          const b3i = x3r * w1i + x3i * w1r;
          const y0r = x0r + b1r;
          const y0i = x0i + b1i;
          const y1r = x0r - b1r;
          const y1i = x0i - b1i;
          const y2r = x2r + b3r;
          const y2i = x2i + b3i;
          const y3r = x2r - b3r;
          const y3i = x2i - b3i;
          // stage `2 * half`: (0, 2) with w2 and (1, 3) with w3
          const tr = y2r * w2r - y2i * w2i;
          const ti = y2r * w2i + y2i * w2r;
          const ur = y3r * w3r - y3i * w3i;
          const ui = y3r * w3i + y3i * w3r;
          re[r0 + c] = y0r + tr;
          im[r0 + c] = y0i + ti;
          re[r2 + c] = y0r - tr;
          im[r2 + c] = y0i - ti;
          re[r1 + c] = y1r + ur;
          im[r1 + c] = y1i + ui;
          re[r3 + c] = y1r - ur;
          im[r3 + c] = y1i - ui;
        }
      }
    }
  }
}

function swapRows(a: Float64Array, i: number, j: number, n: number, scratch: Float64Array): void {
  scratch.set(a.subarray(i * n, (i + 1) * n));
  a.copyWithin(i * n, j * n, (j + 1) * n);
  a.set(scratch, j * n);
}

function transpose(a: Float64Array, n: number): void {
  for (let y = 0; y < n; y++) {
    for (let x = y + 1; x < n; x++) {
      const i = y * n + x;
      const j = x * n + y;
      const t = a[i]!;
      a[i] = a[j]!;
      a[j] = t;
    }
  }
}
