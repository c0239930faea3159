/**
 * How a re-encoding (the fingerprint's) writes pixels in the format of an
 * original file, from the original's headers alone.
 */
import { jpegEncoding } from './jpeg-encoding.js';
import { sniff } from './sniff.js';
import { webpQuality } from './webp-quality.js';
import type { FingerprintEncoding } from './encoding-words.js';

export type { FingerprintEncoding } from './encoding-words.js';

/**
 * How encodeLike writes pixels in the format of `original`: PNG and
 * lossless WebP losslessly; a JPEG at the quality its quantisation tables
 * say it was written at (jpeg-encoding.ts), progressive if it was, 4:2:0
 * if it was and without subsampling otherwise (libjpeg, through libvips,
 * writes no 4:2:2 or 4:4:0: those are kept finer, never coarser); a lossy
 * WebP at the quality its quantisers say (webp-quality.ts). DEFAULT_QUALITY
 * where the headers say nothing usable. `quality`, for a lossy original: the
 * quality actually written, when it was raised above the original's
 * (src/app/fingerprint-encode.ts); the encoding then says from what.
 */
export function encodingLike(original: Uint8Array, quality?: number): FingerprintEncoding {
  const like = originalEncoding(original);
  if (like.lossless || quality === undefined || quality === like.quality) return like;
  return { ...like, quality, raisedFrom: like.quality };
}

function originalEncoding(original: Uint8Array): FingerprintEncoding {
  const handler = sniff(original);
  if (handler.format === 'png') return { format: 'png', lossless: true };
  if (handler.format === 'jpeg') {
    const found = jpegEncoding(original);
    const quality = found?.quality ?? DEFAULT_QUALITY;
    return { format: 'jpeg', lossless: false, quality, estimated: found?.quality !== undefined, subsampling: found?.subsampling === '4:2:0' ? '4:2:0' : found?.subsampling === undefined ? undefined : '4:4:4', progressive: found?.progressive ?? false };
  }
  if (handler.blocks(original).some((b) => b.type === 'VP8L')) return { format: 'webp', lossless: true };
  const found = webpQuality(original);
  return { format: 'webp', lossless: false, quality: found?.quality ?? DEFAULT_QUALITY, estimated: found !== undefined, progressive: false };
}

/** The quality a lossy re-encoding uses when the original's cannot be read from its headers. */
const DEFAULT_QUALITY = 90;


