/**
 * The one pixel-size policy of protect and verify, on every path (API,
 * dashboard, CLI, library): an image whose header declares more than
 * `maxImagePixels` is refused before any other work. Nothing here decodes:
 * the size is what the header says (core/formats/dimensions.ts), so a 50 KB
 * file that declares 20000x20000 costs a few header bytes to refuse.
 *
 * This bound is not the pixel decoder's (OPTMARK_MAX_PIXELS, 100 MP): images
 * between the two are still marked and verified from their metadata, and
 * only the fingerprint, which decodes, passes them over.
 */
import { declaredDimensions } from '../core/formats/dimensions.js';
import { sniff } from '../core/formats/sniff.js';
import { ImageDimensionsTooLargeError } from '../errors.js';

/**
 * 16383 x 16383, sharp's own default for limitInputPixels: above every real
 * camera's image (a 150-megapixel medium-format frame included), below what
 * only a crafted header declares.
 */
export const DEFAULT_MAX_IMAGE_PIXELS = 0x3fff * 0x3fff;

/**
 * Throws ImageDimensionsTooLargeError when the header declares more than
 * `maxImagePixels`. Bytes that are no JPEG, PNG or WebP get sniff's error,
 * the one protect and verify would give them anyway; a header too broken to
 * give a size passes, and the container parser that runs next says what is
 * wrong with it.
 */
export function refuseOversizedImage(bytes: Uint8Array, maxImagePixels: number = DEFAULT_MAX_IMAGE_PIXELS): void {
  const size = declaredDimensions(bytes, sniff(bytes).format);
  // The product of two 31-bit PNG sides can pass 2^53; as a double it is
  // then rounded, but still far above any limit a number holds exactly.
  if (size && size.width * size.height > maxImagePixels) throw new ImageDimensionsTooLargeError(size.width, size.height, maxImagePixels);
}
