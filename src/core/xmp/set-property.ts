/**
 * Write a simple XMP property into a packet by merging: every other property
 * and namespace is kept, an existing value is replaced (never a second one
 * added, in the standard packet or in Extended XMP), and the value is written
 * in element form, `<plus:DataMining>URI</plus:DataMining>`, the form
 * ExifTool and IPTC's reference files use.
 */
import type { XElement, XmpDocument } from './document.js';
import { applyEdits, appendDescription, removal, rewriteAsElement, simpleProperty, valueReplacement, type TextEdit } from './edit.js';
import { newPacket, repack, simpleDescription, type PacketParts } from './packet.js';
import { findProperty } from './properties.js';

export interface SimplePropertyName {
  readonly uri: string;
  /** The prefix used when we declare the namespace ourselves. */
  readonly prefix: string;
  readonly local: string;
}

export interface PacketPlan {
  /** The standard packet to write. */
  readonly standard: PacketParts;
  /** The Extended XMP text after the edit, when the edit changed it. */
  readonly extended: string | undefined;
}

/** Apply edits that all fall inside the root element and return the new root text. */
export function editBody(doc: XmpDocument, edits: readonly TextEdit[]): string {
  const delta = edits.reduce((n, e) => n + e.text.length - (e.end - e.start), 0);
  return applyEdits(doc.source, edits).slice(doc.root.start, doc.root.end + delta);
}

/**
 * Plan the packets that carry `value` as the one value of `name`. Returns
 * undefined when the packet already says exactly that, once, in the standard
 * packet: then nothing must change.
 */
export function setSimpleProperty(
  standard: XmpDocument | undefined,
  extended: XmpDocument | undefined,
  name: SimplePropertyName,
  value: string,
): PacketPlan | undefined {
  const inStandard = standard ? findProperty(standard, name.uri, name.local) : [];
  const inExtended = extended ? findProperty(extended, name.uri, name.local) : [];
  if (inStandard.length === 1 && inExtended.length === 0 && inStandard[0]!.value === value) return undefined;

  if (!standard) return { standard: newPacket(simpleDescription(name.uri, name.prefix, name.local, value)), extended: undefined };

  const edits: TextEdit[] = [];
  const [first, ...rest] = inStandard;
  if (first && first.form === 'element' && first.value !== undefined && !('valueStart' in first.node) && !first.node.selfClosing) {
    edits.push(valueReplacement(first.node, value));
  } else if (first && first.form !== 'attribute') {
    // rdf:resource form, an empty element or a struct: rewrite in element form, same place, same prefix.
    edits.push(rewriteAsElement(standard.source, first.node as XElement, value));
  } else {
    if (first) edits.push(removal(standard.source, first.node));
    edits.push(appendDescription(standard, simpleProperty(name.uri, name.prefix, name.local, value)));
  }
  for (const other of rest) edits.push(removal(standard.source, other.node));

  const extendedText =
    extended && inExtended.length > 0 ? applyEdits(extended.source, inExtended.map((o) => removal(extended.source, o.node))) : undefined;
  return { standard: repack(standard, editBody(standard, edits)), extended: extendedText };
}
