/**
 * Synchronisation: find where the key's pattern sits in a whitened canvas,
 * i.e. the scale a crop introduced (the canvas is normalised on the shorter
 * side, so cutting the picture enlarges what is left) and the cyclic offset.
 * Only the key's synchronisation blocks (periodic and anchor) are read
 * here, never the verification blocks: that is what keeps the verdict's
 * statistics exact.
 *
 * 1. Scale and offset modulo PERIOD, from the periodic blocks: fold the
 *    canvas sampled at `step` into PERIOD x PERIOD cells and correlate with
 *    the periodic tile by FFT. At step 1 (uncropped or only resized copies)
 *    a score far above what noise gives (the maximum of 4 096 near-Gaussian
 *    values is about 4 sd) skips the coarse scan for a short fine climb
 *    (crops of about 1 %); otherwise a coarse scan of the
 *    step, then the best local maxima refined with a parabola. At full
 *    resolution a score stays within ~80 % of its peak for a step error of
 *    0.006 on photos, so a coarse grid of 0.012 is enough (half-resolution
 *    scans were measured both weaker and narrower: the pattern's energy is
 *    mostly above their Nyquist frequency). Two folds share one complex
 *    FFT. An unmarked image runs the whole scan.
 * 2. Which of the four quarter-tile shifts: fold into TILE x TILE cells at
 *    the chosen step, whiten that fold spectrally (the verdict votes on the
 *    same whitened fold) and take the shift the anchor blocks correlate
 *    best with.
 *
 * Every correlation here is of whitened folds (correlate.ts), so that a
 * picture's own regular patterns do not pull the answer to their
 * frequencies (test/core/fingerprint/periodic.test.ts).
 */
import { Correlator, spectrumOf, vertex, type Peak, type Spectrum } from './correlate.js';
import { Folder, type Plane } from './fold.js';
import type { FingerprintKey } from './keys.js';
import { PERIOD, TILE } from './scheme.js';
import { SpectralWhitener } from './spectral-whitening.js';

/** Largest sampling step searched: a crop of about 11 % of the shorter side per side. */
const MAX_STEP = 1.28;
const COARSE_STEP = 0.012;
const FINE_DELTA = COARSE_STEP / 3;
const CANDIDATES = 2;
/** A score at step 1 above this ends the coarse search (the fine climb near 1 still runs). */
const FAST_SCORE = 6.5;
/** How far the fine climb from step 1 may go: past it, step 1 would not have scored FAST_SCORE. */
const CLIMB_LIMIT = 1 + 4 * COARSE_STEP;

export interface Sync {
  /** Sampling step that undoes the enlargement (1 = no crop). */
  readonly step: number;
  /**
   * Sub-pixel start of the sampling grid: the canvas is read at (shiftX +
   * k * step, shiftY + l * step). Not used by the verdict (the fold is made
   * here), but with step, x and y it says exactly where the fold was read:
   * for diagnostics, and for tests that compare two synchronisations.
   */
  readonly shiftX: number;
  readonly shiftY: number;
  /** Tile cell (k + x, l + y) mod TILE lies at sample (k, l). */
  readonly x: number;
  readonly y: number;
  /** Peak score of the periodic correlation. */
  readonly score: number;
  /** The canvas folded into TILE x TILE cells at this step and shift (valid until the next call). */
  readonly fold: Float64Array;
  /** That fold whitened spectrally (spectral-whitening.ts; valid until the next call). */
  readonly whitened: Float64Array;
}

const correlator = new Correlator(PERIOD);
const periodFolder = new Folder(PERIOD);
const tileFolder = new Folder(TILE);
const foldA = new Float64Array(PERIOD * PERIOD);
const foldB = new Float64Array(PERIOD * PERIOD);
const tileFold = new Float64Array(TILE * TILE);
const whitener = new SpectralWhitener(TILE);

const references = new WeakMap<FingerprintKey, Spectrum>();

function referenceOf(key: FingerprintKey): Spectrum {
  let spectrum = references.get(key);
  if (!spectrum) {
    spectrum = spectrumOf(key.periodicTile, PERIOD, correlator.fft);
    references.set(key, spectrum);
  }
  return spectrum;
}

interface Hypothesis {
  readonly step: number;
  readonly peak: Peak;
}

/** Periodic scores of the given steps, two per FFT; `coarse` folds with the nearest rows (Folder.fold). */
function evaluate(plane: Plane, steps: readonly number[], reference: Spectrum, coarse = false): Hypothesis[] {
  const out: Hypothesis[] = [];
  for (let i = 0; i < steps.length; i += 2) {
    periodFolder.fold(plane, steps[i]!, 0, 0, foldA, coarse);
    const second = i + 1 < steps.length;
    if (second) periodFolder.fold(plane, steps[i + 1]!, 0, 0, foldB, coarse);
    const [a, b] = correlator.peaks(foldA, second ? foldB : undefined, reference);
    out.push({ step: steps[i]!, peak: a });
    if (b) out.push({ step: steps[i + 1]!, peak: b });
  }
  return out;
}

export function synchronise(plane: Plane, key: FingerprintKey): Sync {
  const best = searchScale(plane, referenceOf(key));
  const { step, peak } = best;
  // The sub-pixel part of the offset moves into the sampling grid's start.
  const shiftX = -peak.dx * step;
  const shiftY = -peak.dy * step;
  tileFolder.fold(plane, step, shiftX, shiftY, tileFold);
  const whitened = whitener.whiten(tileFold);
  const { x, y } = anchor(whitened, key.anchorTile, peak.x, peak.y);
  return { step, shiftX, shiftY, x, y, score: peak.score, fold: tileFold, whitened };
}

function searchScale(plane: Plane, reference: Spectrum): Hypothesis {
  const [atOne] = evaluate(plane, [1], reference);
  if (atOne!.peak.score >= FAST_SCORE) return climbFromOne(plane, atOne!, reference);

  const steps: number[] = [];
  for (let s = 1 + COARSE_STEP; s <= MAX_STEP + 1e-9; s += COARSE_STEP) steps.push(s);
  const coarse = [atOne!, ...evaluate(plane, steps, reference, true)];
  const score = (i: number) => coarse[i]?.peak.score ?? Number.NEGATIVE_INFINITY;
  const maxima = coarse.filter((h, i) => h.peak.score >= score(i - 1) && h.peak.score > score(i + 1));
  maxima.sort((a, b) => b.peak.score - a.peak.score);
  const candidates = maxima.slice(0, CANDIDATES);

  // Each candidate's neighbours at +/- FINE_DELTA, then the vertex of the parabola through the three.
  const near = evaluate(plane, candidates.flatMap((c) => [Math.max(1, c.step - FINE_DELTA), c.step + FINE_DELTA]), reference);
  const vertices = candidates.map((c, i) => {
    const below = near[2 * i]!;
    const above = near[2 * i + 1]!;
    // At step 1 the lower neighbour is clamped and the points are not evenly spaced: no vertex.
    return below.step < c.step ? c.step + FINE_DELTA * vertex(below.peak.score, c.peak.score, above.peak.score) : c.step;
  });
  return best([atOne!, ...candidates, ...near, ...evaluate(plane, vertices, reference)]);
}

/**
 * A crop of about 1 % of the shorter side (step ~1.01) still scores far
 * above noise at step 1, yet puts the verification blocks a few samples off
 * at the far side of the canvas, which costs a third of their votes. So a
 * high score at step 1 is only a starting point: climb in FINE_DELTA steps
 * while the score rises, then take the vertex of the parabola through the
 * best point and its neighbours. An uncropped image stops after the first
 * pair (one FFT).
 */
function climbFromOne(plane: Plane, atOne: Hypothesis, reference: Spectrum): Hypothesis {
  const ladder: Hypothesis[] = [atOne];
  while (ladder.at(-1) === best(ladder) && ladder.at(-1)!.step < CLIMB_LIMIT) {
    const top = ladder.at(-1)!.step;
    ladder.push(...evaluate(plane, [top + FINE_DELTA, top + 2 * FINE_DELTA], reference));
  }
  const top = best(ladder);
  const i = ladder.indexOf(top);
  if (i === 0 || i === ladder.length - 1) return top;
  const [vertexAt] = evaluate(plane, [top.step + FINE_DELTA * vertex(ladder[i - 1]!.peak.score, top.peak.score, ladder[i + 1]!.peak.score)], reference);
  return best([top, vertexAt!]);
}

/** The highest-scoring hypothesis; the first of equals. */
function best(hypotheses: readonly Hypothesis[]): Hypothesis {
  return hypotheses.reduce((a, b) => (b.peak.score > a.peak.score ? b : a));
}

/** Of the four offsets (x, y) + (0 | PERIOD, 0 | PERIOD), the one the anchor blocks match best. */
function anchor(fold: Float64Array, anchorTile: Float32Array, x: number, y: number): { x: number; y: number } {
  const mask = TILE - 1;
  let best = { x, y };
  let bestScore = Number.NEGATIVE_INFINITY;
  for (const [ax, ay] of [[0, 0], [PERIOD, 0], [0, PERIOD], [PERIOD, PERIOD]] as const) {
    const ox = x + ax;
    const oy = y + ay;
    let score = 0;
    for (let ty = 0; ty < TILE; ty++) {
      const foldRow = ((ty - oy) & mask) * TILE;
      const tileRow = ty * TILE;
      for (let tx = 0; tx < TILE; tx++) {
        const a = anchorTile[tileRow + tx]!;
        if (a !== 0) score += a * fold[foldRow + ((tx - ox) & mask)]!;
      }
    }
    if (score > bestScore) {
      bestScore = score;
      best = { x: ox, y: oy };
    }
  }
  return best;
}
