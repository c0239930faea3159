/**
 * Parse an XMP packet into a small element tree that remembers where every
 * element and attribute sits in the text, so that edits can be made as text
 * surgery: everything we do not touch stays exactly as it was.
 *
 * Parsing is namespace-aware (saxes) and refuses what XMP never needs and
 * attackers love: DTDs and entity declarations (no expansion can ever happen),
 * packets over MAX_XMP_BYTES, nesting deeper than MAX_XMP_DEPTH, more than one
 * root, and a root that is not x:xmpmeta or rdf:RDF.
 */
import { SaxesParser, type SaxesTagNS } from 'saxes';
import { InvalidXmpError } from '../../errors.js';
import { MAX_XMP_BYTES } from '../formats/handler.js';
import { NS } from './namespaces.js';

/** Deeper than any real packet (Photoshop history structs reach about 10). */
export const MAX_XMP_DEPTH = 64;
/**
 * Attributes (namespace declarations included) on one element: far more
 * than any writer puts there (Camera Raw's settings, the most we know of,
 * are a few hundred). One element carrying hundreds of thousands makes the
 * parser's per-tag bookkeeping, and ours, superlinear: 8 MiB of them took
 * 3.9 s, against about 1 s for 8 MiB of ordinary markup.
 */
export const MAX_XMP_ATTRIBUTES = 4096;

export interface XName {
  readonly uri: string;
  readonly local: string;
  readonly prefix: string;
  /** The name as written: `prefix:local` or `local`. */
  readonly qname: string;
}

export interface XAttr extends XName {
  readonly value: string;
  /** Span of `name="value"` in the source. */
  readonly start: number;
  readonly end: number;
  /** Span of the raw value between the quotes. */
  readonly valueStart: number;
  readonly valueEnd: number;
}

export interface XElement extends XName {
  readonly attrs: readonly XAttr[];
  readonly children: XElement[];
  /** Character data directly inside this element (CDATA included), decoded. */
  text: string;
  /** Index of the `<` of the start tag. */
  readonly start: number;
  /** Index just after the `>` of the start tag. */
  readonly openEnd: number;
  /** Index of the `<` of the end tag; equals openEnd for `<a/>`. */
  closeStart: number;
  /** Index just after the element. */
  end: number;
  readonly selfClosing: boolean;
  readonly parent: XElement | undefined;
  /** Namespace bindings in scope here: prefix ('' for the default) to URI. */
  readonly bindings: ReadonlyMap<string, string>;
}

export interface XmpDocument {
  /** The packet text as given; every span indexes into it. */
  readonly source: string;
  readonly root: XElement;
  /** The rdf:RDF element (the root itself for a bare RDF packet), if any. */
  readonly rdf: XElement | undefined;
  /** Span of the `<?xpacket begin ...?>` processing instruction, if present. */
  readonly header: { readonly start: number; readonly end: number } | undefined;
  /** Span of the `<?xpacket end ...?>` processing instruction, if present. */
  readonly trailer: { readonly start: number; readonly end: number } | undefined;
}

const DTD = /<!(DOCTYPE|ENTITY)/i;
const HEADER = /<\?xpacket\s+begin\s*=[^>]*\?>/;
const TRAILER = /<\?xpacket\s+end\s*=\s*(['"])[rw]\1\s*\?>/;
const ATTRIBUTE = /\s+([^\s=/>]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/gy;

export function isXName(el: XName, uri: string, local: string): boolean {
  return el.uri === uri && el.local === local;
}

/**
 * Where the packet's XML ends: after the first xpacket trailer (XMP Part 1,
 * 7.3: the trailer ends the packet; a tool that rewrites a packet in place
 * with a shorter one can leave the old packet's tail behind it, as exempi
 * does in PNG), else after the last `>`.
 */
function xmlEnd(text: string): { end: number; trailer: { start: number; end: number } | undefined } {
  const match = TRAILER.exec(text);
  if (match) return { end: match.index + match[0].length, trailer: { start: match.index, end: match.index + match[0].length } };
  return { end: text.lastIndexOf('>') + 1, trailer: undefined };
}

export function parseXmp(text: string): XmpDocument {
  if (text.length > MAX_XMP_BYTES) throw new InvalidXmpError(`the packet is larger than ${MAX_XMP_BYTES} bytes`);
  if (DTD.test(text)) throw new InvalidXmpError('DOCTYPE and ENTITY declarations are not allowed in XMP');

  // NUL is never legal in XML, so it cannot carry meaning; writers that blank
  // data in place or pad a segment leave runs of it. Read it as a space (same
  // length, so every span still indexes the text as given).
  const cleaned = text.includes('\0') ? text.replace(/\0/g, ' ') : text;
  // Anything after the packet's end is not part of the XML.
  const { end, trailer } = xmlEnd(cleaned);
  const source = cleaned.slice(0, end);
  const headerMatch = HEADER.exec(source);
  const header = headerMatch ? { start: headerMatch.index, end: headerMatch.index + headerMatch[0].length } : undefined;

  const parser = new SaxesParser({ xmlns: true, position: true });
  const stack: XElement[] = [];
  let root: XElement | undefined;
  let failure: string | undefined;
  let pendingStart = -1;
  let attributes = 0;

  // Stop at the first error: saxes would go on and build an Error (with a
  // stack trace) for every later one, seconds for a packet of 64 KB of them.
  parser.on('error', (error) => {
    failure ??= error.message;
    throw new StopParsing();
  });
  parser.on('opentagstart', () => {
    if (stack.length >= MAX_XMP_DEPTH) {
      failure ??= `elements nested deeper than ${MAX_XMP_DEPTH}`;
      throw new StopParsing();
    }
    pendingStart = source.lastIndexOf('<', parser.position - 1);
    attributes = 0;
  });
  parser.on('attribute', () => {
    if (++attributes > MAX_XMP_ATTRIBUTES) {
      failure ??= `more than ${MAX_XMP_ATTRIBUTES} attributes on one element`;
      throw new StopParsing();
    }
  });
  parser.on('opentag', (tag: SaxesTagNS) => {
    const parent = stack.at(-1);
    const element = makeElement(source, tag, pendingStart, parser.position, parent);
    if (parent) parent.children.push(element);
    else root = element;
    stack.push(element);
  });
  parser.on('closetag', () => {
    const element = stack.pop()!;
    element.end = parser.position;
    element.closeStart = element.selfClosing ? element.openEnd : source.lastIndexOf('</', parser.position - 1);
  });
  const onText = (text: string): void => {
    const current = stack.at(-1);
    if (current) current.text += text;
  };
  parser.on('text', onText);
  parser.on('cdata', onText);

  try {
    parser.write(source).close();
  } catch (error) {
    if (!(error instanceof StopParsing)) failure ??= error instanceof Error ? error.message : String(error);
  }
  if (failure !== undefined) throw new InvalidXmpError(`not well-formed XML (${failure})`);
  if (!root) throw new InvalidXmpError('the packet has no root element');

  let rdf: XElement | undefined;
  if (isXName(root, NS.rdf, 'RDF')) rdf = root;
  else if (root.uri === NS.x && (root.local === 'xmpmeta' || root.local === 'xapmeta')) {
    rdf = root.children.find((c) => isXName(c, NS.rdf, 'RDF'));
  } else {
    throw new InvalidXmpError(`the root element is <${root.qname}>, not x:xmpmeta or rdf:RDF`);
  }
  return { source: cleaned, root, rdf, header, trailer };
}

class StopParsing extends Error {}

function makeElement(source: string, tag: SaxesTagNS, start: number, openEnd: number, parent: XElement | undefined): XElement {
  const declared = Object.values(tag.attributes).filter((a) => a.prefix === 'xmlns' || a.name === 'xmlns');
  // Share the parent's bindings unless this element declares namespaces.
  let bindings: ReadonlyMap<string, string> = parent?.bindings ?? new Map();
  if (declared.length > 0) {
    const own = new Map(bindings);
    for (const attr of declared) own.set(attr.prefix === 'xmlns' ? attr.local : '', attr.value);
    bindings = own;
  }
  const names = Object.keys(tag.attributes);
  const spans = names.length > 0 ? attributeSpans(source, start + 1 + tag.name.length, openEnd) : undefined;
  const attrs: XAttr[] = [];
  for (const name of names) {
    const attr = tag.attributes[name]!;
    attrs.push({ uri: attr.uri, local: attr.local, prefix: attr.prefix, qname: attr.name, value: attr.value, ...spans!.get(name)! });
  }
  return {
    uri: tag.uri,
    local: tag.local,
    prefix: tag.prefix,
    qname: tag.name,
    attrs,
    children: [],
    text: '',
    start,
    openEnd,
    closeStart: openEnd,
    end: openEnd,
    selfClosing: tag.isSelfClosing,
    parent,
    bindings,
  };
}

/**
 * Locate each attribute of a start tag in the source. saxes has already
 * checked the tag is well-formed, so this simple scanner cannot be misled.
 */
function attributeSpans(source: string, from: number, to: number) {
  const spans = new Map<string, { start: number; end: number; valueStart: number; valueEnd: number }>();
  ATTRIBUTE.lastIndex = from;
  for (;;) {
    const match = ATTRIBUTE.exec(source);
    if (!match || match.index >= to) break;
    const end = match.index + match[0].length;
    const raw = match[2] ?? match[3] ?? '';
    spans.set(match[1]!, { start: match.index, end, valueStart: end - 1 - raw.length, valueEnd: end - 1 });
  }
  return spans;
}

/** The node elements of the packet: rdf:Description (or typed nodes) under rdf:RDF. */
export function descriptions(doc: XmpDocument): XElement[] {
  return doc.rdf ? doc.rdf.children : [];
}
