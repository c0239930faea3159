/** PSNR of 8-bit pictures (peak 255): the fingerprint's re-encoding check (src/app/fingerprint-encode.ts), its tests and its benchmark. */

/**
 * Mean squared error over the colour samples of two interleaved rasters of
 * the same size: with `colours` < `channels`, the last channels (alpha) are
 * left out. Default: every sample.
 */
export function meanSquaredError(a: Uint8Array, b: Uint8Array, channels = 1, colours = channels): number {
  if (a.length !== b.length) throw new RangeError(`buffers differ in length: ${a.length} and ${b.length}`);
  let sum = 0;
  let n = 0;
  for (let i = 0; i < a.length; i++) {
    if (i % channels >= colours) continue;
    const d = a[i]! - b[i]!;
    sum += d * d;
    n++;
  }
  return sum / n;
}

export const psnrOfMse = (mse: number): number => (mse === 0 ? Number.POSITIVE_INFINITY : 10 * Math.log10((255 * 255) / mse));

export const psnr = (a: Uint8Array, b: Uint8Array, channels = 1, colours = channels): number => psnrOfMse(meanSquaredError(a, b, channels, colours));
