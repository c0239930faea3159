/**
 * The experimental in-pixel fingerprint as the use cases see it: check an
 * image on every verify, and mark one on request (the CLI's
 * `protect --fingerprint`; the API's protect never does, as the spec says).
 *
 * Checking decodes a reduced copy (cheap: JPEG shrinks while decoding),
 * turned as displayed, and runs the detector off the event loop. An image the decoder will not
 * take (over the pixel limit, pixel data libvips rejects) is reported as
 * examined in no block, `blocks: 0`, rather than failing the whole verify:
 * its metadata answer stands on its own.
 *
 * Marking decodes the stored values at full size, embeds in the displayed
 * orientation (core/fingerprint/mark-stored.ts) off the event loop (about a
 * second of arithmetic for 12 megapixels), re-encodes in the same format and
 * carries the original's metadata over, and checks that verify will find
 * the mark in the file it made (fingerprint-encode.ts: a lossy file that
 * lost it, or a high-quality WebP that lost over 40 dB, is written again at
 * a higher quality); the opt-out and the provenance tag are
 * written on top by protect, losslessly. The whole job, decode to
 * encode, holds one of the decoder's slots: it keeps full-size pixels (300 MB
 * at 100 megapixels) all along, and the slots are what bounds them. The
 * decoded pixels are copied once on the way to the embedder (the decoder's
 * buffer is external memory, which Node does not transfer) and come back
 * without a copy (transferred).
 */
import { CANVAS_SIDE, MIN_DETECT_SIDE, isOrientation, shapeRefusal, type Orientation, type Raster } from '../core/fingerprint/index.js';
import { declaredDimensions } from '../core/formats/dimensions.js';
import type { FingerprintEncoding } from '../core/formats/encoding-like.js';
import { sniff } from '../core/formats/sniff.js';
import { CorruptImageError, FingerprintNotPossibleError, ImageDimensionsTooLargeError } from '../errors.js';
import { overDecodeBudget } from './decode-budget.js';
import { encodeMarked } from './fingerprint-encode.js';
import { NO_FINGERPRINT, type FingerprintCheck } from './verify-image.js';

export interface FingerprintSecret {
  readonly version: number;
  readonly secret: Uint8Array;
}

type DecodeRequest = { minSide?: number; stored?: boolean; orient?: boolean; signal?: AbortSignal };

/** Pixel work inside a slot already held (PixelPort.withSlot): it takes no slot of its own. */
interface HeldPixelPort {
  decode(bytes: Uint8Array, options?: DecodeRequest): Promise<Raster>;
  /** `quality` (lossy formats): written at that quality instead of the original's. */
  encodeLike(original: Uint8Array, pixels: Raster, quality?: number): Promise<Uint8Array>;
}

/** The pixel work the fingerprint needs (src/adapters/pixels.ts). */
export interface PixelPort {
  /** One bounded decode; its slot is free again when it returns. */
  decode(bytes: Uint8Array, options?: DecodeRequest): Promise<Raster>;
  probe(bytes: Uint8Array): Promise<{ space: string; depth: string; pages: number; orientation: number }>;
  /** `job` holding one decode slot from start to end; its decode and encode take no other. `signal` gives up the wait for the slot. */
  withSlot<T>(bytes: Uint8Array, job: (held: HeldPixelPort) => Promise<T>, signal?: AbortSignal): Promise<T>;
}

/** What the detector is given: a reduced copy of the image and the secrets to look for, newest first. */
export interface DetectTask {
  readonly data: Uint8Array;
  readonly width: number;
  readonly height: number;
  readonly channels: number;
  readonly secrets: readonly FingerprintSecret[];
}

/** Runs the detector somewhere that does not block (src/adapters/worker-pool.ts). */
export type DetectPort = (task: DetectTask) => Promise<FingerprintCheck>;

/** What the embedder is given: the full-size pixels as stored, how they are displayed, and the secret to mark with. */
export interface EmbedTask {
  readonly data: Uint8Array;
  readonly width: number;
  readonly height: number;
  readonly channels: number;
  readonly orientation: Orientation;
  /** A grey picture the decoder handed over as RGB(A): the marked pixels come back grey. */
  readonly grey: boolean;
  readonly secret: FingerprintSecret;
}

/** The marked pixels (stored orientation), or why the image cannot carry the mark (a sentence about "it"). */
export type EmbedOutcome =
  | { readonly marked: { readonly data: Uint8Array; readonly width: number; readonly height: number; readonly channels: number } }
  | { readonly refused: string };

/** Runs the embedder somewhere that does not block (src/adapters/worker-pool.ts); `signal` stops it. */
export type EmbedPort = (task: EmbedTask, signal?: AbortSignal) => Promise<EmbedOutcome>;

/** What marking did: the file with the mark, and whether it was added now or found there already. */
export interface Marked {
  readonly bytes: Uint8Array;
  /** `added`: re-encoded with the mark; `found`: the file already carried a mark verify finds, and is returned as it was. */
  readonly fingerprint: 'added' | 'found';
  /** The version of the fingerprint secret of the mark: the one marked with, or the one found (null if the detector did not say). */
  readonly keyVersion: number | null;
  /** How the marked file was written (`added` only): the original's format and, for JPEG and lossy WebP, its estimated quality. */
  readonly encoding?: FingerprintEncoding;
}

export interface Fingerprinting {
  /**
   * @param signal aborted when the answer is no longer wanted (the client
   *   left): a check still waiting for the decoder gives up its place and
   *   answers NO_FINGERPRINT, and one decoded by then is not sent to the detector.
   */
  check(bytes: Uint8Array, signal?: AbortSignal): Promise<FingerprintCheck>;
  /**
   * @param signal aborted when the answer is no longer wanted (the client
   *   left, the call's time is up): the marking stops before its next costly
   *   step (probe, check for a mark already there, decode, embed, encode,
   *   self-check), a wait for a slot is given up, an embedding under way on
   *   the pool is stopped, and it rejects with the signal's reason.
   */
  mark(bytes: Uint8Array, signal?: AbortSignal): Promise<Marked>;
}

export interface FingerprintDeps {
  readonly pixels: PixelPort;
  readonly detect: DetectPort;
  readonly embed: EmbedPort;
  /** Versions looked for, newest first; empty when this deployment has no fingerprint secret. */
  readonly detecting: () => readonly FingerprintSecret[];
  /** The version new marks are made with; undefined when marking is not set up. */
  readonly marking: () => FingerprintSecret | undefined;
}

/**
 * How verify decodes for the detector: the shorter side brought to that of
 * the analysis canvas (the cheapest size that loses nothing; JPEG shrinks
 * while decoding), turned as displayed, in colour: the detector takes the
 * luma itself, with the weights the embedder marks (libvips' grey is
 * another formula, and a second pipeline that cost a tenth of the decode).
 * The benchmark decodes with the same request.
 */
export const DETECT_DECODE = { minSide: CANVAS_SIDE, orient: true } as const;

export function createFingerprinting(deps: FingerprintDeps): Fingerprinting {
  /** The reduced copy decoded and looked at; NO_FINGERPRINT where the decoder refuses the file, or the client left. */
  const lookFor = async (bytes: Uint8Array, secrets: readonly FingerprintSecret[], signal?: AbortSignal): Promise<FingerprintCheck> => {
    let reduced;
    try {
      reduced = await deps.pixels.decode(bytes, { ...DETECT_DECODE, signal });
    } catch (error) {
      if (error instanceof CorruptImageError || error instanceof ImageDimensionsTooLargeError || signal?.aborted) return NO_FINGERPRINT;
      throw error;
    }
    if (signal?.aborted) return NO_FINGERPRINT;
    // A detection takes milliseconds: it is not stopped once started (stopping it would cost its worker thread).
    return detectIn(reduced, secrets, deps);
  };

  const check = async (bytes: Uint8Array, signal?: AbortSignal): Promise<FingerprintCheck> => {
    const secrets = deps.detecting();
    if (secrets.length === 0) return NO_FINGERPRINT;
    // Too small to look at: answer without decoding or queueing anything.
    const size = declaredDimensions(bytes, sniff(bytes).format);
    if (size && Math.min(size.width, size.height) < MIN_DETECT_SIDE) return NO_FINGERPRINT;
    // A file whose decoding would cost far more than its pixel count says
    // (a JPEG scan bomb, thousands of animation frames) is not decoded.
    try {
      if (overDecodeBudget(bytes)) return NO_FINGERPRINT;
    } catch (error) {
      if (error instanceof CorruptImageError) return NO_FINGERPRINT;
      throw error;
    }
    // The answer verify gives: what was found, not with which version.
    const { present, confidence, blocks } = await lookFor(bytes, secrets, signal);
    return { present, confidence, blocks };
  };

  return {
    check,

    async mark(bytes, signal) {
      const secret = deps.marking();
      if (!secret) throw new FingerprintNotPossibleError('this deployment has no fingerprint key');
      // What the header already decides is refused from it, before anything is decoded:
      // a shape the embedder refuses (too small, too elongated), a decode over the budget.
      const size = declaredDimensions(bytes, sniff(bytes).format);
      const misshapen = size && shapeRefusal(size.width, size.height);
      if (misshapen) throw new FingerprintNotPossibleError(misshapen.message.replace(/^The image is /, 'it is '));
      const costly = overDecodeBudget(bytes);
      if (costly) throw new FingerprintNotPossibleError(`${costly}; protect it without the fingerprint, which decodes no pixels`);
      signal?.throwIfAborted();
      const facts = await deps.pixels.probe(bytes).catch(overDecoderLimit);
      signal?.throwIfAborted();
      // libvips decodes only the default image of an APNG (it reports one
      // page): marking it would silently drop the animation.
      if (facts.pages > 1 || isAnimatedPng(bytes)) throw new FingerprintNotPossibleError('it is animated');
      if (facts.space === 'cmyk') throw new FingerprintNotPossibleError('it is CMYK (convert it to RGB first)');
      if (facts.depth !== 'uchar') throw new FingerprintNotPossibleError(`it has ${facts.depth === 'ushort' ? '16' : 'more than 8'} bits per sample, which 8-bit marking would reduce`);
      // A file that already carries a mark verify finds (made by this
      // deployment, with any version still looked for) is not marked again:
      // every marking adds its own pattern and re-encodes, so each round
      // would cost another 6 dB or so of PSNR for nothing.
      // Its decoding cost was checked above; its size is the embedder's to refuse.
      const already = await lookFor(bytes, deps.detecting(), signal);
      signal?.throwIfAborted();
      if (already.present) return { bytes, fingerprint: 'found', keyVersion: already.keyVersion ?? null };
      const orientation = isOrientation(facts.orientation) ? facts.orientation : 1;
      // libvips hands grey pictures over as RGB(A); they go back as grey (with their alpha).
      const grey = facts.space === 'b-w';
      const marking = deps.pixels.withSlot(
        bytes,
        async (held) => {
          signal?.throwIfAborted();
          const pixels = await held.decode(bytes, { stored: true });
          signal?.throwIfAborted();
          // Handed over (transferred where the pool can): nothing here reads the decoded pixels again.
          const outcome = await deps.embed({ data: pixels.data, width: pixels.width, height: pixels.height, channels: pixels.channels, orientation, grey, secret }, signal);
          if ('refused' in outcome) throw new FingerprintNotPossibleError(outcome.refused);
          signal?.throwIfAborted();
          const written = await encodeMarked(held, bytes, outcome.marked, (encoded) => lookIn(encoded, held, deps, signal), signal);
          signal?.throwIfAborted();
          if (written.lost) refuseUnfound(written.check);
          return { bytes: written.bytes, fingerprint: 'added', keyVersion: secret.version, encoding: written.encoding } as const;
        },
        signal,
      );
      return marking.catch(overDecoderLimit);
    },
  };
}

/**
 * The pixel decoder's limit (OPTMARK_MAX_PIXELS) is lower than the size
 * protect takes from the header (OPTMARK_MAX_IMAGE_PIXELS), and protect's own
 * check has passed by the time marking starts (protectWithFingerprint): an
 * image the decoder refuses for its size is one that protect takes without
 * the fingerprint, which only the fingerprint must decode. Said so.
 */
function overDecoderLimit(error: unknown): never {
  if (!(error instanceof ImageDimensionsTooLargeError)) throw error;
  // libvips alone noticed the size when the decoder names none (0 x 0).
  const size = error.width * error.height > 0 ? `${error.width} x ${error.height} pixels, ` : '';
  throw new FingerprintNotPossibleError(
    `it is ${size}more than the ${error.limit} pixels this deployment decodes for the fingerprint (OPTMARK_MAX_PIXELS); protect it without the fingerprint, which decodes no pixels`,
  );
}

/** A file written with the mark, checked as verify will check it: decoded the same way and looked for with every version verify looks for. */
async function lookIn(encoded: Uint8Array, held: HeldPixelPort, deps: FingerprintDeps, signal: AbortSignal | undefined): Promise<FingerprintCheck> {
  signal?.throwIfAborted();
  const reduced = await held.decode(encoded, DETECT_DECODE);
  signal?.throwIfAborted();
  return detectIn(reduced, deps.detecting(), deps);
}

/**
 * Some pictures come out of the embedder within its quality bound and
 * still do not carry a mark the detector finds in the file as encoded,
 * even written again at higher qualities (fingerprint-encode.ts): a page of
 * text on white (the paper cannot take the mark's brighter half, the
 * glyphs' edges drown the rest), near-white or nearly flat pictures. The
 * user asked for a fingerprint, so such a file is refused rather than
 * delivered re-encoded for nothing (and the refusal counts nothing).
 */
function refuseUnfound(found: FingerprintCheck): never {
  const votes = found.blocks === 0 ? 'no block of it could vote' : `${Math.round(found.confidence * found.blocks)} of ${found.blocks} blocks matched`;
  throw new FingerprintNotPossibleError(
    `the mark would not be found in it (${votes}), as happens with text on white and other near-white or flat pictures; protect it without the fingerprint`,
  );
}

/** The detector run on a copy decoded with DETECT_DECODE, its pixels handed over (transferred where the pool can). */
function detectIn(reduced: Raster, secrets: readonly FingerprintSecret[], deps: FingerprintDeps): Promise<FingerprintCheck> {
  return deps.detect({ data: reduced.data, width: reduced.width, height: reduced.height, channels: reduced.channels, secrets });
}

/** An APNG: a PNG with an animation control chunk (acTL) before its image data. */
function isAnimatedPng(bytes: Uint8Array): boolean {
  const handler = sniff(bytes);
  if (handler.format !== 'png') return false;
  for (const block of handler.blocks(bytes)) {
    if (block.type === 'acTL') return true;
    if (block.type === 'IDAT') return false;
  }
  return false;
}
