/**
 * The XMP packet wrapper (XMP Specification Part 1, 7.3): `<?xpacket begin?>`,
 * the serialised `x:xmpmeta`, whitespace padding that lets editors change the
 * packet in place, and `<?xpacket end="w"?>`. A standard packet we write always
 * has a valid wrapper; an Extended XMP serialisation never has one.
 */
import type { XmpDocument } from './document.js';
import { choosePrefixes, type NewProperty } from './edit.js';
import { NS } from './namespaces.js';

export const XPACKET_ID = 'W5M0MpCehiHzreSzNTczkc9d';
export const XPACKET_HEADER = `<?xpacket begin="\uFEFF" id="${XPACKET_ID}"?>`;
export const XPACKET_TRAILER = '<?xpacket end="w"?>';
/** Padding for a new packet, or when an edit eats most of the old padding (Adobe uses 2 KB). */
export const DEFAULT_PADDING = 2048;
/** Below this much padding left after an edit, we restore DEFAULT_PADDING. */
const MIN_PADDING = 512;
export const TOOLKIT = 'optmark';

/** A packet taken apart so that its padding can be sized independently. */
export interface PacketParts {
  /** Everything before the root element, xpacket header included. */
  readonly head: string;
  /** The root element (x:xmpmeta), as text. */
  readonly body: string;
  /** Bytes of whitespace padding between the body and the trailer. */
  readonly padding: number;
  /** The xpacket trailer. */
  readonly tail: string;
}

export function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** Whitespace padding of `bytes` bytes: a newline, then lines of 100 characters as ExifTool writes. */
export function paddingText(bytes: number): string {
  if (bytes <= 0) return '';
  let out = '\n';
  while (out.length + 100 <= bytes) out += `${' '.repeat(99)}\n`;
  return out + ' '.repeat(bytes - out.length);
}

export function serialise(parts: PacketParts): string {
  return parts.head + parts.body + paddingText(parts.padding) + parts.tail;
}

/**
 * Rebuild `doc`'s wrapper around an edited root element. Padding shrinks by
 * what the edit added, so the packet keeps its size, as the XMP padding is
 * meant to be used; when too little would be left, it is reset to 2 KB.
 */
export function repack(doc: XmpDocument, body: string): PacketParts {
  const { source, root, header, trailer } = doc;
  const between = trailer ? source.slice(root.end, trailer.start) : '';
  const blank = /^[ \t\r\n]*$/.test(between);
  const oldPadding = blank ? between.length : 0;
  const growth = byteLength(body) - byteLength(source.slice(root.start, root.end));
  const keep = header !== undefined && trailer !== undefined && oldPadding - growth >= MIN_PADDING;
  return {
    head: header ? source.slice(0, root.start) : `${source.slice(0, root.start)}${XPACKET_HEADER}\n`,
    body: blank ? body : body + between,
    padding: keep ? oldPadding - growth : DEFAULT_PADDING,
    tail: trailer ? source.slice(trailer.start, trailer.end) : XPACKET_TRAILER,
  };
}

/** A complete packet holding only the given properties (rdf:Description lines). */
export function newPacket(descriptionLines: readonly string[]): PacketParts {
  const body =
    `<x:xmpmeta xmlns:x="${NS.x}" x:xmptk="${TOOLKIT}">\n` +
    ` <rdf:RDF xmlns:rdf="${NS.rdf}">\n` +
    descriptionLines.map((line) => `  ${line}\n`).join('') +
    ' </rdf:RDF>\n' +
    '</x:xmpmeta>';
  return { head: `${XPACKET_HEADER}\n`, body, padding: DEFAULT_PADDING, tail: XPACKET_TRAILER };
}

/** One rdf:Description holding `properties`; each namespace gets its own prefix. */
export function newDescription(properties: readonly NewProperty[]): string[] {
  const prefixes = choosePrefixes(properties, ['rdf', 'x', 'xml']);
  return [
    `<rdf:Description rdf:about=""${[...prefixes].map(([uri, prefix]) => ` xmlns:${prefix}="${uri}"`).join('')}>`,
    ...properties.map((property) => ` ${property.markup(prefixes.get(property.uri)!, 'rdf')}`),
    '</rdf:Description>',
  ];
}
