/**
 * Decoding pixels with sharp (libvips), hardened for input from strangers:
 * - only the JPEG, PNG and WebP loaders run: libvips would otherwise decode
 *   SVG, GIF, TIFF and more whatever the bytes claim to be, and every extra
 *   loader is attack surface (the block is process-wide, as sharp's is);
 * - the pixel count is checked from the header before libvips sees the file,
 *   and `limitInputPixels` holds the same bound inside libvips;
 * - at most `concurrency` decodes run at once and at most `queue` wait: past
 *   that the caller gets ServerBusyError (503) rather than the process
 *   running out of memory (a 100 MP RGB decode takes 300 MB).
 */
import sharp from 'sharp';
import { sniff } from '../core/formats/sniff.js';
import { declaredDimensions } from '../core/formats/dimensions.js';
import { CorruptImageError, ImageDimensionsTooLargeError, ServerBusyError, UnsupportedFormatError } from '../errors.js';

sharp.block({ operation: ['VipsForeignLoad'] });
sharp.unblock({ operation: ['VipsForeignLoadJpeg', 'VipsForeignLoadPng', 'VipsForeignLoadWebp'] });
// Every input is new: libvips' operation cache would only hold memory.
sharp.cache(false);

export interface DecoderLimits {
  readonly maxPixels: number;
  readonly concurrency: number;
  readonly queue: number;
}

export interface DecodeOptions {
  /** Luminance only (one channel) instead of the image's colour channels. */
  readonly grey?: boolean;
  /** Shrink so that neither side is over this (JPEG shrinks while decoding, which is much cheaper). */
  readonly maxSide?: number;
}

export interface Pixels {
  readonly data: Buffer;
  readonly width: number;
  readonly height: number;
  readonly channels: number;
}

export interface PixelDecoder {
  decode(bytes: Uint8Array, options?: DecodeOptions): Promise<Pixels>;
  /** Decodes running and waiting now. */
  readonly load: { readonly running: number; readonly waiting: number };
}

export function createPixelDecoder(limits: DecoderLimits): PixelDecoder {
  let running = 0;
  const waiting: Array<() => void> = [];

  async function turn(): Promise<() => void> {
    if (running >= limits.concurrency) {
      if (waiting.length >= limits.queue) throw new ServerBusyError('pixel decodes');
      await new Promise<void>((resolve) => waiting.push(resolve));
    } else {
      running++;
    }
    // A finished decode hands its slot straight to the next in line.
    return () => {
      const next = waiting.shift();
      if (next) next();
      else running--;
    };
  }

  return {
    async decode(bytes, options = {}) {
      const format = sniff(bytes).format;
      const size = declaredDimensions(bytes, format);
      if (size && size.width * size.height > limits.maxPixels) throw new ImageDimensionsTooLargeError(size.width, size.height, limits.maxPixels);
      const done = await turn();
      try {
        let pipeline = sharp(bytes, { limitInputPixels: limits.maxPixels, failOn: 'warning', sequentialRead: true });
        if (options.maxSide) pipeline = pipeline.resize(options.maxSide, options.maxSide, { fit: 'inside', withoutEnlargement: true, fastShrinkOnLoad: true });
        if (options.grey) pipeline = pipeline.greyscale();
        const { data, info } = await pipeline.raw().toBuffer({ resolveWithObject: true });
        return { data, width: info.width, height: info.height, channels: info.channels };
      } catch (error) {
        throw refusal(error, format, size, limits.maxPixels);
      } finally {
        done();
      }
    },
    get load() {
      return { running, waiting: waiting.length };
    },
  };
}

/** libvips' refusals, as our typed errors; the message keeps libvips' words for the user. */
function refusal(error: unknown, format: 'jpeg' | 'png' | 'webp', size: { width: number; height: number } | undefined, maxPixels: number): Error {
  const message = error instanceof Error ? error.message : String(error);
  if (/exceeds pixel limit/i.test(message)) return new ImageDimensionsTooLargeError(size?.width ?? 0, size?.height ?? 0, maxPixels);
  if (/unsupported image format|is blocked/i.test(message)) return new UnsupportedFormatError();
  return new CorruptImageError(format, `the pixel data cannot be decoded (${message.split('\n')[0]})`);
}
