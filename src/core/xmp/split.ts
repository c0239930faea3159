/**
 * Keep a JPEG's standard XMP packet within one segment. When a merged packet
 * no longer fits, padding goes first; then the largest top-level properties
 * move to Extended XMP (never plus:DataMining, which stays where exiv2 and
 * other readers that ignore Extended XMP still see it, nor the provenance tag
 * that signs it), and the standard packet
 * names the extension in xmpNote:HasExtendedXMP.
 */
import { InvalidXmpError } from '../../errors.js';
import { parseXmp, type XAttr, type XElement, type XmpDocument } from './document.js';
import { aboutOf, appendDescription, escapeAttr, escapeText, removal, rewriteAsElement, simpleProperty, valueReplacement, type TextEdit } from './edit.js';
import { editBody } from './set-property.js';
import { NS } from './namespaces.js';
import { byteLength, serialise, DEFAULT_PADDING, type PacketParts } from './packet.js';
import { findProperty, properties } from './properties.js';

/** Stands in for the GUID until the extension's MD5 is known; same length as a GUID. */
const GUID_PLACEHOLDER = '0'.repeat(32);

export interface FittedPackets {
  readonly standard: PacketParts;
  /** A new or changed Extended XMP serialisation, when properties had to move. */
  readonly extended: string | undefined;
}

function hasExtendedXmp(): ReturnType<typeof simpleProperty> {
  return simpleProperty(NS.xmpNote, 'xmpNote', 'HasExtendedXMP', GUID_PLACEHOLDER);
}

/**
 * `pinned`: further properties that stay in the standard packet, beside the
 * value and the tag (the plus:OtherConstraints written with
 * DMI-PROHIBITED-SEECONSTRAINT, which it explains).
 */
export function fitStandardPacket(parts: PacketParts, extended: string | undefined, limit: number, pinned: ReadonlyArray<{ readonly uri: string; readonly local: string }> = []): FittedPackets {
  if (byteLength(serialise(parts)) <= limit) return { standard: parts, extended: undefined };
  const bare = byteLength(serialise({ ...parts, padding: 0 }));
  if (bare <= limit) return { standard: { ...parts, padding: Math.min(parts.padding, limit - bare) }, extended: undefined };

  const doc = parseXmp(serialise({ ...parts, padding: 0 }));
  const edits: TextEdit[] = [];
  let size = bare;
  if (findProperty(doc, NS.xmpNote, 'HasExtendedXMP').length === 0) {
    const edit = appendDescription(doc, hasExtendedXmp());
    edits.push(edit);
    size += byteLength(edit.text);
  }
  const movable = [...properties(doc)]
    .filter((p) => !(p.name.uri === NS.plus && p.name.local === 'DataMining'))
    .filter((p) => !(p.name.uri === NS.optmark && p.name.local === 'ServiceTag'))
    .filter((p) => !(p.name.uri === NS.xmpNote && p.name.local === 'HasExtendedXMP'))
    .filter((p) => !pinned.some((name) => p.name.uri === name.uri && p.name.local === name.local))
    .map((p) => ({ node: p.node, removal: removal(doc.source, p.node) }))
    .map((p) => ({ ...p, bytes: byteLength(doc.source.slice(p.removal.start, p.removal.end)) }))
    .sort((a, b) => b.bytes - a.bytes);
  const moved: Array<XElement | XAttr> = [];
  for (const candidate of movable) {
    if (size <= limit) break;
    edits.push(candidate.removal);
    moved.push(candidate.node);
    size -= candidate.bytes;
  }
  if (size > limit) throw new InvalidXmpError(`the standard XMP packet cannot be brought under ${limit} bytes`);

  const standard: PacketParts = { ...parts, body: editBody(doc, edits), padding: 0 };
  const fitted = byteLength(serialise(standard));
  const descriptions = moved
    .sort((a, b) => a.start - b.start)
    .map((node) => movedDescription(doc, node));
  return {
    standard: { ...standard, padding: Math.min(DEFAULT_PADDING, limit - fitted) },
    extended: appendToExtended(extended, descriptions),
  };
}

/** Set xmpNote:HasExtendedXMP in the standard packet to `guid` (the packet keeps its size). */
export function setExtendedGuid(parts: PacketParts, guid: string): PacketParts {
  const doc = parseXmp(serialise({ ...parts, padding: 0 }));
  const existing = findProperty(doc, NS.xmpNote, 'HasExtendedXMP')[0];
  let edit: TextEdit;
  if (existing?.form === 'attribute' || (existing?.form === 'element' && existing.value !== undefined && !(existing.node as XElement).selfClosing)) {
    edit = valueReplacement(existing.node, guid);
  } else if (existing) {
    edit = rewriteAsElement(doc.source, existing.node as XElement, guid);
  } else {
    edit = appendDescription(doc, simpleProperty(NS.xmpNote, 'xmpNote', 'HasExtendedXMP', guid));
  }
  const body = editBody(doc, [edit]);
  return { ...parts, body, padding: Math.max(0, parts.padding - (byteLength(body) - byteLength(parts.body))) };
}

/**
 * One rdf:Description carrying a property moved out of the standard packet.
 * It declares every prefix the property uses, with the binding it had, so the
 * property means exactly what it meant.
 */
function movedDescription(doc: XmpDocument, node: XElement | XAttr): string {
  const element = 'children' in node ? node : undefined;
  const description = element ? element.parent! : findOwner(doc, node as XAttr);
  const bindings = element ? element.bindings : description.bindings;
  const used = new Set<string>();
  const visit = (el: XElement): void => {
    used.add(el.prefix);
    for (const attr of el.attrs) if (attr.prefix && attr.prefix !== 'xmlns') used.add(attr.prefix);
    el.children.forEach(visit);
  };
  if (element) visit(element);
  else used.add(node.prefix);
  used.delete('xml');
  // The destination binds rdf itself; a property that rebinds it cannot move.
  if (used.has('rdf') && bindings.get('rdf') !== NS.rdf) throw new InvalidXmpError('a property rebinds the rdf prefix');
  used.delete('rdf');
  const decls = [...used]
    .filter((p) => bindings.has(p))
    .map((p) => (p === '' ? ` xmlns="${bindings.get(p)}"` : ` xmlns:${p}="${bindings.get(p)}"`))
    .join('');
  const lang = inheritedLang(element ?? description);
  const markup = element
    ? doc.source.slice(element.start, element.end)
    : `<${node.qname}>${escapeText((node as XAttr).value)}</${node.qname}>`;
  return `<rdf:Description rdf:about="${escapeAttr(aboutOf(doc))}"${decls}${lang}>${markup}</rdf:Description>`;
}

function findOwner(doc: XmpDocument, attr: XAttr): XElement {
  const owner = doc.rdf?.children.find((d) => d.attrs.includes(attr));
  if (!owner) throw new Error('internal: attribute property without its description');
  return owner;
}

function inheritedLang(element: XElement): string {
  for (let el: XElement | undefined = element.parent; el; el = el.parent) {
    const lang = el.attrs.find((a) => a.uri === NS.xml && a.local === 'lang');
    if (lang) return ` xml:lang="${escapeAttr(lang.value)}"`;
  }
  return '';
}

/** Add descriptions to an Extended XMP serialisation, creating one when there is none. */
function appendToExtended(extended: string | undefined, descriptions: readonly string[]): string {
  const doc = extended === undefined ? undefined : parseXmp(extended);
  if (!extended || !doc?.rdf || doc.rdf.selfClosing) {
    const lines = descriptions.map((d) => `  ${d}\n`).join('');
    return `<x:xmpmeta xmlns:x="${NS.x}">\n <rdf:RDF xmlns:rdf="${NS.rdf}">\n${lines} </rdf:RDF>\n</x:xmpmeta>\n`;
  }
  // Our descriptions use the prefix rdf; bind it on each when the packet does not.
  const bindRdf = doc.rdf.bindings.get('rdf') === NS.rdf ? '' : ` xmlns:rdf="${NS.rdf}"`;
  const lines = descriptions.map((d) => `  ${d.replace('<rdf:Description', `<rdf:Description${bindRdf}`)}\n`).join('');
  return extended.slice(0, doc.rdf.closeStart) + lines + extended.slice(doc.rdf.closeStart);
}
