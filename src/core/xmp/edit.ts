/**
 * Edit XMP packets as text, guided by the parsed tree: remove a property,
 * add an rdf:Description (at the end or the front), rewrite a value. Every
 * character outside the spans we change stays as it was, so other
 * properties, namespaces, comments and formatting survive an edit exactly.
 */
import type { XAttr, XElement, XmpDocument } from './document.js';
import { NS } from './namespaces.js';

export interface TextEdit {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/**
 * Apply non-overlapping edits to `source`, in one pass: a packet may need
 * thousands of edits (one per duplicate property), and splicing the string
 * once per edit would copy it that many times.
 */
export function applyEdits(source: string, edits: readonly TextEdit[]): string {
  const sorted = [...edits].sort((a, b) => a.start - b.start || a.end - b.end);
  const parts: string[] = [];
  let pos = 0;
  for (const edit of sorted) {
    if (edit.start < pos) throw new Error('internal: overlapping XMP edits');
    parts.push(source.slice(pos, edit.start), edit.text);
    pos = edit.end;
  }
  parts.push(source.slice(pos));
  return parts.join('');
}

export function escapeText(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function escapeAttr(value: string): string {
  return escapeText(value).replace(/"/g, '&quot;');
}

const isBlank = (text: string): boolean => /^[ \t\r\n]*$/.test(text);

/** An edit deleting an element or attribute together with the whitespace before it. */
export function removal(source: string, node: XElement | XAttr): TextEdit {
  let start = node.start;
  while (start > 0 && ' \t\r\n'.includes(source[start - 1]!)) start--;
  return { start, end: node.end, text: '' };
}

/** Whitespace that starts the line `index` is on, when only whitespace precedes it there. */
function lineIndent(source: string, index: number): string | undefined {
  const lineStart = source.lastIndexOf('\n', index - 1) + 1;
  const before = source.slice(lineStart, index);
  return isBlank(before) ? before : undefined;
}

/** The in-scope prefix for `uri` at `element`, if a non-empty one is bound to it. */
function prefixFor(element: XElement | undefined, uri: string): string | undefined {
  if (!element) return undefined;
  for (const [prefix, bound] of element.bindings) if (bound === uri && prefix !== '') return prefix;
  return undefined;
}

export interface NewProperty {
  readonly uri: string;
  readonly preferredPrefix: string;
  /** Markup for the property, given the prefix chosen for its namespace and the RDF namespace's prefix where it goes. */
  readonly markup: (prefix: string, rdfPrefix: string) => string;
}

/**
 * One prefix per namespace URI, the preferred one unless `taken` or another
 * namespace's already holds it (then `prefix1`, `prefix2`, ...).
 */
export function choosePrefixes(entries: ReadonlyArray<{ uri: string; preferredPrefix: string }>, taken: Iterable<string>): Map<string, string> {
  const prefixes = new Map<string, string>();
  const used = new Set(taken);
  for (const { uri, preferredPrefix } of entries) {
    if (prefixes.has(uri)) continue;
    let prefix = preferredPrefix;
    for (let n = 1; used.has(prefix); n++) prefix = `${preferredPrefix}${n}`;
    used.add(prefix);
    prefixes.set(uri, prefix);
  }
  return prefixes;
}

/**
 * An edit that appends one rdf:Description holding `properties` to the
 * packet, creating rdf:RDF when the packet has none. The new description
 * declares the namespaces it uses itself, so it is valid whatever the rest of
 * the packet binds. `asFirst`: the packet has no description, and this one
 * is to be the first.
 */
export function appendDescription(doc: XmpDocument, properties: NewProperty | readonly NewProperty[], asFirst = false): TextEdit {
  const list = Array.isArray(properties) ? (properties as readonly NewProperty[]) : [properties as NewProperty];
  const container = doc.rdf ?? doc.root;
  const existing = doc.rdf?.children[0];
  const closeIndent = container.selfClosing ? undefined : lineIndent(doc.source, container.closeStart);
  const indent = (existing && lineIndent(doc.source, existing.start)) ?? `${closeIndent ?? ''} `;
  let markup = descriptionMarkup(doc, list, indent, asFirst);
  if (!doc.rdf) {
    markup = `${indent}<rdf:RDF xmlns:rdf="${NS.rdf}">\n${markup.replace(/^/gm, ' ')}\n${indent}</rdf:RDF>`;
  }

  if (container.selfClosing) {
    const slash = doc.source.lastIndexOf('/', container.openEnd - 1);
    return { start: slash, end: container.openEnd, text: `>\n${markup}\n</${container.qname}>` };
  }
  if (closeIndent !== undefined) {
    const lineStart = container.closeStart - closeIndent.length;
    return { start: lineStart, end: lineStart, text: `${markup}\n` };
  }
  return { start: container.closeStart, end: container.closeStart, text: `\n${markup}\n` };
}

/**
 * An edit that puts one rdf:Description holding `properties` before every
 * other description of the packet, so that it is the packet's first: some
 * readers stop inside constructs other writers leave in later descriptions
 * (ImageMagick's XML parser never gets past Photoshop's
 * `stEvt:changed="/"`), and every reader starts at the top. A packet
 * without descriptions gets it as for appendDescription.
 */
export function prependDescription(doc: XmpDocument, properties: readonly NewProperty[]): TextEdit {
  const first = doc.rdf?.children[0];
  if (!first) return appendDescription(doc, properties, true);
  const indent = lineIndent(doc.source, first.start);
  if (indent === undefined) return { start: first.start, end: first.start, text: descriptionMarkup(doc, properties, '', true) };
  const lineStart = first.start - indent.length;
  return { start: lineStart, end: lineStart, text: `${descriptionMarkup(doc, properties, indent, true)}\n` };
}

/**
 * One rdf:Description with `list`, each line indented by `indent`, to go
 * before the packet's descriptions (`front`) or after them. It declares the
 * namespaces it uses itself (and rdf where the packet binds it nowhere
 * above), so it is valid whatever the rest of the packet binds, and it takes
 * the subject the packet's descriptions share.
 *
 * Prefixes. ImageMagick matches properties by their name as written, so a
 * property goes under its usual prefix (plus), never one the packet gives
 * another namespace. Adobe's XMP Toolkit as exiv2 0.27 carries it keeps one
 * prefix per namespace, the one declared last so far, names each property
 * with the prefix current when it is parsed, and exiv2 then refuses the whole
 * packet ("Schema namespace URI and prefix mismatch") when a property's
 * prefix is not the namespace's final one. So a description at the front that
 * uses a namespace the packet declares further down under another prefix
 * declares that prefix too, last: its property is then named as the packet's
 * are. One at the end takes the prefix the packet declares last, which stays
 * the final one.
 */
function descriptionMarkup(doc: XmpDocument, list: readonly NewProperty[], indent: string, front = false): string {
  // Use the packet's own rdf prefix where one is bound; otherwise bind 'rdf'
  // on the element we create (the new rdf:RDF, or the description itself).
  const boundRdf = doc.rdf ? prefixFor(doc.rdf, NS.rdf) : undefined;
  const rdfPrefix = boundRdf ?? 'rdf';
  const declaresRdf = doc.rdf !== undefined && boundRdf === undefined;
  const declarations = namespaceDeclarations(doc.root);
  // Declarations the parser meets after the new description: inside the existing ones, for one at the front; none for one at the end.
  const after = front ? namespaceDeclarations(...(doc.rdf?.children ?? [])) : [];
  const takenElsewhere = (prefix: string, uri: string) => declarations.some((d) => d.prefix === prefix && d.uri !== uri);
  const used = new Set([rdfPrefix]);
  const prefixes = new Map<string, string>();
  const trailing = new Map<string, string>();
  for (const { uri, preferredPrefix } of list) {
    if (prefixes.has(uri)) continue;
    const lastInPacket = declarations.findLast((d) => d.uri === uri && d.prefix !== '')?.prefix;
    const base = !front && lastInPacket !== undefined ? lastInPacket : preferredPrefix;
    let prefix = base;
    for (let n = 1; used.has(prefix) || takenElsewhere(prefix, uri); n++) prefix = `${base}${n}`;
    used.add(prefix);
    prefixes.set(uri, prefix);
    const lastAfter = after.findLast((d) => d.uri === uri)?.prefix;
    if (lastAfter !== undefined && lastAfter !== '' && lastAfter !== prefix && !used.has(lastAfter)) {
      used.add(lastAfter);
      trailing.set(uri, lastAfter);
    }
  }
  const about = escapeAttr(aboutOf(doc));
  const nsDecls =
    (declaresRdf ? ` xmlns:${rdfPrefix}="${NS.rdf}"` : '') +
    [...prefixes].map(([uri, prefix]) => ` xmlns:${prefix}="${uri}"`).join('') +
    [...trailing].map(([uri, prefix]) => ` xmlns:${prefix}="${uri}"`).join('');
  return (
    `${indent}<${rdfPrefix}:Description ${rdfPrefix}:about="${about}"${nsDecls}>\n` +
    list.map((property) => `${indent} ${property.markup(prefixes.get(property.uri)!, rdfPrefix)}\n`).join('') +
    `${indent}</${rdfPrefix}:Description>`
  );
}

/** Every namespace declaration in the given elements' subtrees, in document order ('' is a default namespace). */
function namespaceDeclarations(...elements: readonly XElement[]): Array<{ readonly prefix: string; readonly uri: string }> {
  const found: Array<{ prefix: string; uri: string }> = [];
  const visit = (element: XElement): void => {
    for (const attr of element.attrs) {
      if (attr.uri === NS.xmlns) found.push({ prefix: attr.prefix === 'xmlns' ? attr.local : '', uri: attr.value });
    }
    element.children.forEach(visit);
  };
  elements.forEach(visit);
  return found;
}

/**
 * The subject every description of the packet must share: the first
 * description's rdf:about (or the unqualified `about` of pre-2004 packets).
 */
export function aboutOf(doc: XmpDocument): string {
  const about = doc.rdf?.children[0]?.attrs.find((a) => a.local === 'about' && (a.uri === NS.rdf || a.uri === ''));
  return about?.value ?? '';
}

/** An edit replacing the simple value of an element or attribute property. */
export function valueReplacement(node: XElement | XAttr, value: string): TextEdit {
  if ('valueStart' in node) return { start: node.valueStart, end: node.valueEnd, text: escapeAttr(value) };
  if (node.selfClosing) throw new Error('internal: cannot set the text of an empty element in place');
  return { start: node.openEnd, end: node.closeStart, text: escapeText(value) };
}

/**
 * An edit rewriting a property element (rdf:resource form, empty, or a struct)
 * as `<qname>value</qname>` in the same place, keeping the namespace
 * declarations its start tag made.
 */
export function rewriteAsElement(source: string, element: XElement, value: string): TextEdit {
  const decls = element.attrs
    .filter((a) => a.uri === NS.xmlns || a.qname === 'xmlns')
    .map((a) => ` ${source.slice(a.start, a.end).trim()}`)
    .join('');
  return { start: element.start, end: element.end, text: `<${element.qname}${decls}>${escapeText(value)}</${element.qname}>` };
}

/** A simple property in element form, e.g. `<plus:DataMining>URI</plus:DataMining>`. */
export function simpleProperty(uri: string, preferredPrefix: string, local: string, value: string): NewProperty {
  return { uri, preferredPrefix, markup: (p) => `<${p}:${local}>${escapeText(value)}</${p}:${local}>` };
}
