/**
 * The whole marking step on decoded pixels, as stored in the file: turned
 * upright for the mark (a copy a platform turns and strips of its EXIF then
 * carries the mark upright), turned back so the file's EXIF orientation stays
 * valid, and, for a grey picture that the decoder handed over as RGB(A),
 * brought back to grey (with its alpha).
 */
import { embedFingerprint } from './embed.js';
import type { FingerprintKey } from './keys.js';
import { toDisplayed, toStored, type Orientation } from './orientation.js';
import { greyOf, type Raster } from './raster.js';

/**
 * Consumes `stored`: a turned image is turned back into its buffer (it is
 * not read again once the displayed copy exists), which saves one more
 * image-sized buffer. Callers hand over pixels they no longer need.
 *
 * @throws FingerprintRefusedError when the image cannot carry the mark (embedFingerprint)
 */
export function markStoredPixels(stored: Raster, orientation: Orientation, key: FingerprintKey, grey: boolean): Raster {
  const displayed = toDisplayed(stored, orientation);
  const { data } = embedFingerprint(displayed, key);
  const marked = toStored({ ...displayed, data }, orientation, orientation === 1 ? undefined : stored.data);
  return grey ? greyOf(marked) : marked;
}
