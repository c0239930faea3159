/**
 * Visibility measures for the fingerprint: what the benchmark reports and
 * the tests assert about the marked pixels, computed here from the two
 * sets of pixels, never taken from the embedder.
 *
 * - Flat-area changes: the image is cut into 8 x 8 blocks (from the top
 *   left); a block is flat when the standard deviation of its luma (Rec.
 *   601 weights) in the original is under 1.0 level. Counted: the pixels of
 *   flat blocks any of whose values changed by more than 1 level, and the
 *   largest change seen there.
 * - SSIM on luma (Wang, Bovik, Sheikh and Simoncelli, "Image quality
 *   assessment: from error visibility to structural similarity", IEEE TIP
 *   13(4), 2004): the paper's 11 x 11 Gaussian window of sigma 1.5,
 *   K1 = 0.01, K2 = 0.03, L = 255, no downsampling, averaged over every
 *   position where the window fits (the "valid" part).
 */

/** The block side and the flatness threshold of the rule. */
export const FLAT_BLOCK = 8;
export const FLAT_BLOCK_STD = 1.0;

export interface Pixels {
  readonly data: Uint8Array;
  readonly width: number;
  readonly height: number;
  readonly channels: number;
}

/** Rec. 601 luma as float, one value per pixel. */
export function lumaOf(image: Pixels): Float64Array {
  const { data, width, height, channels } = image;
  const out = new Float64Array(width * height);
  for (let i = 0, p = 0; i < out.length; i++, p += channels) {
    out[i] = channels <= 2 ? data[p]! : 0.299 * data[p]! + 0.587 * data[p + 1]! + 0.114 * data[p + 2]!;
  }
  return out;
}

export interface FlatChanges {
  /** Pixels in flat blocks. */
  readonly flatPixels: number;
  /** Share of the image's pixels in flat blocks. */
  readonly flatShare: number;
  /** Pixels of flat blocks with a colour value changed by more than 1 level. */
  readonly changedOver1: number;
  /** changedOver1 / flatPixels (0 when there is no flat block). */
  readonly fraction: number;
  /** Largest change of any colour value in a flat block. */
  readonly maxChange: number;
}

/** The flat-area rule measured: `original` and `marked` must have the same layout. */
export function flatChanges(original: Pixels, marked: Pixels): FlatChanges {
  const { width, height, channels } = original;
  if (marked.width !== width || marked.height !== height || marked.channels !== channels) throw new Error('flatChanges: the two images differ in layout');
  const luma = lumaOf(original);
  const colours = channels >= 3 ? 3 : 1;
  let flatPixels = 0;
  let changedOver1 = 0;
  let maxChange = 0;
  for (let by = 0; by < height; by += FLAT_BLOCK) {
    for (let bx = 0; bx < width; bx += FLAT_BLOCK) {
      const h = Math.min(FLAT_BLOCK, height - by);
      const w = Math.min(FLAT_BLOCK, width - bx);
      let s = 0;
      let ss = 0;
      for (let y = by; y < by + h; y++) {
        for (let x = bx; x < bx + w; x++) {
          const v = luma[y * width + x]!;
          s += v;
          ss += v * v;
        }
      }
      const n = w * h;
      const mean = s / n;
      if (Math.sqrt(Math.max(0, ss / n - mean * mean)) >= FLAT_BLOCK_STD) continue;
      flatPixels += n;
      for (let y = by; y < by + h; y++) {
        for (let x = bx; x < bx + w; x++) {
          const p = (y * width + x) * channels;
          let most = 0;
          for (let c = 0; c < colours; c++) most = Math.max(most, Math.abs(marked.data[p + c]! - original.data[p + c]!));
          if (most > 1) changedOver1++;
          if (most > maxChange) maxChange = most;
        }
      }
    }
  }
  return { flatPixels, flatShare: flatPixels / (width * height), changedOver1, fraction: flatPixels ? changedOver1 / flatPixels : 0, maxChange };
}

const WINDOW_RADIUS = 5;
const WINDOW_SIGMA = 1.5;
const C1 = (0.01 * 255) ** 2;
const C2 = (0.03 * 255) ** 2;

function gaussianWindow(): Float64Array {
  const w = new Float64Array(2 * WINDOW_RADIUS + 1);
  let sum = 0;
  for (let i = -WINDOW_RADIUS; i <= WINDOW_RADIUS; i++) sum += w[i + WINDOW_RADIUS] = Math.exp(-(i * i) / (2 * WINDOW_SIGMA * WINDOW_SIGMA));
  for (let i = 0; i < w.length; i++) w[i]! /= sum;
  return w;
}

/** Separable "valid" filtering: out is (width - 2r) x (height - 2r). */
function filterValid(plane: Float64Array, width: number, height: number, w: Float64Array): Float64Array {
  const r = WINDOW_RADIUS;
  const ow = width - 2 * r;
  const oh = height - 2 * r;
  const horizontal = new Float64Array(ow * height);
  for (let y = 0; y < height; y++) {
    const base = y * width;
    for (let x = 0; x < ow; x++) {
      let sum = 0;
      for (let k = 0; k < w.length; k++) sum += w[k]! * plane[base + x + k]!;
      horizontal[y * ow + x] = sum;
    }
  }
  const out = new Float64Array(ow * oh);
  for (let y = 0; y < oh; y++) {
    for (let k = 0; k < w.length; k++) {
      const wk = w[k]!;
      const base = (y + k) * ow;
      for (let x = 0; x < ow; x++) out[y * ow + x]! += wk * horizontal[base + x]!;
    }
  }
  return out;
}

/** Mean SSIM of the two images' luma. */
export function ssimLuma(a: Pixels, b: Pixels): number {
  if (a.width !== b.width || a.height !== b.height) throw new Error('ssimLuma: the two images differ in size');
  const { width, height } = a;
  const x = lumaOf(a);
  const y = lumaOf(b);
  const xx = new Float64Array(x.length);
  const yy = new Float64Array(x.length);
  const xy = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) {
    xx[i] = x[i]! * x[i]!;
    yy[i] = y[i]! * y[i]!;
    xy[i] = x[i]! * y[i]!;
  }
  const w = gaussianWindow();
  const mx = filterValid(x, width, height, w);
  const my = filterValid(y, width, height, w);
  const sxx = filterValid(xx, width, height, w);
  const syy = filterValid(yy, width, height, w);
  const sxy = filterValid(xy, width, height, w);
  let total = 0;
  for (let i = 0; i < mx.length; i++) {
    const ux = mx[i]!;
    const uy = my[i]!;
    const vx = sxx[i]! - ux * ux;
    const vy = syy[i]! - uy * uy;
    const cxy = sxy[i]! - ux * uy;
    total += ((2 * ux * uy + C1) * (2 * cxy + C2)) / ((ux * ux + uy * uy + C1) * (vx + vy + C2));
  }
  return total / mx.length;
}

/**
 * Pictures the mark must not show on, drawn in code (RGB): the flat and
 * smooth backgrounds of product shots and graphics. Deterministic.
 */
export function flatPictures(width = 1200, height = 900): Array<{ name: string; image: Pixels }> {
  const make = (name: string, value: (x: number, y: number) => readonly [number, number, number]) => {
    const data = new Uint8Array(width * height * 3);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const [r, g, b] = value(x, y);
        const p = (y * width + x) * 3;
        data[p] = r;
        data[p + 1] = g;
        data[p + 2] = b;
      }
    }
    return { name, image: { data, width, height, channels: 3 } };
  };
  return [
    make('white', () => [255, 255, 255]),
    make('grey 128', () => [128, 128, 128]),
    make('near-white 250', () => [250, 250, 250]),
    make('gradient, 40 to 215 across', (x) => {
      const v = Math.round(40 + (175 * x) / (width - 1));
      return [v, v, v];
    }),
    make('product on white (textured object on a third of the picture)', productOnWhite(width, height)),
    make('product on white with a soft shadow', productOnWhite(width, height, true)),
  ];
}

/** A textured object (an ellipse of fine, multi-scale texture) in the middle of a white background, optionally over a soft grey shadow. */
function productOnWhite(width: number, height: number, shadow = false): (x: number, y: number) => readonly [number, number, number] {
  const cx = width / 2;
  const cy = height / 2;
  const rx = width * 0.33;
  const ry = height * 0.33;
  // A fixed integer hash for the texture's fine grain.
  const grain = (x: number, y: number) => {
    let h = (Math.imul(x, 0x27d4eb2d) ^ Math.imul(y, 0x165667b1)) >>> 0;
    h ^= h >>> 15;
    h = Math.imul(h, 0x85ebca6b);
    h ^= h >>> 13;
    return ((h >>> 0) % 1000) / 1000 - 0.5;
  };
  return (x, y) => {
    const d = ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2;
    if (d <= 1) {
      const v = 110 + 35 * Math.sin(x / 9) * Math.cos(y / 13) + 20 * Math.sin((x + y) / 4.5) + 30 * grain(x, y);
      const c = Math.max(0, Math.min(255, Math.round(v)));
      return [Math.min(255, c + 40), c, Math.max(0, c - 30)];
    }
    if (shadow) {
      // A wide, smooth shadow below the object: a gradient, with no texture.
      const s = ((x - cx) / (rx * 1.3)) ** 2 + ((y - cy - ry * 0.35) / (ry * 1.15)) ** 2;
      if (s < 1) {
        const v = Math.round(255 - 40 * (1 - s) ** 2);
        return [v, v, v];
      }
    }
    return [255, 255, 255];
  };
}
