/**
 * Decoding pixels with sharp (libvips), hardened for input from strangers:
 * - only the JPEG, PNG and WebP loaders run: libvips would otherwise decode
 *   SVG, GIF, TIFF and more whatever the bytes claim to be, and every extra
 *   loader is attack surface (the block is process-wide, as sharp's is);
 * - the pixel count is checked from the header before libvips sees the file,
 *   and `limitInputPixels` holds the same bound inside libvips;
 * - at most `concurrency` decodes run at once and at most `queue` wait: past
 *   that the caller gets ServerBusyError (503) rather than the process
 *   running out of memory (a 100 MP RGB decode takes 300 MB). A job that
 *   keeps full-size pixels after decoding them (fingerprint marking: decode,
 *   embed, encode) holds its slot until it is done (`withSlot`), so the
 *   bound covers every full-size buffer, not only the decode itself.
 */
import sharp from 'sharp';
import { sniff } from '../core/formats/sniff.js';
import { carryMetadata } from '../core/formats/carry-metadata.js';
import { declaredDimensions } from '../core/formats/dimensions.js';
import { CorruptImageError, ImageDimensionsTooLargeError, ServerBusyError, UnsupportedFormatError } from '../errors.js';
import { chargeWork } from '../app/work-meter.js';
import { encodingLike } from '../core/formats/encoding-like.js';

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
  /** Shrink so that neither side is over this (JPEG shrinks while decoding, which is much cheaper). */
  readonly maxSide?: number;
  /** Shrink so that the shorter side is this (never enlarge); the same cheap shrink-on-load. */
  readonly minSide?: number;
  /**
   * The values as stored, not converted to sRGB through the image's colour
   * profile: what a re-encoding that carries the profile over must be fed.
   */
  readonly stored?: boolean;
  /** Turned as displayed, by the EXIF orientation (which then no longer applies to the pixels). */
  readonly orient?: boolean;
  /**
   * Gives up the wait for a slot when aborted (the client left): the decode
   * is not started, and the call rejects with the signal's reason. A decode
   * already running is not stopped (libvips cannot be interrupted mid-file).
   */
  readonly signal?: AbortSignal;
}

/** Pixels to encode: any 8-bit raster, a buffer of its own or not. */
export interface RawPixels {
  readonly data: Uint8Array;
  readonly width: number;
  readonly height: number;
  readonly channels: number;
}

/**
 * Decoded pixels: sharp's `toBuffer`, whose memory is external to V8 and is
 * copied into an ArrayBuffer of its own only when handed to a worker thread
 * (Node 22 and later refuse to transfer it; adapters/worker-pool.ts). Not
 * sharp's `toUint8Array`, which would spare that copy: sharp 0.35.5 never
 * frees the native buffer it copies from (its free callback is given its
 * arguments in the wrong order), so every decode leaked its whole size, 15 MB
 * a verify of a 16,000 × 256 picture, until the server ran out of memory.
 */
export interface Pixels extends RawPixels {
  readonly data: Uint8Array;
}

/** What the header says about the pixels, before decoding them. */
export interface PixelFacts {
  readonly width: number;
  readonly height: number;
  readonly channels: number;
  /** libvips' interpretation: 'srgb', 'b-w', 'cmyk', 'rgb16', 'grey16', ... */
  readonly space: string;
  /** Bits per sample as libvips names them: 'uchar' is 8-bit. */
  readonly depth: string;
  readonly pages: number;
  /** EXIF orientation, 1 (as stored) to 8. */
  readonly orientation: number;
}

/** Pixel work done inside a slot already held (see `withSlot`): it takes no slot of its own. */
export interface HeldPixels {
  decode(bytes: Uint8Array, options?: DecodeOptions): Promise<Pixels>;
  /**
   * Encode pixels in the format of `original`, carrying its metadata (colour
   * profile, EXIF, XMP, text) over, with the original's settings as far as
   * its headers tell them (encodingLike): PNG lossless, lossless WebP stays
   * lossless, JPEG and lossy WebP at the original's estimated quality (a
   * fixed quality 95 made a quality-75 JPEG nearly twice its size). A JPEG
   * keeps its progressive mode, and its chroma subsampling when that is
   * 4:2:0, with none otherwise (grey, 4:4:4, and the 4:2:2 and 4:4:0 that
   * libjpeg cannot write), so the colour is never stored coarser than it
   * was. The mark is a change of luma only, which chroma subsampling does
   * not touch. A lossy WebP is written with libwebp's sharp RGB to YUV
   * conversion (smartSubsample), which keeps a re-encoding's colours closer
   * to the original's. `quality` (lossy formats) writes at that quality
   * instead of the original's (src/app/fingerprint-encode.ts raises it when
   * the original's loses the mark or, for a WebP of quality 90 and more,
   * 40 dB).
   */
  encodeLike(original: Uint8Array, pixels: RawPixels, quality?: number): Promise<Uint8Array>;
}

export interface PixelDecoder {
  /** One decode, in a slot of its own that is given back as soon as it returns. */
  decode(bytes: Uint8Array, options?: DecodeOptions): Promise<Pixels>;
  probe(bytes: Uint8Array): Promise<PixelFacts>;
  /**
   * Run `job` holding one slot from start to end, with the same bound and
   * queue as `decode` (ServerBusyError past the queue): for work that keeps
   * full-size pixels after the decode (embed, encode). `bytes` is checked
   * against the pixel limit before a slot is waited for; `signal` gives up
   * the wait. The `held` functions must not be used once `job` has settled.
   */
  withSlot<T>(bytes: Uint8Array, job: (held: HeldPixels) => Promise<T>, signal?: AbortSignal): Promise<T>;
  /**
   * A small JPEG of the image as displayed (turned by its EXIF orientation,
   * transparency on white), neither side over `maxSide`: the picture of a
   * service record's certificate. One decode, in a slot of its own.
   */
  thumbnail(bytes: Uint8Array, maxSide: number): Promise<Uint8Array>;
  /** Slots in use (decodes and held jobs) and callers waiting for one, now. */
  readonly load: { readonly running: number; readonly waiting: number };
}

export function createPixelDecoder(limits: DecoderLimits): PixelDecoder {
  let running = 0;
  const waiting: Array<() => void> = [];

  async function turn(signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    if (running >= limits.concurrency) {
      if (waiting.length >= limits.queue) throw new ServerBusyError('pixel decodes');
      await new Promise<void>((resolve, reject) => {
        const served = () => {
          signal?.removeEventListener('abort', leave);
          resolve();
        };
        // Out of the line, so the slot goes to the next caller instead.
        const leave = () => {
          waiting.splice(waiting.indexOf(served), 1);
          reject(signal!.reason);
        };
        waiting.push(served);
        signal?.addEventListener('abort', leave, { once: true });
      });
    } else {
      running++;
    }
    // A finished decode (or job) hands its slot straight to the next in line.
    return () => {
      const next = waiting.shift();
      if (next) next();
      else running--;
    };
  }

  /** Refuses a decompression bomb from its header, before any slot is taken or libvips sees it. */
  function declared(bytes: Uint8Array): { format: 'jpeg' | 'png' | 'webp'; size: { width: number; height: number } | undefined } {
    const format = sniff(bytes).format;
    const size = declaredDimensions(bytes, format);
    if (size && size.width * size.height > limits.maxPixels) throw new ImageDimensionsTooLargeError(size.width, size.height, limits.maxPixels);
    return { format, size };
  }

  /** The decode itself, in a slot the caller holds. */
  async function decodeHeld(bytes: Uint8Array, options: DecodeOptions, { format, size } = declared(bytes)): Promise<Pixels> {
    const started = performance.now();
    try {
      let pipeline = sharp(bytes, { limitInputPixels: limits.maxPixels, failOn: 'warning', sequentialRead: true });
      if (options.orient) pipeline = pipeline.rotate();
      if (options.maxSide) pipeline = pipeline.resize(options.maxSide, options.maxSide, { fit: 'inside', withoutEnlargement: true, fastShrinkOnLoad: true });
      else if (options.minSide) pipeline = pipeline.resize(options.minSide, options.minSide, { fit: 'outside', withoutEnlargement: true, fastShrinkOnLoad: true });
      if (options.stored) pipeline = pipeline.keepIccProfile();
      const { data, info } = await pipeline.raw().toBuffer({ resolveWithObject: true });
      return { data, width: info.width, height: info.height, channels: info.channels };
    } catch (error) {
      throw refusal(error, format, size, limits.maxPixels);
    } finally {
      chargeWork((performance.now() - started) / 1000);
    }
  }

  /** The encode itself, in a slot the caller holds. sharp reads the raw pixels where they are (no copy). */
  async function encodeHeld(original: Uint8Array, pixels: RawPixels, quality?: number): Promise<Uint8Array> {
    const started = performance.now();
    try {
      return await encodeWith(original, pixels, quality);
    } finally {
      chargeWork((performance.now() - started) / 1000);
    }
  }

  async function encodeWith(original: Uint8Array, pixels: RawPixels, quality?: number): Promise<Uint8Array> {
    let raw = sharp(pixels.data, { raw: { width: pixels.width, height: pixels.height, channels: pixels.channels as 1 | 2 | 3 | 4 } });
    // Without this, one or two channels (grey, grey + alpha) would be written as sRGB.
    if (pixels.channels <= 2) raw = raw.toColourspace('b-w');
    const settings = encodingLike(original, quality);
    const encoded =
      settings.format === 'jpeg'
        ? await raw.jpeg({ quality: settings.quality, chromaSubsampling: settings.subsampling === '4:2:0' ? '4:2:0' : '4:4:4', progressive: settings.progressive }).toBuffer()
        : settings.format === 'png'
          ? await raw.png({ compressionLevel: 6 }).toBuffer()
          : // exact: libwebp would otherwise zero the colour under fully transparent pixels, which a lossless file keeps.
            // smartSubsample: libwebp's sharp YUV, whose chroma, once upsampled, gives back RGB closer to what it was given
            // (an original decoded and written again loses less of its colour: 1 to 3 dB of PSNR on colourful pictures).
            await raw.webp(settings.lossless ? { lossless: true, exact: true } : { quality: settings.quality, alphaQuality: 100, smartSubsample: true }).toBuffer();
    return carryMetadata(original, encoded);
  }

  return {
    async decode(bytes, options = {}) {
      const facts = declared(bytes);
      const done = await turn(options.signal);
      try {
        return await decodeHeld(bytes, options, facts);
      } finally {
        done();
      }
    },
    async thumbnail(bytes, maxSide) {
      const { format, size } = declared(bytes);
      const done = await turn();
      const started = performance.now();
      try {
        return await sharp(bytes, { limitInputPixels: limits.maxPixels, failOn: 'error', sequentialRead: true })
          .rotate()
          .resize(maxSide, maxSide, { fit: 'inside', withoutEnlargement: true, fastShrinkOnLoad: true })
          .flatten({ background: '#ffffff' })
          .jpeg({ quality: 80 })
          .toBuffer();
      } catch (error) {
        throw refusal(error, format, size, limits.maxPixels);
      } finally {
        chargeWork((performance.now() - started) / 1000);
        done();
      }
    },
    async probe(bytes) {
      const format = sniff(bytes).format;
      try {
        const m = await sharp(bytes, { limitInputPixels: limits.maxPixels }).metadata();
        return { width: m.width ?? 0, height: m.pageHeight ?? m.height ?? 0, channels: m.channels ?? 0, space: m.space ?? '', depth: m.depth ?? '', pages: m.pages ?? 1, orientation: m.orientation ?? 1 };
      } catch (error) {
        throw refusal(error, format, declaredDimensions(bytes, format), limits.maxPixels);
      }
    },
    async withSlot(bytes, job, signal) {
      declared(bytes);
      const done = await turn(signal);
      let holding = true;
      const held = <A extends unknown[], R>(work: (...args: A) => Promise<R>) =>
        (...args: A): Promise<R> => {
          if (!holding) return Promise.reject(new Error('internal: pixel work after its slot was given back'));
          return work(...args);
        };
      try {
        return await job({ decode: held((b: Uint8Array, options: DecodeOptions = {}) => decodeHeld(b, options)), encodeLike: held(encodeHeld) });
      } finally {
        holding = false;
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
