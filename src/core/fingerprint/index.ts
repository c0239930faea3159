/** The in-pixel fingerprint: pure computation on raw pixel buffers. */
export { deriveFingerprintKey, type FingerprintKey } from './keys.js';
export { embedFingerprint, shapeRefusal, type EmbedResult } from './embed.js';
export { detectFingerprint, type DetectOptions, type FingerprintDetection } from './detect.js';
export { FingerprintRefusedError, type FingerprintRefusal } from './errors.js';
export { greyOf, type Raster } from './raster.js';
export { markStoredPixels } from './mark-stored.js';
export { isOrientation, toDisplayed, toStored, type Orientation } from './orientation.js';
export { CANVAS_SIDE, MIN_DETECT_SIDE, MIN_EMBED_SIDE, MIN_PSNR_DB } from './scheme.js';
