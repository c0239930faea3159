/**
 * Statistics for the fingerprint benchmark: PSNR measured by the benchmark
 * itself, and the null-calibration tests (randomised probability integral
 * transform under Binomial(n, 1/2), Kolmogorov-Smirnov against U(0, 1) with
 * an exact p-value).
 */
import { binomialUpperTail } from '../src/core/fingerprint/binomial.js';

/** PSNR over every sample (for interleaved RGB: R, G and B together), peak 255. */
export { psnr } from '../test/support/psnr.js';

/**
 * Randomised probability integral transform of `matches` under
 * Binomial(n, 1/2): F(m - 1) + v * P(X = m) with v uniform on [0, 1). Under
 * the null model the result is exactly Uniform(0, 1), whatever n; n = 0
 * carries no information and is refused.
 */
export function randomisedPit(n: number, matches: number, v: number): number {
  if (n <= 0) throw new RangeError('no votes: no transform');
  const atLeast = binomialUpperTail(n, matches);
  const above = binomialUpperTail(n, matches + 1);
  return 1 - atLeast + v * (atLeast - above);
}

/** Kolmogorov-Smirnov distance between the sample and U(0, 1). */
export function ksUniform(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  let d = 0;
  for (let i = 0; i < n; i++) d = Math.max(d, (i + 1) / n - sorted[i]!, sorted[i]! - i / n);
  return d;
}

/**
 * P[D_n >= d] for the two-sided one-sample statistic and a continuous law:
 * exact (Marsaglia, Tsang and Wang 2003, the matrix-power form of the
 * Durbin recursion) when the matrix is small, otherwise the asymptotic
 * Kolmogorov distribution with Stephens' small-sample correction (only
 * reached for distances whose p-value is far below any threshold used here).
 */
export function ksPValue(n: number, d: number): number {
  if (n <= 0) return Number.NaN;
  if (d <= 0) return 1;
  if (d >= 1) return 0;
  const k = Math.floor(n * d) + 1;
  const m = 2 * k - 1;
  if (m > 400) return kolmogorovTail((Math.sqrt(n) + 0.12 + 0.11 / Math.sqrt(n)) * d);
  const h = k - n * d;
  // H: lower Hessenberg, H[i][j] = 1 / (i - j + 1)! for i - j + 1 >= 0, corrected in the first column and last row.
  const H = new Float64Array(m * m);
  for (let i = 0; i < m; i++) for (let j = 0; j < m; j++) if (i - j + 1 >= 0) H[i * m + j] = 1;
  for (let i = 0; i < m; i++) {
    H[i * m] = H[i * m]! - h ** (i + 1);
    H[(m - 1) * m + i] = H[(m - 1) * m + i]! - h ** (m - i);
  }
  H[(m - 1) * m] = H[(m - 1) * m]! + (2 * h - 1 > 0 ? (2 * h - 1) ** m : 0);
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < m; j++) {
      const g = i - j + 1;
      if (g > 0) for (let f = 2; f <= g; f++) H[i * m + j] = H[i * m + j]! / f;
    }
  }
  // Q = H^n, with the scale kept apart (powers of 2^-300 taken out when entries grow).
  const { matrix: Q, exponent } = matrixPower(H, m, n);
  // P[D_n < d] = n! / n^n * Q[k-1][k-1]
  let s = Q[(k - 1) * m + (k - 1)]!;
  let e = exponent;
  for (let i = 1; i <= n; i++) {
    s = (s * i) / n;
    if (s < 1e-140) {
      s *= 1e140;
      e -= 140;
    }
  }
  const below = s * 10 ** e;
  return Math.min(1, Math.max(0, 1 - below));
}

/** H^n for an m x m matrix, the result scaled by 10^-exponent. */
function matrixPower(H: Float64Array, m: number, n: number): { matrix: Float64Array; exponent: number } {
  if (n === 1) return { matrix: H.slice(), exponent: 0 };
  const half = matrixPower(H, m, Math.floor(n / 2));
  let V = multiply(half.matrix, half.matrix, m);
  let exponent = 2 * half.exponent;
  if (n % 2 === 1) V = multiply(H, V, m);
  if (V[Math.floor(m / 2) * m + Math.floor(m / 2)]! > 1e140) {
    for (let i = 0; i < V.length; i++) V[i] = V[i]! * 1e-140;
    exponent += 140;
  }
  return { matrix: V, exponent };
}

function multiply(A: Float64Array, B: Float64Array, m: number): Float64Array {
  const C = new Float64Array(m * m);
  for (let i = 0; i < m; i++) {
    for (let k = 0; k < m; k++) {
      const a = A[i * m + k]!;
      if (a === 0) continue;
      for (let j = 0; j < m; j++) C[i * m + j] = C[i * m + j]! + a * B[k * m + j]!;
    }
  }
  return C;
}

/** P[K >= lambda] for the Kolmogorov distribution. */
export function kolmogorovTail(lambda: number): number {
  if (lambda < 0.2) return 1;
  let p = 0;
  for (let j = 1; j <= 100; j++) p += 2 * (-1) ** (j - 1) * Math.exp(-2 * j * j * lambda * lambda);
  return Math.min(1, Math.max(0, p));
}

/** One null trial: which image, transformation and key, how many blocks voted and how many matched. */
export interface NullTrial {
  readonly image: number;
  readonly attack: number;
  readonly key: number;
  readonly n: number;
  readonly matches: number;
}

export interface KsResult {
  readonly trials: number;
  readonly distance: number;
  readonly p: number;
}

export interface CalibrationGroup {
  readonly label: string;
  readonly trials: number;
  readonly meanN: number;
  /** Mean matches, and the mean of n/2 it should equal. */
  readonly meanMatches: number;
  readonly expectedMeanMatches: number;
  /** Mean of (matches - n/2)^2, and the mean of n/4 it should equal. */
  readonly meanSquare: number;
  readonly expectedMeanSquare: number;
  /** Mean and variance of the standardised (matches - n/2) / sqrt(n/4): 0 and 1 under the null model. */
  readonly meanZ: number;
  readonly varianceZ: number;
}

export interface FullCalibration {
  /** Trials with at least one vote (the transform needs one). */
  readonly tested: number;
  /** Trials where no block voted: nothing to test, and no verdict possible. */
  readonly noVotes: number;
  /** The partitions' size and how many there are. */
  readonly partitions: number;
  /** KS of the randomised PIT of every trial, per partition (each partition: one transformation per image and key). */
  readonly all: readonly KsResult[];
  /** The same for the trials with fewer than 128 voting blocks only. */
  readonly fewer: readonly KsResult[];
  /** Pooled over every trial: the distance only (the trials are correlated, so no p-value). */
  readonly pooledDistance: number;
  readonly groups: readonly CalibrationGroup[];
  /** Per-test threshold: the family-wise level divided among the tests (Bonferroni). */
  readonly threshold: number;
  readonly familyLevel: number;
  readonly pass: boolean;
}

/**
 * The calibration test over every null trial. The same image under several
 * transformations with one key gives strongly correlated counts (the same
 * blocks, mostly the same signs), while different keys are independent
 * under the null model (the benchmark gives every image keys of its own: a
 * key shared by two alike images would correlate their counts); so the
 * trials are split into `attacks` partitions,
 * partition s holding, for each (image, key), the transformation
 * (image + key + s) mod attacks: every trial lies in exactly one partition,
 * and each partition has independent trials. Each partition's randomised
 * PITs are tested against U(0, 1) (exact KS p-value), and again restricted to
 * the trials with fewer than 128 voting blocks, where a leak between
 * synchronisation and verification would show first. The verdict needs every
 * p-value at or above familyLevel / (number of tests).
 */
export function calibrate(trials: readonly NullTrial[], attacks: number, seed: () => number, familyLevel = 0.01): FullCalibration {
  const pits = trials.map((t) => (t.n > 0 ? randomisedPit(t.n, t.matches, seed()) : Number.NaN));
  const partition = (t: NullTrial) => (((t.attack - t.image - t.key) % attacks) + attacks) % attacks;
  const all: KsResult[] = [];
  const fewer: KsResult[] = [];
  for (let s = 0; s < attacks; s++) {
    const take = (keep: (t: NullTrial) => boolean) => {
      const values = trials.flatMap((t, i) => (t.n > 0 && partition(t) === s && keep(t) ? [pits[i]!] : []));
      const distance = values.length ? ksUniform(values) : 0;
      return { trials: values.length, distance, p: values.length ? ksPValue(values.length, distance) : Number.NaN };
    };
    all.push(take(() => true));
    fewer.push(take((t) => t.n < 128));
  }
  const tests = [...all, ...fewer].filter((r) => r.trials > 0);
  const threshold = familyLevel / tests.length;
  const voted = pits.filter((p) => Number.isFinite(p));
  return {
    tested: voted.length,
    noVotes: trials.length - voted.length,
    partitions: attacks,
    all,
    fewer,
    pooledDistance: voted.length ? ksUniform(voted) : 0,
    groups: groupsOf(trials),
    threshold,
    familyLevel,
    pass: tests.every((r) => r.p >= threshold),
  };
}

const GROUPS: ReadonlyArray<[string, number, number]> = [
  ['n = 128', 128, 128],
  ['n = 96-127', 96, 127],
  ['n = 64-95', 64, 95],
  ['n = 20-63', 20, 63],
  ['n = 1-19 (no verdict possible)', 1, 19],
];

function groupsOf(trials: readonly NullTrial[]): CalibrationGroup[] {
  const out: CalibrationGroup[] = [];
  for (const [label, lo, hi] of GROUPS) {
    const group = trials.filter((t) => t.n >= lo && t.n <= hi);
    if (group.length === 0) continue;
    const mean = (f: (t: NullTrial) => number) => group.reduce((a, t) => a + f(t), 0) / group.length;
    const z = group.map((t) => (t.matches - t.n / 2) / Math.sqrt(t.n / 4));
    const meanZ = z.reduce((a, b) => a + b, 0) / z.length;
    out.push({
      label,
      trials: group.length,
      meanN: mean((t) => t.n),
      meanMatches: mean((t) => t.matches),
      expectedMeanMatches: mean((t) => t.n / 2),
      meanSquare: mean((t) => (t.matches - t.n / 2) ** 2),
      expectedMeanSquare: mean((t) => t.n / 4),
      meanZ,
      varianceZ: z.length > 1 ? z.reduce((a, b) => a + (b - meanZ) ** 2, 0) / (z.length - 1) : Number.NaN,
    });
  }
  return out;
}
