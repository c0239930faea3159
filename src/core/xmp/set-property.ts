/**
 * Write a simple XMP property into a packet by merging: every other property
 * and namespace is kept, an existing value is replaced (never a second one
 * added, in the standard packet or in Extended XMP), and the value is written
 * in element form, `<plus:DataMining>URI</plus:DataMining>`, the form
 * ExifTool and IPTC's reference files use, in the packet's first
 * rdf:Description, where every reader finds it. A Lang Alt property
 * (plus:OtherConstraints) is written the same way, its x-default item set
 * and its other languages kept (lang-alt.ts).
 */
import type { XElement, XmpDocument } from './document.js';
import { applyEdits, prependDescription, removal, rewriteAsElement, simpleProperty, valueReplacement, type NewProperty, type TextEdit } from './edit.js';
import { holdsDefaultText, langAltProperty, otherLanguages, rewriteAsLangAlt, type LangItem } from './lang-alt.js';
import { newDescription, newPacket, repack, type PacketParts } from './packet.js';
import { findProperty, type PropertyOccurrence } from './properties.js';

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
  /**
   * `simple` (the default): a simple value, in element form. `langAlt`: the
   * x-default item of a Lang Alt (rdf:Alt of xml:lang items), the items in
   * other languages the property has kept after it.
   */
  readonly kind?: 'simple' | 'langAlt';
}

/** The property to write as new markup, with the other languages a Lang Alt keeps. */
function newProperty({ name, value, kind }: PropertyValue, others: readonly LangItem[]): NewProperty {
  return kind === 'langAlt' ? langAltProperty(name.uri, name.prefix, name.local, value, others) : simpleProperty(name.uri, name.prefix, name.local, value);
}

/**
 * Where a value we write belongs: in the standard packet's first
 * description, in element form. ImageMagick reads element-form properties
 * only, and stops inside constructs other writers leave in later
 * descriptions; every other reader finds it there too.
 */
function inCanonicalPlace(doc: XmpDocument, occurrence: PropertyOccurrence): boolean {
  return occurrence.description === doc.rdf?.children[0] && occurrence.form === 'element' && occurrence.value !== undefined && !(occurrence.node as XElement).selfClosing;
}

/**
 * Whether the packets already carry `value` as the one value of `name`, in
 * the standard packet's first description, in element form.
 */
export function holdsExactly(standard: XmpDocument | undefined, extended: XmpDocument | undefined, { name, value, kind }: PropertyValue): boolean {
  const inStandard = standard ? findProperty(standard, name.uri, name.local) : [];
  const inExtended = extended ? findProperty(extended, name.uri, name.local) : [];
  if (inStandard.length !== 1 || inExtended.length !== 0) return false;
  const occurrence = inStandard[0]!;
  if (kind === 'langAlt') return occurrence.description === standard!.rdf?.children[0] && holdsDefaultText(occurrence, value);
  return occurrence.value === value && inCanonicalPlace(standard!, occurrence);
}

/** The other languages of the property a Lang Alt write replaces: those of its first occurrence in element form, standard packet first. */
function keptLanguages(standard: XmpDocument | undefined, extended: XmpDocument | undefined, { name, kind }: PropertyValue): LangItem[] {
  if (kind !== 'langAlt') return [];
  const occurrences = [standard, extended].flatMap((doc) => (doc ? findProperty(doc, name.uri, name.local) : []));
  return otherLanguages(occurrences.find((o) => o.form === 'element' && o.value === undefined));
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
 * the packet is parsed and written once, together with `cleanup`, edits of
 * the standard packet that fall outside these properties (duplicates
 * dropped). Properties already exact are left alone; undefined when all are
 * and there is nothing to clean up.
 *
 * Placement: the properties end up together in the packet's first
 * description, in element form. When each already sits there (in element
 * form, or as an rdf:resource, empty or struct element), its value is set in
 * place; otherwise every occurrence is removed and one new description
 * holding them all goes before the packet's other descriptions.
 */
export function setSimpleProperties(
  standard: XmpDocument | undefined,
  extended: XmpDocument | undefined,
  properties: readonly PropertyValue[],
  cleanup: readonly TextEdit[] = [],
): PacketPlan | undefined {
  const changing = properties.filter((p) => !holdsExactly(standard, extended, p));
  if (changing.length === 0 && cleanup.length === 0) return undefined;

  if (!standard) {
    return { standard: newPacket(newDescription(changing.map((p) => newProperty(p, keptLanguages(standard, extended, p))))), extended: undefined };
  }

  const edits: TextEdit[] = [...cleanup];
  const extendedRemovals: TextEdit[] = [];
  const first = standard.rdf?.children[0];
  const occurrences = properties.map(({ name }) => findProperty(standard, name.uri, name.local));
  const inPlace = occurrences.every(([o]) => o !== undefined && o.description === first && o.form !== 'attribute');
  if (inPlace) {
    for (const property of changing) {
      const { name, value } = property;
      const [occurrence, ...rest] = occurrences[properties.findIndex((p) => p.name === name)]!;
      const node = occurrence!.node as XElement;
      // A Lang Alt, whatever shape it had: its x-default set, its other languages kept, same place, same prefix.
      if (property.kind === 'langAlt') edits.push(rewriteAsLangAlt(standard.source, node, value, keptLanguages(standard, extended, property)));
      else if (occurrence!.form === 'element' && occurrence!.value !== undefined && !node.selfClosing) edits.push(valueReplacement(node, value));
      // rdf:resource form, an empty element or a struct: rewrite in element form, same place, same prefix.
      else edits.push(rewriteAsElement(standard.source, node, value));
      for (const other of rest) edits.push(removal(standard.source, other.node));
    }
  } else {
    const news = properties.map((p) => newProperty(p, keptLanguages(standard, extended, p)));
    for (const occurrence of occurrences.flat()) edits.push(removal(standard.source, occurrence.node));
    edits.push(prependDescription(standard, news));
  }
  for (const { name } of changing) {
    if (extended) for (const other of findProperty(extended, name.uri, name.local)) extendedRemovals.push(removal(extended.source, other.node));
  }

  const extendedText = extended && extendedRemovals.length > 0 ? applyEdits(extended.source, extendedRemovals) : undefined;
  return { standard: repack(standard, editBody(standard, edits)), extended: extendedText };
}
