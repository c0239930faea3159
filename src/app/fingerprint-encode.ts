/**
 * Writing a marked picture in the format of its original, and checking the
 * file made before it is delivered: the product (fingerprint.ts) and the
 * benchmark (bench/fingerprint-delivery.ts) both write through here.
 *
 * The file is written with the original's settings (encodingLike). A lossy
 * re-encoding can lose more than the mark was allowed to cost, or lose the
 * mark, and libwebp does both more than libjpeg: a decoded JPEG written
 * again at its own quality lands back near its own quantisation (60 dB or
 * so), a decoded WebP does not (40-50 dB at quality 90: its prediction, loop
 * filter and chroma subsampling start again from the decoded pixels). So:
 *
 * - **The mark must be found** in the file as verify decodes it. When it
 *   is not, a lossy file is written again at a higher quality, STEP at a
 *   time, up to MAX_RAISE above the original's (and 100); found at none of
 *   them, the caller refuses the file (nothing is delivered re-encoded for
 *   nothing).
 * - **A lossy WebP from an original of quality HIGH_QUALITY or more keeps
 *   FLOOR_DB** of PSNR (R, G and B) against the original's pixels: under it,
 *   it is written again at a higher quality, STEP at a time, up to
 *   MAX_RAISE above the original's. Its size grows; the encoding says so
 *   (`raisedFrom`), and so do the CLI and the dashboard. When no quality in
 *   reach gives FLOOR_DB (pictures whose colour 4:2:0 cannot hold, such as
 *   noise), the file is the one at the lowest quality that kept the mark:
 *   made larger, it would still miss the floor. JPEG needs no such check:
 *   its re-encoding alone costs little, so the mark's own bound (42 dB)
 *   sets the file's.
 */
import { psnr } from '../core/fingerprint/psnr.js';
import { colourChannels, type Raster } from '../core/fingerprint/raster.js';
import { encodingLike, type FingerprintEncoding } from '../core/formats/encoding-like.js';
import type { FingerprintCheck } from './verify-image.js';

/** The PSNR (dB, R, G and B) a lossy WebP marked from an original of quality HIGH_QUALITY or more keeps against the original's pixels. */
export const FLOOR_DB = 40;
/** The original's estimated quality from which FLOOR_DB holds. */
export const HIGH_QUALITY = 90;
/** Quality steps of a re-encoding written again. */
const STEP = 2;
/** A lossy file is written again at most this much above the original's quality. */
const MAX_RAISE = 8;

/** The pixel work writing needs, in a decoder slot already held (src/adapters/pixels.ts). */
export interface EncodingPort {
  decode(bytes: Uint8Array, options?: { stored?: boolean }): Promise<Raster>;
  encodeLike(original: Uint8Array, pixels: Raster, quality?: number): Promise<Uint8Array>;
}

/** The file written (with how, and what verify finds in it), or the last file written when the mark was lost at every quality tried. */
export interface EncodedMark {
  readonly bytes: Uint8Array;
  readonly encoding: FingerprintEncoding;
  /** What verify finds in `bytes`. */
  readonly check: FingerprintCheck;
  /** The mark was not found at any quality tried: the caller refuses the file. */
  readonly lost: boolean;
}

/**
 * Writes `marked` in the format of `original` as described above. `find`
 * runs verify's check on a file written (decode and detection), `signal`
 * stops between steps.
 */
export async function encodeMarked(held: EncodingPort, original: Uint8Array, marked: Raster, find: (bytes: Uint8Array) => Promise<FingerprintCheck>, signal?: AbortSignal): Promise<EncodedMark> {
  const like = encodingLike(original);
  const floor = like.format === 'webp' && !like.lossless && like.quality >= HIGH_QUALITY;
  const originalQuality = like.lossless ? undefined : like.quality;
  let quality = originalQuality;
  /** The original's pixels as stored, decoded only when the floor applies. */
  let reference: Raster | undefined;
  /** The file at the lowest quality that kept the mark, when it missed the floor. */
  let kept: EncodedMark | undefined;
  for (;;) {
    signal?.throwIfAborted();
    const bytes = await held.encodeLike(original, marked, quality);
    signal?.throwIfAborted();
    const check = await find(bytes);
    const encoding = encodingLike(original, quality);
    if (quality === undefined || originalQuality === undefined) return { bytes, encoding, check, lost: !check.present };
    let short = false;
    if (check.present && floor) {
      signal?.throwIfAborted();
      reference ??= await held.decode(original, { stored: true });
      short = colourPsnr(reference, await held.decode(bytes, { stored: true })) < FLOOR_DB;
    }
    if (check.present && !short) return { bytes, encoding, check, lost: false };
    if (check.present) kept ??= { bytes, encoding, check, lost: false };
    const ceiling = Math.min(100, originalQuality + MAX_RAISE);
    if (quality >= ceiling) return kept ?? { bytes, encoding, check, lost: true };
    quality = Math.min(ceiling, quality + STEP);
  }
}

/** PSNR of the colour channels (8-bit, peak 255) of two rasters of the same layout, in dB. */
export function colourPsnr(a: Raster, b: Raster): number {
  if (a.width !== b.width || a.height !== b.height || a.channels !== b.channels) throw new Error('internal: colourPsnr of rasters of different layouts');
  return psnr(a.data, b.data, a.channels, colourChannels(a.channels));
}
