import type { FingerprintEncoding } from '../core/formats/encoding-like.js';
import { InvalidOptionError } from '../errors.js';
import { join } from '../core/bytes/assemble.js';
import { sha256Hex } from '../core/bytes/digest.js';
import { openImage, writeDataMiningParts, xmpTextLength, type OpenedImage, type TagSigner, type WrittenParts } from '../core/metadata.js';
import { parseTag } from '../core/provenance/tag.js';
import { SIGNAL } from '../core/signals.js';
import { checkOtherConstraints } from '../core/xmp/other-constraints.js';
import { DEFAULT_CODE, DMI_VOCAB_PREFIX, isProhibitedCode, PROHIBITED_CODES, uriFor, type ProhibitedCode } from '../core/xmp/vocabulary.js';
import type { Fingerprinting } from './fingerprint.js';
import { outputFilename } from './filename.js';
import { refuseOversizedImage } from './image-size.js';
import { INLINE_XMP_CHARACTERS, type OffLoop } from './off-loop.js';
import type { Provenance } from './provenance.js';
import { onThisThread } from './work-meter.js';

export interface ProtectOptions {
  /**
   * The DMI-PROHIBITED* code to write (anything else is InvalidOptionError).
   * Without it, a file that already opts out keeps its value, and any other
   * gets DMI-PROHIBITED-AIMLTRAINING.
   */
  readonly value?: string;
  /**
   * With a value: keep a prohibiting value the file already carries, and
   * write `value` only into a file that has none (the dashboard's choice for
   * a batch). Without one this is always so.
   */
  readonly keepExisting?: boolean;
  /**
   * The text of the constraints DMI-PROHIBITED-SEECONSTRAINT points to,
   * written as plus:OtherConstraints (its x-default item) with that value:
   * needed with it, refused with any other value or none (InvalidOptionError);
   * at most 1,000 characters, one line. Not written when the file's own
   * opt-out is kept (keepExisting): its plus:OtherConstraints stays as it is.
   */
  readonly otherConstraints?: string;
  /** The uploaded file's name, for the suggested output name. */
  readonly filename?: string;
  /** Signs the provenance tag written with the value (the API and the CLI always pass one). */
  readonly signer?: TagSigner;
  /**
   * Largest declared width x height taken (ImageDimensionsTooLargeError past
   * it); default DEFAULT_MAX_IMAGE_PIXELS (16383 x 16383). The server and the
   * CLI pass OPTMARK_MAX_IMAGE_PIXELS.
   */
  readonly maxImagePixels?: number;
  /**
   * The input's content digest, hashed by the caller over the ranges
   * contentRanges gives for the blocks of openForProtect's container (the
   * command line's batch hashes on a thread of its own); computed here
   * when absent.
   */
  readonly contentDigest?: Uint8Array;
}

/** The marked-image result of the spec, with the bytes still raw (the API base64-encodes them). */
export interface ProtectResult {
  readonly bytes: Uint8Array;
  readonly mimeType: string;
  readonly filename: string;
  /** SHA-256 of `bytes`, 64 lowercase hex characters (computed when first read: a batch that does not report it does not pay for it). */
  readonly sha256: string;
  readonly signals: readonly string[];
  /** The Data Mining code the marked file carries. */
  readonly value: ProhibitedCode;
  /** The file already carried this opt-out value (kept, or asked for again). */
  readonly alreadyCarried: boolean;
  /** The plus:OtherConstraints text written with the value (DMI-PROHIBITED-SEECONSTRAINT), if any. */
  readonly otherConstraints?: string;
  /** False when the file already carried exactly this opt-out and is returned unchanged. */
  readonly changed: boolean;
  /** The input's C2PA manifest no longer validates: its hard binding covers the bytes changed. */
  readonly c2paInvalidated: boolean;
  /** With a signer: the key id of the provenance tag the marked file carries (signed now, or its own valid tag, kept). */
  readonly tagKid: string | undefined;
  /** Only from protectWithFingerprint: the in-pixel mark was `added`, or `found` already there (and not added again). */
  readonly fingerprint?: 'added' | 'found';
  /** Only from protectWithFingerprint: the version of the fingerprint secret of that mark (null when not known). */
  readonly fingerprintKeyVersion?: number | null;
  /**
   * How the fingerprinted file was re-encoded (the original's format,
   * quality and JPEG settings as read from its headers): the dashboard and
   * the CLI show it with the size change. Not part of the API's answer.
   */
  readonly fingerprintEncoding?: FingerprintEncoding;
}

/**
 * Write the IPTC/PLUS Data Mining opt-out into an image's metadata, losslessly:
 * the output has the input's format, and every byte outside the XMP blocks
 * (and the WebP header fields that announce them) is the input's. With a
 * signer, a provenance tag over the file's content goes into the same packet.
 *
 * @throws EmptyImageError, UnsupportedFormatError, ImageDimensionsTooLargeError,
 *   CorruptImageError, InvalidXmpError, AmbiguousXmpError, InvalidOptionError
 */
export function protect(bytes: Uint8Array, options: ProtectOptions = {}): ProtectResult {
  return protectOpened(bytes, openForProtect(bytes, options), options);
}

/** The checks protect makes before the XMP is read, and the container opened (protectParts takes it, when its caller needed the blocks first). */
export function openForProtect(bytes: Uint8Array, options: ProtectOptions): OpenedImage {
  // First, from the header alone: a declared size past the limit is refused
  // whatever else is wrong with the file, so protect and verify agree on it.
  refuseOversizedImage(bytes, options.maxImagePixels);
  checkedValue(options);
  return openImage(bytes);
}

/** The marked file as the parts that make it (views on the input where it is unchanged), for protectParts. */
export interface ProtectedParts extends Omit<ProtectResult, 'bytes'> {
  readonly parts: readonly Uint8Array[];
}

/**
 * protect, the marked file given as its parts in order (ranges of `bytes`
 * and the new metadata) rather than built into a new buffer: the same file,
 * nothing of it copied, for a writer that writes the parts out (writev)
 * before `bytes` changes. The command line's batch writes files so.
 */
export function protectParts(bytes: Uint8Array, options: ProtectOptions = {}, opened: OpenedImage = openForProtect(bytes, options)): ProtectedParts {
  const { parts, ...written } = writtenParts(bytes, opened, options);
  return answer({ parts }, parts, written, options);
}

function protectOpened(bytes: Uint8Array, opened: OpenedImage, options: ProtectOptions): ProtectResult {
  const { parts, ...written } = writtenParts(bytes, opened, options);
  // Unchanged: the input itself; else one new buffer.
  const out = written.changed ? join(parts) : bytes;
  return answer({ bytes: out }, [out], written, options);
}

function writtenParts(bytes: Uint8Array, opened: OpenedImage, options: ProtectOptions): WrittenParts {
  const value = checkedValue(options);
  return writeDataMiningParts(
    bytes,
    uriFor(value ?? DEFAULT_CODE),
    { signer: options.signer, keepExisting: value === undefined || options.keepExisting === true, otherConstraints: options.otherConstraints, contentDigest: options.contentDigest },
    opened,
  );
}

/** The answer for the marked file `output` (its bytes, or its parts), whose SHA-256 is that of `file` put together. */
function answer<Output extends { readonly bytes: Uint8Array } | { readonly parts: readonly Uint8Array[] }>(
  output: Output,
  file: readonly Uint8Array[],
  written: Omit<WrittenParts, 'parts'>,
  options: ProtectOptions,
): Output & Omit<ProtectResult, 'bytes'> {
  let sha256: string | undefined;
  return {
    ...output,
    mimeType: written.handler.mimeType,
    filename: outputFilename(options.filename, written.handler.extension),
    get sha256() {
      return (sha256 ??= sha256Hex(file));
    },
    signals: [SIGNAL.iptcDataMining],
    value: written.value.slice(DMI_VOCAB_PREFIX.length) as ProhibitedCode,
    alreadyCarried: written.alreadyCarried,
    ...(written.otherConstraints !== undefined ? { otherConstraints: written.otherConstraints } : {}),
    changed: written.changed,
    c2paInvalidated: written.c2paInvalidated,
    tagKid: written.tag === undefined ? undefined : parseTag(written.tag)?.kid,
  };
}

/**
 * protect with the optional layer the dashboard and the CLI offer: the
 * in-pixel fingerprint first (it re-encodes the pixels, so it cannot be
 * lossless), then the opt-out and the provenance tag on top, losslessly.
 * A file that already carries this deployment's mark is not marked again.
 * The API's protect never does this (the specification says so).
 *
 * @throws what protect throws, and FingerprintNotPossibleError
 */
export async function protectWithFingerprint(
  bytes: Uint8Array,
  fingerprint: Fingerprinting,
  options: ProtectOptions = {},
  server?: OffLoop & { readonly provenance: Provenance | undefined },
): Promise<ProtectResult> {
  // Everything protect would refuse in the file as it is (its size, its
  // container, its XMP, the value asked for), refused as protect refuses it,
  // before the costly part: marking decodes the pixels. Nothing is signed.
  const check = { ...options, signer: undefined };
  if (server) await protectOffLoop(bytes, check, undefined, server);
  else protect(bytes, check);
  const marked = await fingerprint.mark(bytes, server?.signal);
  const result = server ? await protectOffLoop(marked.bytes, options, server.provenance, server) : protect(marked.bytes, options);
  return { ...result, fingerprint: marked.fingerprint, fingerprintKeyVersion: marked.keyVersion, ...(marked.encoding ? { fingerprintEncoding: marked.encoding } : {}) };
}

/**
 * protect as a server runs it: the same answer, the same refusals, without
 * holding the event loop. A file whose XMP is short (nearly all) is marked
 * on this thread; one whose XMP is long, on the worker pool within its time
 * budget (app/off-loop.ts). The work is charged to the call's meter.
 * `options.signer` is not used: `provenance` signs, here or on the pool.
 */
export async function protectOffLoop(bytes: Uint8Array, options: Omit<ProtectOptions, 'signer'>, provenance: Provenance | undefined, offLoop: OffLoop): Promise<ProtectResult> {
  offLoop.signal?.throwIfAborted();
  const { workers } = offLoop;
  const here = onThisThread(() => {
    const opened = openForProtect(bytes, options);
    if (workers && xmpTextLength(opened) > INLINE_XMP_CHARACTERS) return undefined;
    return { result: protectOpened(bytes, opened, { ...options, signer: provenance?.signer }) };
  });
  if (here) return here.result;
  // A copy goes to the pool: the caller may use its bytes again (protectWithFingerprint does).
  const task = {
    bytes: new Uint8Array(bytes),
    value: options.value,
    keepExisting: options.keepExisting,
    otherConstraints: options.otherConstraints,
    filename: options.filename,
    maxImagePixels: options.maxImagePixels,
    signing: provenance?.snapshot(),
  };
  return workers!.protect(task, offLoop.signal);
}

/**
 * The code asked for, or undefined for the default (keep the file's own
 * opt-out, else DEFAULT_CODE); and the plus:OtherConstraints text checked
 * against it (needed with DMI-PROHIBITED-SEECONSTRAINT, refused otherwise).
 */
function checkedValue(options: ProtectOptions): ProhibitedCode | undefined {
  const value = options.value;
  if (value !== undefined && !isProhibitedCode(value)) throw new InvalidOptionError('value', `one of: ${PROHIBITED_CODES.join(', ')}`, value);
  checkOtherConstraints(value, options.otherConstraints);
  return value;
}
