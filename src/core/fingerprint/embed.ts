/**
 * Embedding: add the key's tiled pattern to the image's luminance, shaped by
 * a perceptual mask and held within what the eye would not notice.
 *
 * 1. Map the image's luma onto the analysis canvas (area average).
 * 2. Mask: where the canvas is textured the pattern can be stronger without
 *    being seen, in flat areas weaker; halved near black and white, where it
 *    would clip or show in the shadows.
 * 3. Visibility (visibility.ts), at full resolution, per 8 x 8 block: flat
 *    and clipped blocks get no change at all, the others a change held
 *    within a just-noticeable difference. An image with too little that can
 *    carry the mark (MIN_CARRYING) is refused as too flat, rather than
 *    marked visibly.
 * 4. Pattern x mask on the canvas, enlarged to the image (linear
 *    interpolation, no blocky steps), each change held within its bound,
 *    at the strength that keeps the RMS change within MAX_RMS and the
 *    predicted SSIM loss within SSIM_LOSS (raising it where flat areas
 *    left the rest to carry the mark), added equally to R, G and B (a
 *    change of luma only, no colour shift).
 * 5. Quantise with a fixed, position-hashed dither, so that changes smaller
 *    than half a level survive on average instead of rounding away, and the
 *    three channels move by the same integer (no dither where the bound is
 *    0: those pixels keep their values exactly).
 * 6. Measure the PSNR and the SSIM actually reached; if either is under its
 *    bound (MIN_PSNR_DB, MIN_SSIM), scale down and redo, and after
 *    MAX_ATTEMPTS refuse the image rather than break the bound.
 *
 * Alpha is copied untouched.
 */
import { canvasSize } from './canvas.js';
import { FingerprintRefusedError } from './errors.js';
import type { FingerprintKey } from './keys.js';
import { localStd } from './local-stats.js';
import { checkRaster, colourChannels, lumaRows, type Raster } from './raster.js';
import { planeRows, resamplePlane, resampleRows, resizeAxis } from './resample.js';
import { LOCAL_RADIUS, MAX_ASPECT, MIN_CARRYING, MIN_EMBED_SIDE, MIN_PSNR_DB, TARGET_RMS, TILE } from './scheme.js';
import { boundRow, sampledSsim, ssimWeightRow, visibilityMap } from './visibility.js';

export interface EmbedResult {
  /** Same layout as the input (width, height, channels); alpha bytes are the input's. */
  readonly data: Uint8Array;
  /** Of the colour channels, marked against original, in dB; always >= MIN_PSNR_DB (the luma's SSIM is always >= MIN_SSIM too). */
  readonly psnr: number;
  /** Share of the image's pixels that can carry the mark unseen (visibility.ts); at least MIN_CARRYING. */
  readonly carrying: number;
}

/** Mask exponent and bounds (research note, section 3.3). */
const MASK_POWER = 0.6;
const MASK_MIN = 0.35;
const MASK_MAX = 2.5;
const DARK = 16;
const BRIGHT = 240;
const MAX_ATTEMPTS = 4;
/** The strengths tried, as multiples of the base (the pattern at TARGET_RMS everywhere), weakest first. */
const BOOSTS = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1, 1.05, 1.1, 1.15, 1.2, 1.3, 1.4, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 5];
/**
 * Predicted loss of SSIM the mark may cause: the mean over the pixels of
 * (s change^2 + 1/6) / (2 sigma^2 + C2), sigma the block's standard
 * deviation, s the share of the change SSIM's window sees as structure
 * rather than as a change of local mean (rowDetail), 1/6 the dither's
 * rounding.
 */
const SSIM_LOSS = 0.005;
/**
 * The structural share's floor: the row measure sees the raw pattern, not
 * the bounds' edges nor the columns, so at least this much of the change
 * is counted as structure. The prediction only sets the strength; the
 * SSIM of what was made is checked after (MIN_SSIM).
 */
const STRUCTURAL_FLOOR = 0.2;
/**
 * The largest RMS change over the whole image the strength may reach once
 * the visibility bounds hold it (before the dither's rounding): PSNR
 * 20 log10(255 / sqrt(1.9^2 + 1/6)) = 42.4 dB at most, within MIN_PSNR_DB.
 */
const MAX_RMS = 1.9;
/**
 * The SSIM (luma) the marked pixels must keep against the original, as
 * sampledSsim estimates it with windows every SSIM_STRIDE pixels; a
 * picture over the bound is marked again more weakly, aiming at SSIM_AIM.
 */
const MIN_SSIM = 0.991;
const SSIM_AIM = 0.992;
const SSIM_STRIDE = 8;
const SSIM_WINDOWS = 60_000;
/** Every how many rows the strength's energy and SSIM loss are estimated. */
const BOOST_ROWS = 4;
/** Every how many rows the pattern's detail is measured (rowDetail). */
const DETAIL_ROWS = 8;
/** SSIM's window: a Gaussian of sigma 1.5 pixels, 11 taps (Wang et al. 2004). */
const SSIM_WINDOW = (() => {
  const w = Array.from({ length: 11 }, (_, i) => Math.exp(-((i - 5) ** 2) / (2 * 1.5 * 1.5)));
  const sum = w.reduce((a, b) => a + b, 0);
  return Float64Array.from(w, (v) => v / sum);
})();

/** A row's energy, and the energy of what is left of it once its SSIM-window mean is removed. */
function rowDetail(row: Float32Array, width: number): { energy: number; detail: number } {
  let energy = 0;
  let detail = 0;
  for (let x = 5; x < width - 5; x++) {
    let mean = 0;
    for (let k = 0; k < 11; k++) mean += SSIM_WINDOW[k]! * row[x + k - 5]!;
    const v = row[x]!;
    energy += v * v;
    detail += (v - mean) * (v - mean);
  }
  return { energy, detail };
}

/**
 * Why an image of this size cannot carry the mark (too small, too
 * elongated), or undefined when its shape can: decided by the size alone,
 * so a caller that knows it from the file's header need decode nothing.
 */
export function shapeRefusal(width: number, height: number): FingerprintRefusedError | undefined {
  const shorter = Math.min(width, height);
  if (shorter < MIN_EMBED_SIDE) return new FingerprintRefusedError('too_small', `The image is ${width}x${height}; a fingerprint needs at least ${MIN_EMBED_SIDE} pixels on the shorter side`);
  if (Math.max(width, height) > MAX_ASPECT * shorter) return new FingerprintRefusedError('too_elongated', `The image is ${width}x${height}; a fingerprint needs a side ratio of at most ${MAX_ASPECT}:1`);
  return undefined;
}

/** @throws FingerprintRefusedError when the image is too small, too elongated or too flat to carry the mark unseen, or cannot carry it within MIN_PSNR_DB */
export function embedFingerprint(image: Raster, key: FingerprintKey): EmbedResult {
  checkRaster(image);
  const { width, height } = image;
  const refused = shapeRefusal(width, height);
  if (refused) throw refused;

  const visibility = visibilityMap(image);
  if (visibility.carrying < MIN_CARRYING) {
    throw new FingerprintRefusedError(
      'too_flat',
      `The image is too flat to carry the mark unseen: ${percent(visibility.carrying)} of it has texture the mark can hide in, and the fingerprint needs ${percent(MIN_CARRYING)} (flat, white and clipped areas are never marked)`,
    );
  }

  const canvas = canvasSize(width, height);
  const pattern = maskedPattern(image, canvas.width, canvas.height, key.tile);
  const xs = resizeAxis(canvas.width, width);
  const ys = resizeAxis(canvas.height, height);
  const read = planeRows(pattern, canvas.width);
  const bounds = new Float32Array(width);
  const column = new Float32Array(visibility.columns);
  /** The pattern's rows at full size with their bounds; every `every`-th row only when asked (the bounds are not computed for the others). */
  const rows = (onRow: (y: number, row: Float32Array, bound: Float32Array) => void, every = 1) =>
    resampleRows(read, canvas.width, canvas.height, xs, ys, (y, row) => {
      if (y % every !== 0) return;
      boundRow(visibility, width, y, bounds, column);
      onRow(y, row, bounds);
    });

  // The strength. The base: the pattern's RMS over the whole image at
  // TARGET_RMS, as if every pixel could carry it. The flat and saturated
  // areas left out and every change held within its JND, the base is
  // scaled (BOOSTS) to the largest step that keeps both the RMS over the
  // whole image within TARGET_RMS and the predicted loss of SSIM within
  // SSIM_LOSS, so that a picture with few carrying areas keeps what
  // robustness it can where the mark does not show, and a smooth one is
  // not marked past what its texture hides.
  let unbounded = 0;
  let sampled = 0;
  let detail = 0;
  resampleRows(read, canvas.width, canvas.height, xs, ys, (y, row) => {
    for (let x = 0; x < width; x++) unbounded += row[x]! * row[x]!;
    if (y % DETAIL_ROWS === 0) {
      const d = rowDetail(row, width);
      sampled += d.energy;
      detail += d.detail;
    }
  });
  const base = TARGET_RMS / Math.sqrt(unbounded / (width * height));
  // The share of the pattern's energy SSIM's window sees as structure (the
  // rest is locally smooth, a change of local mean that SSIM all but
  // ignores): measured along rows, the same along columns (the pattern is
  // enlarged by the same factor both ways).
  const along = sampled > 0 ? detail / sampled : 1;
  const structural = Math.max(STRUCTURAL_FLOOR, 1 - (1 - along) * (1 - along));
  const energy = new Float64Array(BOOSTS.length);
  const loss = new Float64Array(BOOSTS.length);
  const weights = new Float32Array(width);
  // Estimated on every BOOST_ROWS-th row: two dozen strengths per pixel are the embedder's costliest loop.
  let counted = 0;
  rows((y, row, bound) => {
    counted += width;
    ssimWeightRow(visibility, width, y, weights);
    for (let x = 0; x < width; x++) {
      const limit = bound[x]!;
      if (limit === 0) continue;
      const value = Math.abs(base * row[x]!);
      const w = weights[x]!;
      for (let i = 0; i < BOOSTS.length; i++) {
        const change = Math.min(limit, value * BOOSTS[i]!);
        // The dither's rounding adds 1/6 of a level squared on average (scheme.ts).
        energy[i]! += change * change + 1 / 6;
        loss[i]! += (structural * change * change + 1 / 6) * w;
      }
    }
  }, BOOST_ROWS);
  const pixels = counted;
  let boost = BOOSTS[0]!;
  for (let i = 0; i < BOOSTS.length; i++) {
    if (energy[i]! / pixels > MAX_RMS * MAX_RMS + 1 / 6 || loss[i]! / pixels > SSIM_LOSS) break;
    boost = BOOSTS[i]!;
  }
  let gain = base * boost;

  // SSIM windows every 8 pixels, or sparser on large pictures: about SSIM_WINDOWS of them.
  const ssimStride = Math.max(SSIM_STRIDE, Math.round(Math.sqrt((width * height) / SSIM_WINDOWS)));
  const out = new Uint8Array(image.data);
  for (let attempt = 1; ; attempt++) {
    const squaredError = addPattern(image, out, gain, rows);
    const psnr = psnrOf(squaredError, width * height * colourChannels(image.channels));
    // The SSIM of what was made, checked as the PSNR is: the prediction
    // that set the strength is only an estimate.
    const ssim = psnr >= MIN_PSNR_DB ? sampledSsim(image, out, ssimStride) : 0;
    if (psnr >= MIN_PSNR_DB && ssim >= MIN_SSIM) return { data: out, psnr, carrying: visibility.carrying };
    // A refusal, like a size the mark does not fit: a property of this image
    // the caller reports to the user, not a fault. The message starts as the
    // others do ("The image is ..."), which src/adapters/fingerprint-worker.ts
    // turns into "it is ..." after "This image cannot be fingerprinted: ".
    if (attempt === MAX_ATTEMPTS) {
      throw new FingerprintRefusedError(
        'quality',
        `The image is too hard to mark within the quality bounds of ${MIN_PSNR_DB} dB PSNR and SSIM ${MIN_SSIM} (the last of ${MAX_ATTEMPTS} attempts reached ${psnr.toFixed(2)} dB, SSIM ${ssim.toFixed(4)})`,
      );
    }
    if (psnr < MIN_PSNR_DB) {
      // PSNR moves with 20 log10(gain): step down by the shortfall plus a margin.
      gain *= 10 ** ((psnr - MIN_PSNR_DB - 0.1) / 20);
    } else {
      // The loss of SSIM moves with about gain^2: step down to the bound with a margin.
      gain *= Math.max(0.5, Math.sqrt((1 - SSIM_AIM) / (1 - ssim)));
    }
  }
}

const percent = (share: number) => `${(100 * share).toFixed(share < 0.1 ? 1 : 0)} %`;

/** The tiled pattern times the perceptual mask, on the canvas. */
function maskedPattern(image: Raster, canvasWidth: number, canvasHeight: number, tile: Float32Array): Float32Array {
  const luma = resamplePlane(lumaRows(image), image.width, image.height, resizeAxis(image.width, canvasWidth), resizeAxis(image.height, canvasHeight));
  const activity = localStd(luma, canvasWidth, canvasHeight, LOCAL_RADIUS);
  const median = medianOf(activity) + 1;
  const pattern = new Float32Array(luma.length);
  for (let y = 0; y < canvasHeight; y++) {
    const tileRow = (y % TILE) * TILE;
    for (let x = 0; x < canvasWidth; x++) {
      const i = y * canvasWidth + x;
      let mask = Math.min(MASK_MAX, Math.max(MASK_MIN, ((activity[i]! + 1) / median) ** MASK_POWER));
      if (luma[i]! < DARK || luma[i]! > BRIGHT) mask *= 0.5;
      pattern[i] = mask * tile[tileRow + (x % TILE)]!;
    }
  }
  return pattern;
}

/**
 * Writes image + gain x pattern into `out` (colour channels only), each
 * change held within its pixel's visibility bound, and returns the sum of
 * squared changes. Where the bound is 0 the pixel is not changed at all
 * (the dither alone never moves a value: floor(v + d) = v for d < 1).
 */
function addPattern(image: Raster, out: Uint8Array, gain: number, rows: (onRow: (y: number, row: Float32Array, bound: Float32Array) => void) => void): number {
  const { data, width, channels } = image;
  const colours = colourChannels(channels);
  let squaredError = 0;
  rows((y, row, bound) => {
    for (let x = 0, p = y * width * channels; x < width; x++, p += channels) {
      const limit = bound[x]!;
      if (limit === 0) continue;
      const change = Math.max(-limit, Math.min(limit, gain * row[x]!)) + dither(x, y);
      for (let c = 0; c < colours; c++) {
        const before = data[p + c]!;
        const after = Math.min(255, Math.max(0, Math.floor(before + change)));
        out[p + c] = after;
        squaredError += (after - before) * (after - before);
      }
    }
  });
  return squaredError;
}

/** A fixed uniform value in [0, 1) per pixel position (integer hash, after Chris Wellons' "lowbias32"). */
function dither(x: number, y: number): number {
  let h = (Math.imul(x, 0x9e3779b1) ^ Math.imul(y, 0x85ebca77)) >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  h ^= h >>> 16;
  return (h >>> 0) / 0x1_0000_0000;
}

function psnrOf(squaredError: number, samples: number): number {
  if (squaredError === 0) return Number.POSITIVE_INFINITY;
  return 10 * Math.log10((255 * 255 * samples) / squaredError);
}

function medianOf(values: Float32Array): number {
  const sorted = Float32Array.from(values).sort();
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
