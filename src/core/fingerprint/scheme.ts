/**
 * The fixed parameters of the fingerprint scheme. Embedder and detector must
 * agree on every one of them, so they live here and nowhere else; changing
 * any of them makes a new scheme (marks made before would no longer be found).
 *
 * Geometry: the image is mapped onto an analysis canvas whose shorter side is
 * CANVAS_SIDE pixels, whatever the image's size, so a resized copy maps onto
 * the same canvas and the mark does not move. The canvas is covered by one
 * keyed TILE x TILE pattern repeated, made of BLOCK x BLOCK blocks.
 */

/** Shorter side of the analysis canvas, in canvas pixels. */
export const CANVAS_SIDE = 256;
/** The canvas is at most this many times longer than wide; longer images are refused (embed) or cut (detect). */
export const MAX_ASPECT = 4;
/**
 * Side of the repeated pattern; a power of two for the FFT. A crop shifts the
 * pattern by up to a tile without ambiguity: 10 % of a 4:3 canvas is 34 px.
 */
export const TILE = 128;
/** Side of one block: a tile has (TILE / BLOCK)^2 = 256 blocks, half for synchronisation, half for the verdict. */
export const BLOCK = 8;
export const BLOCKS_PER_ROW = TILE / BLOCK;
export const BLOCK_COUNT = BLOCKS_PER_ROW * BLOCKS_PER_ROW;
export const VERIFICATION_BLOCKS = BLOCK_COUNT / 2;

/**
 * The synchronisation half of the tile has two parts (keys.ts):
 * - periodic blocks: PERIODIC_POSITIONS of the 64 block positions of a
 *   quarter tile carry the same pattern in all four quarters, so that part
 *   repeats every PERIOD pixels and the scale search can fold into
 *   PERIOD x PERIOD cells (a 64-point FFT is about 5 times cheaper than a
 *   128-point one, and the search runs dozens of them);
 * - anchor blocks, unique in the tile, which tell which of the four
 *   quarter-tile shifts the periodic part leaves open is the right one.
 */
export const PERIOD = TILE / 2;
export const PERIODIC_POSITIONS = 20;

/**
 * Mid-band DCT basis functions (u + v from 2 to 6, u and v at most 5) that a
 * block's pattern is made of: no DC and no first-order ramps (which natural
 * images are full of and resampling blurs least), nothing so high that JPEG
 * quantisation or a 2x downscale removes it.
 */
export const BAND_MIN = 2;
export const BAND_MAX = 6;
export const BAND_AXIS_MAX = 5;

/**
 * Root-mean-square change of each colour value, in 8-bit levels, before
 * rounding to integers. The embedder rounds with a uniform dither d in
 * [0, 1) (floor(value + change + d), embed.ts): for a change of fractional
 * part f that adds an error of mean 0 and variance f(1 - f), 1/6 averaged
 * over f, twice plain rounding's 1/12. So PSNR = 20 log10(255 /
 * sqrt(1.7^2 + 1/6)) = 43.28 dB, a little more where values clip at 0 or
 * 255; the embedder never goes under MIN_PSNR_DB whatever happens.
 */
export const TARGET_RMS = 1.7;
export const MIN_PSNR_DB = 42;

/**
 * Share of an image's pixels that must be able to carry the mark unseen
 * (visibility.ts: textured, not clipped); an image with less is refused
 * rather than marked visibly on its flat areas.
 */
export const MIN_CARRYING = 0.15;

/** Smallest shorter side that can be marked: below it the canvas would be finer than the image. */
export const MIN_EMBED_SIDE = CANVAS_SIDE;
/** Smallest shorter side the detector looks at; smaller inputs give `blocks: 0`. */
export const MIN_DETECT_SIDE = 64;

/** Half-width of the local windows used for masking and whitening (5 x 5). */
export const LOCAL_RADIUS = 2;

/** Default probability of calling an unmarked image marked, for all active key versions together. */
export const DEFAULT_FALSE_POSITIVE_RATE = 1e-6;
