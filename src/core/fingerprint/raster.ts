/**
 * Raw 8-bit pixel buffers as decoders give them: row-major, interleaved
 * channels. 1 = grey, 2 = grey + alpha, 3 = RGB, 4 = RGBA.
 */
import type { RowReader } from './resample.js';

export interface Raster {
  readonly data: Uint8Array;
  readonly width: number;
  readonly height: number;
  readonly channels: number;
}

export function checkRaster(image: Raster): void {
  const { data, width, height, channels } = image;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) throw new RangeError(`Invalid raster size ${width}x${height}`);
  if (channels !== 1 && channels !== 2 && channels !== 3 && channels !== 4) throw new RangeError(`Unsupported channel count ${channels}`);
  if (data.length !== width * height * channels) throw new RangeError(`Raster of ${width}x${height}x${channels} needs ${width * height * channels} bytes, got ${data.length}`);
}

/**
 * One grey channel (and the alpha) of a raster whose R, G and B are equal,
 * as a grey picture decoded as RGB is, marked or not: the embedder changes
 * the three by the same amount. Rasters of one or two channels come back as
 * they are.
 */
export function greyOf(image: Raster): Raster {
  checkRaster(image);
  const { data, width, height, channels } = image;
  if (channels <= 2) return image;
  const alpha = channels === 4;
  const out = new Uint8Array(width * height * (alpha ? 2 : 1));
  for (let p = 0, q = 0; p < data.length; p += channels) {
    out[q++] = data[p]!;
    if (alpha) out[q++] = data[p + 3]!;
  }
  return { data: out, width, height, channels: alpha ? 2 : 1 };
}

/** Channels that carry colour (alpha excluded). */
export const colourChannels = (channels: number): number => (channels >= 3 ? 3 : 1);

/**
 * Rows of luma, Rec. 601 weights on the 8-bit (gamma-encoded) values, as
 * JPEG's Y is: the mark is added equally to R, G and B, so it appears whole
 * in this luma and not at all in the chroma.
 */
export function lumaRows(image: Raster): RowReader {
  const { data, width, channels } = image;
  if (channels <= 2) {
    return (y, out) => {
      for (let x = 0, p = y * width * channels; x < width; x++, p += channels) out[x] = data[p]!;
    };
  }
  return (y, out) => {
    for (let x = 0, p = y * width * channels; x < width; x++, p += channels) out[x] = 0.299 * data[p]! + 0.587 * data[p + 1]! + 0.114 * data[p + 2]!;
  };
}
