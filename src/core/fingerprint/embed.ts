/**
 * Embedding: add the key's tiled pattern to the image's luminance, shaped by
 * a perceptual mask, at a fixed strength.
 *
 * 1. Map the image's luma onto the analysis canvas (area average).
 * 2. Mask: where the canvas is textured the pattern can be stronger without
 *    being seen, in flat areas weaker; halved near black and white, where it
 *    would clip or show in the shadows.
 * 3. Pattern x mask on the canvas, enlarged to the image (linear
 *    interpolation, no blocky steps), scaled to TARGET_RMS levels and added
 *    equally to R, G and B (a change of luma only, no colour shift).
 * 4. Quantise with a fixed, position-hashed dither, so that changes smaller
 *    than half a level survive on average instead of rounding away in flat
 *    areas, and the three channels move by the same integer.
 * 5. Measure the PSNR actually reached; if it is under MIN_PSNR_DB (only
 *    conceivable on pathological inputs), scale down and redo, and after
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
import { LOCAL_RADIUS, MAX_ASPECT, MIN_EMBED_SIDE, MIN_PSNR_DB, TARGET_RMS, TILE } from './scheme.js';

export interface EmbedResult {
  /** Same layout as the input (width, height, channels); alpha bytes are the input's. */
  readonly data: Uint8Array;
  /** Of the colour channels, marked against original, in dB; always >= MIN_PSNR_DB. */
  readonly psnr: number;
}

/** Mask exponent and bounds (research note, section 3.3). */
const MASK_POWER = 0.6;
const MASK_MIN = 0.35;
const MASK_MAX = 2.5;
const DARK = 16;
const BRIGHT = 240;
const MAX_ATTEMPTS = 4;

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

/** @throws FingerprintRefusedError when the image is too small or too elongated to carry the mark, or cannot carry it within MIN_PSNR_DB */
export function embedFingerprint(image: Raster, key: FingerprintKey): EmbedResult {
  checkRaster(image);
  const { width, height } = image;
  const refused = shapeRefusal(width, height);
  if (refused) throw refused;

  const canvas = canvasSize(width, height);
  const pattern = maskedPattern(image, canvas.width, canvas.height, key.tile);
  const xs = resizeAxis(canvas.width, width);
  const ys = resizeAxis(canvas.height, height);
  const read = planeRows(pattern, canvas.width);

  let sumSquares = 0;
  resampleRows(read, canvas.width, canvas.height, xs, ys, (_, row) => {
    for (let x = 0; x < width; x++) sumSquares += row[x]! * row[x]!;
  });
  let gain = TARGET_RMS / Math.sqrt(sumSquares / (width * height));

  const out = new Uint8Array(image.data);
  for (let attempt = 1; ; attempt++) {
    const squaredError = addPattern(image, out, gain, (onRow) => resampleRows(read, canvas.width, canvas.height, xs, ys, onRow));
    const psnr = psnrOf(squaredError, width * height * colourChannels(image.channels));
    if (psnr >= MIN_PSNR_DB) return { data: out, psnr };
    // A refusal, like a size the mark does not fit: a property of this image
    // the caller reports to the user, not a fault. The message starts as the
    // others do ("The image is ..."), which src/adapters/fingerprint-worker.ts
    // turns into "it is ..." after "This image cannot be fingerprinted: ".
    if (attempt === MAX_ATTEMPTS) {
      throw new FingerprintRefusedError('quality', `The image is too hard to mark within the ${MIN_PSNR_DB} dB quality bound (the last of ${MAX_ATTEMPTS} attempts reached ${psnr.toFixed(2)} dB)`);
    }
    // PSNR moves with 20 log10(gain): step down by the shortfall plus a margin.
    gain *= 10 ** ((psnr - MIN_PSNR_DB - 0.1) / 20);
  }
}

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
 * Writes image + gain x pattern into `out` (colour channels only) and returns
 * the sum of squared changes.
 */
function addPattern(image: Raster, out: Uint8Array, gain: number, rows: (onRow: (y: number, row: Float32Array) => void) => void): number {
  const { data, width, channels } = image;
  const colours = colourChannels(channels);
  let squaredError = 0;
  rows((y, row) => {
    for (let x = 0, p = y * width * channels; x < width; x++, p += channels) {
      const change = gain * row[x]! + dither(x, y);
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
