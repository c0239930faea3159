/**
 * Where, and how strongly, the mark may change the pixels without being
 * seen: a just-noticeable-difference (JND) map at full resolution, per
 * 8 x 8 block of the picture as displayed.
 *
 * The canvas mask (embed.ts) shapes the pattern at the analysis
 * resolution, where one canvas pixel may stand for a dozen image pixels
 * and a white background next to a textured product averages into
 * "texture". This map is the image's own, block by block:
 *
 * - **Flat blocks carry nothing.** A block whose luma standard deviation
 *   is under FLAT_STD levels (a white or grey background, a clear sky
 *   without grain, a smooth gradient's quantisation steps) gets no mark
 *   at all: an added pattern of one or two levels is what shows there, as
 *   a fine mottled texture, and nothing in the picture hides it.
 * - **Saturated blocks carry nothing.** A block whose mean luma is within
 *   SATURATED levels of 0 or 255 is clipped: the mark could only move one
 *   way, and a one-sided change is a visible shift of a blown highlight or
 *   a crushed shadow.
 * - **Elsewhere the change is bounded by a JND** that combines luminance
 *   adaptation and texture (contrast) masking, after Chou and Li
 *   ("A perceptually tuned subband image coder based on the measure of
 *   just-noticeable-distortion profile", IEEE TCSVT 5(6), 1995):
 *   background-luminance threshold 17 (1 - sqrt(L / 127)) + 3 below mid
 *   grey and 3 / 128 (L - 127) + 3 above it, raised where the block is
 *   textured; and never above TEXTURE_SLOPE times the block's detrended
 *   activity (its standard deviation once its best-fitting plane is
 *   removed), so a smooth gradient, which has spread but no texture to
 *   hide a pattern in, gets almost nothing.
 *
 * The block bounds are interpolated between block centres so the mark's
 * strength has no 8 x 8 steps, then set to 0 inside flat or saturated
 * blocks, whatever their neighbours allow.
 */
import type { Raster } from './raster.js';

/** Side of a visibility block, in image pixels. */
export const VISIBILITY_BLOCK = 8;
/** A block whose luma standard deviation is under this (in 8-bit levels) is flat: it is not marked. */
export const FLAT_STD = 1.0;
/** A block whose mean luma is within this of 0 or 255 is saturated: it is not marked. */
export const SATURATED = 3;
/** The JND's bound from texture: at most this times the block's detrended activity. */
export const TEXTURE_SLOPE = 1.0;
/** Chou and Li's texture term, simplified: the JND rises with the block's activity by this factor. */
export const TEXTURE_JND = 0.5;
/** SSIM's C2 for 8-bit pictures (Wang et al. 2004: K2 = 0.03, L = 255). */
const SSIM_C2 = (0.03 * 255) ** 2;
/** A block can carry the mark when its bound is at least this (in levels). */
export const CARRYING_BOUND = 1;

export interface VisibilityMap {
  /** Blocks across and down. */
  readonly columns: number;
  readonly rows: number;
  /** Largest change allowed in each block, in 8-bit levels (0: not marked). */
  readonly bound: Float32Array;
  /**
   * Per block, 1 / (2 sigma^2 + C2), sigma its luma standard deviation:
   * a change of d levels there lowers the picture's SSIM by about
   * d^2 times this (SSIM's contrast-structure term, C2 = (0.03 x 255)^2).
   */
  readonly ssimWeight: Float32Array;
  /** Share of the image's pixels in blocks that can carry the mark (bound >= CARRYING_BOUND). */
  readonly carrying: number;
}

/** Chou and Li's background-luminance visibility threshold, in levels. */
export function luminanceThreshold(background: number): number {
  return background <= 127 ? 17 * (1 - Math.sqrt(background / 127)) + 3 : (3 / 128) * (background - 127) + 3;
}

/**
 * The JND bound of every 8 x 8 block of the image (partial blocks at the
 * right and bottom edges count with the pixels they have).
 */
export function visibilityMap(image: Raster): VisibilityMap {
  const { data, width, height, channels } = image;
  const B = VISIBILITY_BLOCK;
  const columns = Math.ceil(width / B);
  const rows = Math.ceil(height / B);
  const n = columns * rows;
  // Per block: sum, sum of squares, sums weighted by x and y (for the plane fit), pixel count.
  const s = new Float64Array(n);
  const ss = new Float64Array(n);
  const sx = new Float64Array(n);
  const sy = new Float64Array(n);
  const grey = channels <= 2;
  for (let y = 0; y < height; y++) {
    const by = (y / B) | 0;
    const dy = (y % B) - (B - 1) / 2;
    const rowBase = by * columns;
    for (let x = 0, p = y * width * channels; x < width; x++, p += channels) {
      const v = grey ? data[p]! : 0.299 * data[p]! + 0.587 * data[p + 1]! + 0.114 * data[p + 2]!;
      const b = rowBase + ((x / B) | 0);
      s[b]! += v;
      ss[b]! += v * v;
      sx[b]! += ((x % B) - (B - 1) / 2) * v;
      sy[b]! += dy * v;
    }
  }
  const bound = new Float32Array(n);
  const ssimWeight = new Float32Array(n);
  let carryingPixels = 0;
  for (let by = 0; by < rows; by++) {
    const h = Math.min(B, height - by * B);
    for (let bx = 0; bx < columns; bx++) {
      const w = Math.min(B, width - bx * B);
      const b = by * columns + bx;
      const count = w * h;
      const mean = s[b]! / count;
      const variance = Math.max(0, ss[b]! / count - mean * mean);
      ssimWeight[b] = 1 / (2 * variance + SSIM_C2);
      if (Math.sqrt(variance) < FLAT_STD || mean < SATURATED || mean > 255 - SATURATED) continue;
      // The plane fit on this block's own pixels (centred coordinates of a full block;
      // a partial block's are off centre, which only makes its fit a little conservative).
      const cx = centredMoments(w, B);
      const cy = centredMoments(h, B);
      // Sum over the block of (x - c)^2 and of x - c, per axis.
      const xx = cx.squares * h;
      const yy = cy.squares * w;
      const xMean = cx.sum / w;
      const yMean = cy.sum / h;
      const gx = xx - count * xMean * xMean > 0 ? (sx[b]! - cx.sum * h * mean) / (xx - count * xMean * xMean) : 0;
      const gy = yy - count * yMean * yMean > 0 ? (sy[b]! - cy.sum * w * mean) / (yy - count * yMean * yMean) : 0;
      const explained = (gx * gx * (xx - count * xMean * xMean) + gy * gy * (yy - count * yMean * yMean)) / count;
      const activity = Math.sqrt(Math.max(0, variance - explained));
      const jnd = Math.max(luminanceThreshold(mean), TEXTURE_JND * activity);
      const limit = Math.min(jnd, TEXTURE_SLOPE * activity);
      bound[b] = limit;
      if (limit >= CARRYING_BOUND) carryingPixels += count;
    }
  }
  return { columns, rows, bound, ssimWeight, carrying: carryingPixels / (width * height) };
}

/** Sum of (i - c) and of (i - c)^2 over i < length, c the centre of a full block. */
function centredMoments(length: number, block: number): { sum: number; squares: number } {
  const c = (block - 1) / 2;
  let sum = 0;
  let squares = 0;
  for (let i = 0; i < length; i++) {
    sum += i - c;
    squares += (i - c) * (i - c);
  }
  return { sum, squares };
}

/**
 * The bound at every pixel of row `y`, into `out` (length width):
 * interpolated linearly between block centres (no 8 x 8 steps), and 0 in
 * a block whose own bound is 0 (flat or saturated), whatever its
 * neighbours allow.
 */
export function boundRow(map: VisibilityMap, width: number, y: number, out: Float32Array, column: Float32Array): void {
  const B = VISIBILITY_BLOCK;
  const { columns, rows, bound } = map;
  // Vertical interpolation between the block rows around y, per block column.
  const fy = (y + 0.5) / B - 0.5;
  const r0 = Math.max(0, Math.min(rows - 1, Math.floor(fy)));
  const r1 = Math.min(rows - 1, r0 + 1);
  const ty = Math.max(0, Math.min(1, fy - r0));
  const own = Math.min(rows - 1, (y / B) | 0);
  for (let c = 0; c < columns; c++) column[c] = bound[r0 * columns + c]! * (1 - ty) + bound[r1 * columns + c]! * ty;
  for (let x = 0; x < width; x++) {
    const block = own * columns + ((x / B) | 0);
    if (bound[block] === 0) {
      out[x] = 0;
      continue;
    }
    const fx = (x + 0.5) / B - 0.5;
    const c0 = Math.max(0, Math.min(columns - 1, Math.floor(fx)));
    const c1 = Math.min(columns - 1, c0 + 1);
    const tx = Math.max(0, Math.min(1, fx - c0));
    out[x] = column[c0]! * (1 - tx) + column[c1]! * tx;
  }
}

/** Each pixel of row `y`'s block SSIM weight (VisibilityMap.ssimWeight), into `out`. */
export function ssimWeightRow(map: VisibilityMap, width: number, y: number, out: Float32Array): void {
  const B = VISIBILITY_BLOCK;
  const base = Math.min(map.rows - 1, (y / B) | 0) * map.columns;
  for (let x = 0; x < width; x++) out[x] = map.ssimWeight[base + ((x / B) | 0)]!;
}

const WINDOW = (() => {
  // SSIM's window (Wang et al. 2004): an 11 x 11 Gaussian of sigma 1.5, normalised.
  const w = Array.from({ length: 11 }, (_, i) => Math.exp(-((i - 5) ** 2) / (2 * 1.5 * 1.5)));
  const sum = w.reduce((a, b) => a + b, 0);
  const out = new Float64Array(121);
  for (let j = 0; j < 11; j++) for (let i = 0; i < 11; i++) out[j * 11 + i] = (w[j]! * w[i]!) / (sum * sum);
  return out;
})();
const SSIM_C1 = (0.01 * 255) ** 2;

/**
 * SSIM of the luma of `marked` against `original` (same layout), as Wang
 * et al. define it (11 x 11 Gaussian window, sigma 1.5, K1 0.01, K2 0.03),
 * averaged over windows centred every `stride` pixels across and down
 * rather than at every pixel: an estimate of the picture's mean SSIM at
 * 1 / stride^2 of the cost (at stride 8, about a tenth of a second for
 * 12 megapixels), for the embedder to check what it made.
 */
export function sampledSsim(original: Raster, marked: Uint8Array, stride: number): number {
  const { data, width, height, channels } = original;
  if (width < 11 || height < 11) return 1;
  const grey = channels <= 2;
  const lumaAt = (bytes: Uint8Array, p: number) => (grey ? bytes[p]! : 0.299 * bytes[p]! + 0.587 * bytes[p + 1]! + 0.114 * bytes[p + 2]!);
  let total = 0;
  let windows = 0;
  // Window positions offset by half a stride, so the edges are not favoured.
  const start = 5 + (stride >> 1);
  for (let cy = Math.min(start, height - 6); cy <= height - 6; cy += stride) {
    for (let cx = Math.min(start, width - 6); cx <= width - 6; cx += stride) {
      let mx = 0;
      let my = 0;
      let xx = 0;
      let yy = 0;
      let xy = 0;
      for (let j = 0; j < 11; j++) {
        const row = (cy - 5 + j) * width;
        for (let i = 0; i < 11; i++) {
          const p = (row + cx - 5 + i) * channels;
          const w = WINDOW[j * 11 + i]!;
          const a = lumaAt(data, p);
          const b = lumaAt(marked, p);
          mx += w * a;
          my += w * b;
          xx += w * a * a;
          yy += w * b * b;
          xy += w * a * b;
        }
      }
      const vx = xx - mx * mx;
      const vy = yy - my * my;
      const cxy = xy - mx * my;
      total += ((2 * mx * my + SSIM_C1) * (2 * cxy + SSIM_C2)) / ((mx * mx + my * my + SSIM_C1) * (vx + vy + SSIM_C2));
      windows++;
    }
  }
  return windows ? total / windows : 1;
}
