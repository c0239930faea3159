import { sha256Hex } from '../core/bytes/digest.js';
import { openImage, readMetadata, xmpTextLength, type ImageMetadata, type OpenedImage } from '../core/metadata.js';
import { NO_TAG, type TagCheck } from '../core/provenance/tag.js';
import type { Fingerprinting } from './fingerprint.js';
import { refuseOversizedImage } from './image-size.js';
import { INLINE_XMP_CHARACTERS, type MetadataWorkers, type OffLoop } from './off-loop.js';
import { onThisThread } from './work-meter.js';
import type { Provenance } from './provenance.js';
import { isOptedOut, signalsOf, specSignals, type Signal } from '../core/signals.js';
import { trainingMiningSignals, type C2paReading } from '../core/c2pa/training-mining.js';
import type { PropertyForm } from '../core/xmp/properties.js';
import { DATA_MINING_LABELS, type DataMiningCode } from '../core/xmp/vocabulary.js';
import type { ImageFormat } from '../errors.js';

/** The spec's provenance {present, valid, verifiable}: the tag check (core/provenance/tag.ts). */
export type ProvenanceCheck = TagCheck;

export interface FingerprintCheck {
  readonly present: boolean;
  readonly confidence: number;
  readonly blocks: number;
  /** The detector's: the key version of a mark found (a marking records it); never part of a verify answer. */
  readonly keyVersion?: number;
}

/** The verification result of the spec, field for field. */
export interface VerifyResult {
  readonly optedOut: boolean;
  readonly signals: readonly string[];
  readonly provenance: ProvenanceCheck;
  readonly fingerprint: FingerprintCheck;
  /** SHA-256 of the checked bytes, 64 lowercase hex characters. */
  readonly sha256: string;
}

/** One plus:DataMining occurrence as verify read it. */
export interface DataMiningDetail {
  /** As stored, surrounding whitespace removed. */
  readonly value: string;
  /** The vocabulary code, when the value is exactly a vocabulary URI. */
  readonly code: DataMiningCode | null;
  /** The IPTC description of that code. */
  readonly label: string | null;
  /** One of the seven DMI-PROHIBITED* URIs: this occurrence opts out. */
  readonly prohibited: boolean;
  readonly form: PropertyForm;
  /** Held in JPEG Extended XMP. */
  readonly extended: boolean;
}

/**
 * What verify found beyond the spec's fields: the dashboard and the CLI show
 * it, and the API adds it as `details` on request (`?detail=full`). Absent
 * values are null, so it is the JSON it is sent as.
 */
export interface VerifyDetails {
  readonly format: ImageFormat;
  readonly mimeType: string;
  /** Every opt-out signal found, whether or not the file has plus:DataMining (the spec's `signals` lists them only when it has). */
  readonly signals: readonly Signal[];
  readonly dataMining: readonly DataMiningDetail[];
  /** plus:OtherConstraints (x-default), the human-readable companion. */
  readonly otherConstraints: string | null;
  /** W3C TDMRep, as stored. */
  readonly tdmrep: { readonly reservation: string | null; readonly policy: string | null };
  /** The C2PA manifest store and its training-and-data-mining assertions (its signature is not checked). */
  readonly c2pa: C2paReading;
  readonly warnings: readonly string[];
}

export interface VerifyOptions {
  /** Checks provenance tags against the keys we know; without it a tag is present but not verifiable. */
  readonly provenance?: Provenance;
  /**
   * Largest declared width x height taken (ImageDimensionsTooLargeError past
   * it); default DEFAULT_MAX_IMAGE_PIXELS (16383 x 16383), as for protect.
   */
  readonly maxImagePixels?: number;
}
/** Without the pixel check (the synchronous library call): no block examined. */
export const NO_FINGERPRINT: FingerprintCheck = { present: false, confidence: 0, blocks: 0 };

/**
 * Check an image for the opt-out and the other signals it carries.
 * A file without metadata is a result (`optedOut: false`), not an error.
 *
 * @throws EmptyImageError, UnsupportedFormatError, ImageDimensionsTooLargeError, CorruptImageError, InvalidXmpError
 */
export function inspect(bytes: Uint8Array, options: VerifyOptions = {}): { result: VerifyResult; details: VerifyDetails } {
  return inspectOpened(bytes, openChecked(bytes, options), options);
}

/** The check inspect makes before the XMP is read, and the container opened. */
function openChecked(bytes: Uint8Array, options: VerifyOptions): OpenedImage {
  // The same refusal as protect's, first, from the header alone.
  refuseOversizedImage(bytes, options.maxImagePixels);
  return openImage(bytes);
}

function inspectOpened(bytes: Uint8Array, opened: OpenedImage, options: VerifyOptions): { result: VerifyResult; details: VerifyDetails } {
  const metadata = readMetadata(bytes, opened);
  const { facts } = metadata;
  const found = [...signalsOf(facts), ...trainingMiningSignals(metadata.c2pa)];
  const result: VerifyResult = {
    optedOut: isOptedOut(facts),
    signals: specSignals(facts, found),
    provenance: provenanceOf(metadata, options.provenance),
    fingerprint: NO_FINGERPRINT,
    sha256: sha256Hex(bytes),
  };
  const details: VerifyDetails = {
    format: metadata.format,
    mimeType: metadata.handler.mimeType,
    signals: found,
    dataMining: facts.dataMining.map((d) => ({
      value: d.value,
      code: d.code ?? null,
      label: d.code ? DATA_MINING_LABELS[d.code] : null,
      prohibited: d.prohibited,
      form: d.form,
      extended: d.extended,
    })),
    otherConstraints: facts.otherConstraints ?? null,
    tdmrep: { reservation: facts.tdmReservation ?? null, policy: facts.tdmPolicy ?? null },
    c2pa: metadata.c2pa,
    warnings: metadata.warnings,
  };
  return { result, details };
}

export function verify(bytes: Uint8Array, options: VerifyOptions = {}): VerifyResult {
  return inspect(bytes, options).result;
}

/**
 * `inspect` and then the in-pixel fingerprint check, which decodes pixels:
 * only once the container has been found sound and its declared size under
 * `maxImagePixels`, so broken files and pixel bombs are never handed to the
 * decoder.
 */
export async function inspectWithFingerprint(
  bytes: Uint8Array,
  options: VerifyOptions & { readonly fingerprint: Fingerprinting; readonly signal?: AbortSignal; readonly workers?: MetadataWorkers },
): Promise<{ result: VerifyResult; details: VerifyDetails }> {
  const inspected = options.workers ? await inspectOffLoop(bytes, options, { workers: options.workers, signal: options.signal }) : inspect(bytes, options);
  options.signal?.throwIfAborted();
  const fingerprint = await options.fingerprint.check(bytes, options.signal);
  return { result: { ...inspected.result, fingerprint }, details: inspected.details };
}

/**
 * inspect as a server runs it: the same answer, the same refusals, without
 * holding the event loop. A file whose XMP is short (nearly all) is read on
 * this thread; one whose XMP is long, on the worker pool within its time
 * budget (app/off-loop.ts). The work is charged to the call's meter.
 */
export async function inspectOffLoop(bytes: Uint8Array, options: VerifyOptions, offLoop: OffLoop): Promise<{ result: VerifyResult; details: VerifyDetails }> {
  offLoop.signal?.throwIfAborted();
  const { workers } = offLoop;
  const here = onThisThread(() => {
    const opened = openChecked(bytes, options);
    if (workers && xmpTextLength(opened) > INLINE_XMP_CHARACTERS) return undefined;
    return { inspection: inspectOpened(bytes, opened, options) };
  });
  if (here) return here.inspection;
  // A copy goes to the pool: the fingerprint check needs these bytes afterwards.
  const task = { bytes: new Uint8Array(bytes), maxImagePixels: options.maxImagePixels, checking: options.provenance?.snapshot() };
  return workers!.inspect(task, offLoop.signal);
}

/** The tag check; the content digest is only computed when there is a tag to check. */
function provenanceOf(metadata: ImageMetadata, provenance: Provenance | undefined): ProvenanceCheck {
  const tag = metadata.facts.serviceTag;
  if (tag === undefined) return NO_TAG;
  if (!provenance) return { present: true, valid: false, verifiable: false };
  return provenance.check(tag, { digest: metadata.digest(), dataMining: metadata.facts.dataMining[0]?.value });
}
