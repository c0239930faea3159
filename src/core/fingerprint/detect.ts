/**
 * Detection: is this key's pattern in the image?
 *
 * 1. Luma of the input (the caller passes a reduced copy, e.g. decoded with
 *    sharp's shrink-on-load) mapped onto the analysis canvas.
 * 2. Whitening: local mean removed, divided by the local RMS (+1 level).
 * 3. Synchronisation (sync.ts) with the key's synchronisation blocks: scale
 *    and offset.
 * 4. One fold at that scale and offset, whitened spectrally
 *    (spectral-whitening.ts); each verification block votes with the sign
 *    of its correlation with the key's block pattern.
 *
 * Verdict. For an image that does not carry the mark, the verification
 * blocks' signs are fair coins independent of each other and of everything
 * the synchronisation looked at (keys.ts), so the number of matching blocks
 * is exactly Binomial(blocks, 1/2), however hard the search tried. `present`
 * is decided by the exact binomial tail at the false-positive rate divided
 * by the number of key versions tried (a union bound over versions).
 * `confidence` is the share of matching blocks: about 0.5 when unmarked.
 * Blocks whose folded content is (near) zero, as in flat areas, cast no
 * vote; which blocks vote depends on the image only, never on a sign (the
 * test reads the fold before whitening, which would raise rounding noise
 * in a flat fold to the level of real content).
 */
import { criticalMatches } from './binomial.js';
import { canvasSize } from './canvas.js';
import type { Plane } from './fold.js';
import type { FingerprintKey } from './keys.js';
import { whiten } from './local-stats.js';
import { checkRaster, lumaRows, type Raster } from './raster.js';
import { resamplePlane, resizeAxis } from './resample.js';
import { BLOCK, BLOCKS_PER_ROW, DEFAULT_FALSE_POSITIVE_RATE, LOCAL_RADIUS, MAX_ASPECT, MIN_DETECT_SIDE, TILE } from './scheme.js';
import { synchronise, type Sync } from './sync.js';

export interface FingerprintDetection {
  /** The pattern of one of the keys is there, at the false-positive rate asked for. */
  readonly present: boolean;
  /** Share of the voting verification blocks that match the key (0 when none voted). */
  readonly confidence: number;
  /** Number of verification blocks that voted. */
  readonly blocks: number;
  /**
   * The key version the result is for: the one found, else the first one
   * tried, also when no block voted (a flat picture); undefined only when no
   * key was tried (an empty key list, or a picture under MIN_DETECT_SIDE).
   */
  readonly keyVersion: string | undefined;
  /**
   * Where that key's synchronisation settled, for diagnostics: sampling step
   * (1 = no crop) and score. Set whenever keyVersion is (also when no block
   * voted), undefined when it is.
   */
  readonly sync: { readonly step: number; readonly score: number } | undefined;
}

export interface DetectOptions {
  /** Largest probability of calling an unmarked image marked, all keys together. Default 1e-6. */
  readonly falsePositiveRate?: number;
}

/**
 * Folded energy under which a block casts no vote (whitened units; textured
 * blocks are in the hundreds). This, not the whitening, is what silences a
 * flat picture: its canvas is not exactly flat (the resize weights are
 * float32 and do not sum to exactly 1), and the largest block energy
 * measured on flat pictures is about 5e-7, some 200 times under the floor.
 */
const ENERGY_FLOOR = 1e-4;
/** Added to the local RMS when whitening, in levels: keeps near-flat areas from being blown up to unit noise. */
const WHITEN_FLOOR = 1;

const NOTHING: FingerprintDetection = { present: false, confidence: 0, blocks: 0, keyVersion: undefined, sync: undefined };

/**
 * @param image the picture (grey, grey+alpha, RGB or RGBA; alpha ignored), any size: a
 *   copy whose shorter side is 256 to 512 pixels is enough and cheapest to decode
 * @param keys the active key versions, newest first
 */
export function detectFingerprint(image: Raster, keys: readonly FingerprintKey[], options: DetectOptions = {}): FingerprintDetection {
  checkRaster(image);
  const alpha = options.falsePositiveRate ?? DEFAULT_FALSE_POSITIVE_RATE;
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`falsePositiveRate must be in (0, 1), got ${alpha}`);
  if (keys.length === 0 || Math.min(image.width, image.height) < MIN_DETECT_SIDE) return NOTHING;

  return detectOnCanvas(analysisCanvas(image), keys, alpha);
}

/**
 * The verdict on a canvas made by analysisCanvas: what detectFingerprint
 * does after building it. The benchmark's null trials build the canvas of
 * an image once and try many keys on it.
 */
export function detectOnCanvas(canvas: Plane, keys: readonly FingerprintKey[], falsePositiveRate = DEFAULT_FALSE_POSITIVE_RATE): FingerprintDetection {
  let first: FingerprintDetection | undefined;
  for (const key of keys) {
    const result = verdict(canvas, key, falsePositiveRate / keys.length);
    if (result.present) return result;
    first ??= result;
  }
  return first ?? NOTHING;
}

/** The whitened luma on the analysis canvas; an over-long picture is cut to its central MAX_ASPECT:1 part. */
export function analysisCanvas(image: Raster): Plane {
  const { width, height } = image;
  const shorter = Math.min(width, height);
  const keepWidth = Math.min(width, MAX_ASPECT * shorter);
  const keepHeight = Math.min(height, MAX_ASPECT * shorter);
  const left = (width - keepWidth) >> 1;
  const top = (height - keepHeight) >> 1;
  const rows = lumaRows(image);
  const whole = new Float32Array(width);
  const read = (y: number, out: Float32Array) => {
    rows(y + top, whole);
    out.set(whole.subarray(left, left + keepWidth));
  };
  const size = canvasSize(keepWidth, keepHeight);
  const luma = resamplePlane(read, keepWidth, keepHeight, resizeAxis(keepWidth, size.width), resizeAxis(keepHeight, size.height));
  return { data: whiten(luma, size.width, size.height, LOCAL_RADIUS, WHITEN_FLOOR), width: size.width, height: size.height };
}

function verdict(canvas: Plane, key: FingerprintKey, alpha: number): FingerprintDetection {
  const sync = synchronise(canvas, key);
  const { matches, blocks } = vote(key, sync);
  const present = blocks > 0 && matches >= criticalMatches(blocks, alpha);
  return { present, confidence: blocks > 0 ? matches / blocks : 0, blocks, keyVersion: key.version, sync: { step: sync.step, score: sync.score } };
}

/**
 * The verification blocks' votes at the synchronised scale and offset.
 * Exported for the tests, which check that flipping a block's sign flips its
 * vote and nothing else (test/core/fingerprint/detect.test.ts).
 */
export function vote(key: FingerprintKey, sync: Sync): { matches: number; blocks: number } {
  const folded = sync.fold;
  const whitened = sync.whitened;
  const mask = TILE - 1;
  let matches = 0;
  let blocks = 0;
  for (const b of key.verificationBlocks) {
    const x0 = (b % BLOCKS_PER_ROW) * BLOCK;
    const y0 = Math.floor(b / BLOCKS_PER_ROW) * BLOCK;
    let correlation = 0;
    let energy = 0;
    for (let y = y0; y < y0 + BLOCK; y++) {
      const foldRow = ((y - sync.y) & mask) * TILE;
      for (let x = x0; x < x0 + BLOCK; x++) {
        const at = foldRow + ((x - sync.x) & mask);
        correlation += whitened[at]! * key.tile[y * TILE + x]!;
        energy += folded[at]! * folded[at]!;
      }
    }
    if (!(energy > ENERGY_FLOOR) || !Number.isFinite(correlation) || correlation === 0) continue;
    blocks++;
    if (correlation > 0) matches++;
  }
  return { matches, blocks };
}
