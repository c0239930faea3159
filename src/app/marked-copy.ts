/**
 * Whether a file is already the marked copy of another: it opts out (with
 * the value asked for, when one is, and the plus:OtherConstraints text asked
 * for with it), and its provenance tag signs the
 * other's content digest (the file without its XMP: what marking leaves
 * untouched). A re-run of a batch takes such an output as done, without
 * marking or paying again. The tag's signature is not checked here: this is
 * about which file it was made from, not who made it.
 */
import { readMetadata } from '../core/metadata.js';
import { digestClaim, parseTag } from '../core/provenance/tag.js';
import { DMI_VOCAB_PREFIX } from '../core/xmp/vocabulary.js';

export interface MarkedCopy {
  /** The DMI-PROHIBITED* code it carries. */
  readonly value: string;
}

/** The opt-out `copy` carries if it is the marked copy of `original` (the same bytes for an in-place file), else undefined. */
export function markedCopyOf(copy: Uint8Array, original: Uint8Array, value?: string, otherConstraints?: string): MarkedCopy | undefined {
  try {
    const marked = readMetadata(copy);
    const optOut = marked.facts.dataMining.find((d) => d.prohibited)?.value;
    if (optOut === undefined || (value !== undefined && optOut !== `${DMI_VOCAB_PREFIX}${value}`)) return undefined;
    if (otherConstraints !== undefined && marked.facts.otherConstraints !== otherConstraints) return undefined;
    const tag = marked.facts.serviceTag === undefined ? undefined : parseTag(marked.facts.serviceTag);
    if (!tag || tag.claims.dmi !== optOut) return undefined;
    const digest = copy === original ? marked.digest() : readMetadata(original).digest();
    return tag.claims.sha256 === digestClaim(digest) ? { value: optOut.slice(DMI_VOCAB_PREFIX.length) } : undefined;
  } catch {
    return undefined;
  }
}

/** The DMI-PROHIBITED* code a file already carries, or undefined (also for a file that cannot be read as an image). */
export function optOutOf(bytes: Uint8Array): string | undefined {
  try {
    return readMetadata(bytes).facts.dataMining.find((d) => d.prohibited)?.value.slice(DMI_VOCAB_PREFIX.length);
  } catch {
    return undefined;
  }
}
