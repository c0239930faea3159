/**
 * Write a simple XMP property into a packet by merging: every other property
 * and namespace is kept, an existing value is replaced (never a second one
 * added, in the standard packet or in Extended XMP), and the value is written
 * in element form, `<plus:DataMining>URI</plus:DataMining>`, the form
 * ExifTool and IPTC's reference files use.
 */
import type { XElement, XmpDocument } from './document.js';
import { applyEdits, appendDescription, removal, rewriteAsElement, simpleProperty, valueReplacement, type NewProperty, type TextEdit } from './edit.js';
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

export interface PropertyValue {
  readonly name: SimplePropertyName;
  readonly value: string;
}

/** Whether the packets already carry `value` as the one value of `name`, in the standard packet. */
export function holdsExactly(standard: XmpDocument | undefined, extended: XmpDocument | undefined, { name, value }: PropertyValue): boolean {
  const inStandard = standard ? findProperty(standard, name.uri, name.local) : [];
  const inExtended = extended ? findProperty(extended, name.uri, name.local) : [];
  return inStandard.length === 1 && inExtended.length === 0 && inStandard[0]!.value === value;
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
  return setSimpleProperties(standard, extended, [{ name, value }]);
}

/**
 * The same for several properties (of different names) in one edit, so that
 * the packet is parsed and written once. Properties already exact are left
 * alone; undefined when all are.
 */
export function setSimpleProperties(
  standard: XmpDocument | undefined,
  extended: XmpDocument | undefined,
  properties: readonly PropertyValue[],
): PacketPlan | undefined {
  const changing = properties.filter((p) => !holdsExactly(standard, extended, p));
  if (changing.length === 0) return undefined;

  if (!standard) {
    return { standard: newPacket(simpleDescription(changing.map(({ name, value }) => ({ ...name, value })))), extended: undefined };
  }

  const edits: TextEdit[] = [];
  const appended: NewProperty[] = [];
  const extendedRemovals: TextEdit[] = [];
  for (const { name, value } of changing) {
    const [first, ...rest] = findProperty(standard, name.uri, name.local);
    if (first && first.form === 'element' && first.value !== undefined && !('valueStart' in first.node) && !first.node.selfClosing) {
      edits.push(valueReplacement(first.node, value));
    } else if (first && first.form !== 'attribute') {
      // rdf:resource form, an empty element or a struct: rewrite in element form, same place, same prefix.
      edits.push(rewriteAsElement(standard.source, first.node as XElement, value));
    } else {
      if (first) edits.push(removal(standard.source, first.node));
      appended.push(simpleProperty(name.uri, name.prefix, name.local, value));
    }
    for (const other of rest) edits.push(removal(standard.source, other.node));
    if (extended) for (const other of findProperty(extended, name.uri, name.local)) extendedRemovals.push(removal(extended.source, other.node));
  }
  if (appended.length > 0) edits.push(appendDescription(standard, appended));

  const extendedText = extended && extendedRemovals.length > 0 ? applyEdits(extended.source, extendedRemovals) : undefined;
  return { standard: repack(standard, editBody(standard, edits)), extended: extendedText };
}
