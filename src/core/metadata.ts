/**
 * Where containers and XMP meet: read a file's opt-out metadata, or write the
 * Data Mining value into it. Pure functions over bytes; the container handlers
 * move bytes, the XMP modules edit text, and this module joins them.
 */
import { AmbiguousXmpError, ConflictingXmpError, InvalidXmpError, type ImageFormat } from '../errors.js';
import { decodeXmpText, join, utf8 } from './bytes/assemble.js';
import { md5HexUpper } from './bytes/digest.js';
import { assembleExtendedXmp } from './formats/extended-xmp.js';
import type { ContainerHandler, OpenContainer, RawXmp } from './formats/handler.js';
import { sniff } from './formats/sniff.js';
import { hasManifestStore, manifestStore, NO_C2PA, readTrainingMining, type C2paReading } from './c2pa/training-mining.js';
import { contentDigest } from './provenance/digest.js';
import { DATA_MINING, OTHER_CONSTRAINTS, SERVICE_TAG } from './xmp/namespaces.js';
import { checkOtherConstraints } from './xmp/other-constraints.js';
import { holdsExactly, setSimpleProperties, type PropertyValue } from './xmp/set-property.js';
import { parseXmp, type XAttr, type XElement, type XmpDocument } from './xmp/document.js';
import { findProperty } from './xmp/properties.js';
import { extendedXmpGuid, firstValue, NO_FACTS, readFacts, type XmpFacts } from './xmp/facts.js';
import { removal, type TextEdit } from './xmp/edit.js';
import { serialise } from './xmp/packet.js';
import { describeRepeats, repeatedProperties, type RepeatedProperty } from './xmp/repeats.js';
import { fitStandardPacket, setExtendedGuid } from './xmp/split.js';

export interface ImageMetadata {
  readonly format: ImageFormat;
  readonly handler: ContainerHandler;
  readonly facts: XmpFacts;
  /** SHA-256 of the content without its XMP (what a provenance tag signs); computed when asked. */
  digest(): Buffer;
  /** The file's C2PA manifest store, if any, and its training-and-data-mining assertions. */
  readonly c2pa: C2paReading;
  /** Number of standard XMP packets found; only the first is read. */
  readonly packetCount: number;
  /** The GUID of the Extended XMP that was read, if any. */
  readonly extendedGuid: string | undefined;
  readonly warnings: readonly string[];
}

interface ParsedXmp {
  readonly raw: RawXmp;
  readonly standard: XmpDocument | undefined;
  readonly extended: XmpDocument | undefined;
  readonly extendedGuid: string | undefined;
}

function parseRaw(raw: RawXmp): ParsedXmp {
  const first = raw.packets[0];
  if (!first) return { raw, standard: undefined, extended: undefined, extendedGuid: undefined };
  const standard = parseXmp(first.text);
  const guid = extendedXmpGuid(standard);
  if (guid === undefined) return { raw, standard, extended: undefined, extendedGuid: undefined };
  const text = decodeXmpText(assembleExtendedXmp(raw.extendedChunks, guid));
  if (text === undefined) throw new InvalidXmpError('the Extended XMP is not valid UTF-8');
  return { raw, standard, extended: parseXmp(text), extendedGuid: guid };
}

/** A file's container, parsed once (its blocks located, its XMP decoded to text but not parsed). */
export interface OpenedImage {
  readonly handler: ContainerHandler;
  readonly container: OpenContainer;
}

/** Parse the container of `bytes`. Throws the container's typed errors. */
export function openImage(bytes: Uint8Array): OpenedImage {
  const handler = sniff(bytes);
  return { handler, container: handler.open(bytes) };
}

/**
 * How much XMP text reading the file would parse: every standard packet's
 * characters and every Extended XMP chunk's bytes. Parsing costs time in
 * proportion (about 1 s for 8 MiB of ordinary markup), so this says, before
 * any parsing, whether the file is cheap to read where the caller runs.
 */
export function xmpTextLength(opened: OpenedImage): number {
  const { packets, extendedChunks } = opened.container.xmp;
  let length = 0;
  for (const packet of packets) length += packet.text.length;
  for (const chunk of extendedChunks) length += chunk.data.length;
  return length;
}

/** Read what the file's XMP says about opt-out. Throws the container's and the XMP's typed errors. */
export function readMetadata(bytes: Uint8Array, opened: OpenedImage = openImage(bytes)): ImageMetadata {
  const { handler, container } = opened;
  const parsed = parseRaw(container.xmp);
  const warnings = [...parsed.raw.warnings];
  const count = parsed.raw.packets.length;
  if (count > 1) warnings.push(`the file carries ${count} standard XMP packets; only the first was read`);
  const facts = parsed.standard ? readFacts(parsed.standard, parsed.extended) : NO_FACTS;
  if (facts.dataMining.length > 1) warnings.push(`plus:DataMining appears ${facts.dataMining.length} times`);
  for (const [doc, where] of [[parsed.standard, 'XMP packet'], [parsed.extended, 'Extended XMP']] as const) {
    // plus:DataMining has its warning above.
    const repeats = doc ? repeatedProperties(doc).filter((r) => !(r.topLevel && r.uri === DATA_MINING.uri && r.local === DATA_MINING.local)) : [];
    if (repeats.length > 0) {
      warnings.push(
        `the ${where} repeats ${describeRepeats(repeats)}: Adobe's XMP Toolkit, and the readers built on it (exiv2, exempi, Adobe's applications), ` +
          'throw such a packet away whole and see none of its properties; protect writes each once',
      );
    }
  }
  for (const fact of facts.dataMining) {
    if (fact.nonCanonical) warnings.push(`plus:DataMining holds ${JSON.stringify(fact.value)}, not a vocabulary URI; it does not count as an opt-out`);
  }
  const digest = () => contentDigest(bytes, container.blocks);
  const c2pa = hasManifestStore(bytes, container.blocks) ? readTrainingMining(manifestStore(handler.format, bytes, container.blocks)) : NO_C2PA;
  return { format: handler.format, handler, facts, digest, c2pa, packetCount: count, extendedGuid: parsed.extendedGuid, warnings };
}

export interface WriteResult {
  readonly bytes: Uint8Array;
  readonly format: ImageFormat;
  readonly handler: ContainerHandler;
  /** The plus:DataMining value written (or already there). */
  readonly value: string;
  /**
   * The plus:OtherConstraints text written with it (or already there,
   * exactly), when one was asked for and the value was written; undefined
   * when the file's own opt-out was kept (its plus:OtherConstraints is then
   * left as it was) or none was asked for.
   */
  readonly otherConstraints: string | undefined;
  /** The file already carried this value, as an opt-out (one of the DMI-PROHIBITED* URIs). */
  readonly alreadyCarried: boolean;
  /** False when the file already said exactly this and was returned unchanged. */
  readonly changed: boolean;
  /**
   * The input carried a C2PA manifest store, and this edit changed bytes its
   * hard binding covers: the manifest no longer validates (docs/provenance.md).
   */
  readonly c2paInvalidated: boolean;
  /** With a signer: the provenance tag the output carries (signed now, or the file's own valid tag, kept). */
  readonly tag: string | undefined;
}

/** A WriteResult with the file as the parts that make it, in order: views on the input where it is unchanged, valid while the input is. */
export interface WrittenParts extends Omit<WriteResult, 'bytes'> {
  readonly parts: readonly Uint8Array[];
}

/** Signs provenance tags for marked files (app/provenance.ts has the real one). */
export interface TagSigner {
  /** A tag for a file with this content digest and plus:DataMining value. */
  sign(digest: Uint8Array, dataMining: string): string;
  /** Whether a tag the file already carries is ours and valid for it (then it is kept as is). */
  accepts(tag: string, digest: Uint8Array, dataMining: string): boolean;
}

export interface WriteOptions {
  /** Signs the provenance tag written with the value. */
  readonly signer?: TagSigner;
  /**
   * When the file already opts out (a DMI-PROHIBITED* value, the first one
   * when there are several), write that value rather than the one
   * requested: a choice the file's owner made is kept unless another is
   * asked for.
   */
  readonly keepExisting?: boolean;
  /**
   * The text plus:OtherConstraints gets (its x-default item) with the value:
   * needed with DMI-PROHIBITED-SEECONSTRAINT, refused with any other
   * (other-constraints.ts). Not written when the file's own opt-out is kept.
   */
  readonly otherConstraints?: string;
  /**
   * The file's content digest (contentDigest of these bytes and their
   * blocks, over contentRanges), when the caller has hashed it elsewhere:
   * the command line's batch hashes on a thread of its own. Computed here
   * when absent.
   */
  readonly contentDigest?: Uint8Array;
}

/**
 * Make `requested` (or, with keepExisting, the opt-out the file already
 * carries) the file's one plus:DataMining value, losslessly, with the
 * plus:OtherConstraints text asked for beside a value written, and with a
 * signer, sign the file's content into the same packet. A file that already
 * carries exactly this value once, where every reader finds it (and the
 * text, and a valid tag of ours, when asked for), comes back byte for byte;
 * so writing twice equals writing once.
 *
 * @throws InvalidOptionError for a text that does not go with `requested`
 *   (other-constraints.ts), before the file is looked at
 */
export function writeDataMining(bytes: Uint8Array, requested: string, options: WriteOptions = {}, opened: OpenedImage = openImage(bytes)): WriteResult {
  const { parts, ...written } = writeDataMiningParts(bytes, requested, options, opened);
  // Unchanged: the input itself; else one new buffer.
  return { bytes: written.changed ? join(parts) : bytes, ...written };
}

/**
 * writeDataMining, the file given as its parts (WrittenParts) rather than
 * built: nothing of the input is copied, for a caller that writes the parts
 * out in one call before the input changes.
 */
export function writeDataMiningParts(bytes: Uint8Array, requested: string, options: WriteOptions = {}, opened: OpenedImage = openImage(bytes)): WrittenParts {
  const { signer } = options;
  const text = checkOtherConstraints(requested, options.otherConstraints);
  const { handler, container } = opened;
  const parsed = parseRaw(container.xmp);
  if (parsed.raw.packets.length > 1) throw new AmbiguousXmpError(handler.format, parsed.raw.packets.length);
  const facts = parsed.standard ? readFacts(parsed.standard, parsed.extended) : NO_FACTS;
  const existing = facts.dataMining.find((d) => d.prohibited)?.value;
  const kept = options.keepExisting === true && existing !== undefined;
  const uri = kept ? existing : requested;
  const alreadyCarried = facts.dataMining.some((d) => d.prohibited && d.value === uri);
  // A kept opt-out keeps its own plus:OtherConstraints, whatever it says.
  const otherConstraints = kept ? undefined : text;
  const properties: PropertyValue[] = [{ name: DATA_MINING, value: uri }];
  if (otherConstraints !== undefined) properties.push({ name: OTHER_CONSTRAINTS, value: otherConstraints, kind: 'langAlt' });
  const signed = signer ? freshTag(parsed, signer, options.contentDigest ?? contentDigest(bytes, container.blocks), uri) : undefined;
  if (signed?.fresh) properties.push({ name: SERVICE_TAG, value: signed.tag });
  const chosen = { value: uri, alreadyCarried, otherConstraints, tag: signed?.tag };
  const cleanup = parsed.standard ? dropRepeats(parsed.standard, otherConstraints !== undefined) : [];
  const plan = setSimpleProperties(parsed.standard, parsed.extended, properties, cleanup);
  const c2paInvalidated = hasManifestStore(bytes, container.blocks);
  if (!plan) {
    const first = parsed.raw.packets[0];
    if (!parsed.raw.misplaced || !first) return { parts: [bytes], format: handler.format, handler, ...chosen, changed: false, c2paInvalidated: false };
    // The value is right, but held where some readers miss it (PNG XMP after
    // IDAT or in zTXt, a WebP "XMP\0" chunk): same packet, canonical place.
    return { parts: container.writeParts({ packet: first.text }), format: handler.format, handler, ...chosen, changed: true, c2paInvalidated };
  }

  let standard = plan.standard;
  let extended = plan.extended;
  if (handler.supportsExtendedXmp) {
    const current = extended ?? (parsed.extended ? parsed.extended.source : undefined);
    const fitted = fitStandardPacket(standard, current, handler.maxPacketBytes, otherConstraints !== undefined ? [OTHER_CONSTRAINTS] : []);
    standard = fitted.standard;
    extended = fitted.extended ?? extended;
  }
  if (extended === undefined) {
    const packet = serialise(standard);
    if (Buffer.byteLength(packet) > handler.maxPacketBytes) {
      throw new InvalidXmpError(`the merged XMP packet is larger than ${handler.maxPacketBytes} bytes`);
    }
    return { parts: container.writeParts({ packet }), format: handler.format, handler, ...chosen, changed: true, c2paInvalidated };
  }
  const data = utf8(extended);
  const guid = md5HexUpper(data);
  const packet = serialise(setExtendedGuid(standard, guid));
  const replaces = parsed.extendedGuid;
  return {
    parts: container.writeParts({ packet, extended: { guid, data, ...(replaces ? { replaces } : {}) } }),
    format: handler.format,
    handler,
    ...chosen,
    changed: true,
    c2paInvalidated,
  };
}

/**
 * Edits that remove every repeat of a property or struct field but its first
 * occurrence, so that Adobe's XMP Toolkit accepts the packet. The value and
 * the tag are left out (the edit leaves one of each anyway), and so, when
 * it is written (`withConstraints`), is plus:OtherConstraints, with what
 * it holds (the edit rewrites it whole). Repeats that disagree are refused:
 * which value is meant cannot be told.
 */
function dropRepeats(standard: XmpDocument, withConstraints: boolean): TextEdit[] {
  const names = withConstraints ? [DATA_MINING, SERVICE_TAG, OTHER_CONSTRAINTS] : [DATA_MINING, SERVICE_TAG];
  const rewritten = withConstraints ? findProperty(standard, OTHER_CONSTRAINTS.uri, OTHER_CONSTRAINTS.local).map((o) => o.node) : [];
  const inside = (node: XElement | XAttr) => rewritten.some((o) => node.start >= o.start && node.end <= o.end);
  const ours = (r: RepeatedProperty) => (r.topLevel && names.some((name) => name.uri === r.uri && name.local === r.local)) || r.occurrences.some(inside);
  const repeats = repeatedProperties(standard).filter((r) => !ours(r));
  const conflicts = repeats.filter((r) => !r.agree);
  if (conflicts.length > 0) throw new ConflictingXmpError(conflicts);
  return repeats.flatMap((r) => r.occurrences.slice(1).map((node) => removal(standard.source, node)));
}

/**
 * A freshly signed tag to write, unless the value is already exactly `uri`
 * and the file carries a valid tag of ours: then that tag is kept (not
 * `fresh`), and nothing is written. The
 * non-XMP content is the same before and after the XMP edit, so the digest
 * of the input is the output's.
 */
function freshTag(parsed: ParsedXmp, signer: TagSigner, digest: Uint8Array, uri: string): { readonly tag: string; readonly fresh: boolean } {
  const existing = firstValue([parsed.standard, parsed.extended], [SERVICE_TAG.uri], SERVICE_TAG.local);
  const kept =
    existing !== undefined &&
    holdsExactly(parsed.standard, parsed.extended, { name: DATA_MINING, value: uri }) &&
    holdsExactly(parsed.standard, parsed.extended, { name: SERVICE_TAG, value: existing }) &&
    signer.accepts(existing, digest, uri);
  return kept ? { tag: existing, fresh: false } : { tag: signer.sign(digest, uri), fresh: true };
}
