/**
 * Mutations of XMP packet text. Each edit is plain data (so fast-check can
 * shrink it and print it) applied by `applyXmpEdits`. Positions are free
 * integers taken modulo the places that fit, so every edit lands somewhere.
 * Edits that grow the text respect `maxBytes`: the point is hostile
 * structure, not running out of memory.
 */
import fc from 'fast-check';

const RDF = 'http://www.w3.org/1999/02/22-rdf-syntax-ns#';
const PLUS = 'http://ns.useplus.org/ldf/xmp/1.0/';
const VOCAB = 'http://ns.useplus.org/ldf/vocab/';
const HEADER = '<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?>';
const TRAILER = '<?xpacket end="w"?>';

const wrap = (body: string, padding = 120) => `${HEADER}\n<x:xmpmeta xmlns:x="adobe:ns:meta/">\n${body}\n</x:xmpmeta>\n${' '.repeat(padding)}\n${TRAILER}`;

/** Packets for seeds without XMP, each a layout real files have. */
export const TEMPLATES: readonly string[] = [
  wrap(` <rdf:RDF xmlns:rdf="${RDF}">\n  <rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">\n   <dc:title><rdf:Alt><rdf:li xml:lang="x-default">t</rdf:li></rdf:Alt></dc:title>\n  </rdf:Description>\n </rdf:RDF>`),
  wrap(` <rdf:RDF xmlns:rdf="${RDF}">\n  <rdf:Description rdf:about="" xmlns:iptcx="${PLUS}" iptcx:DataMining="${VOCAB}DMI-ALLOWED"/>\n </rdf:RDF>`),
  `<rdf:RDF xmlns:rdf="${RDF}"><rdf:Description about="" xmlns:plus="${PLUS}"><plus:DataMining rdf:resource="${VOCAB}DMI-PROHIBITED"/></rdf:Description></rdf:RDF>`,
  `<x:xapmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="${RDF}"><rdf:Description about="uuid:1" xmlns:tdm="http://www.w3.org/ns/tdmrep/" tdm:reservation="1"/></rdf:RDF></x:xapmeta>`,
  wrap('', 3000),
  wrap(` <rdf:RDF xmlns:rdf="${RDF}"/>`),
  wrap(
    ` <r:RDF xmlns:r="${RDF}">\n  <r:Description r:about="" xmlns:p="${PLUS}">\n   <p:DataMining>${VOCAB}DMI-PROHIBITED-AIMLTRAINING</p:DataMining>\n` +
      `   <p:OtherConstraints><r:Alt><r:li xml:lang="x-default">no</r:li></r:Alt></p:OtherConstraints>\n  </r:Description>\n </r:RDF>`,
  ),
  wrap(` <RDF xmlns="${RDF}"><Description xmlns:plus="${PLUS}" plus:DataMining="${VOCAB}DMI-UNSPECIFIED"/></RDF>`),
];

const DATA_MINING_VALUES: readonly string[] = [
  `${VOCAB}DMI-PROHIBITED-AIMLTRAINING`,
  `${VOCAB}DMI-PROHIBITED-GENAIMLTRAINING`,
  `${VOCAB}DMI-PROHIBITED`,
  `${VOCAB}DMI-ALLOWED`,
  `${VOCAB}DMI-UNSPECIFIED`,
  `https://ns.useplus.org/ldf/vocab/DMI-PROHIBITED`,
  'DMI-PROHIBITED-AIMLTRAINING',
  `${VOCAB}dmi-prohibited`,
  `  ${VOCAB}DMI-PROHIBITED-SEECONSTRAINT\n`,
  '',
  `${VOCAB}DMI-PROHIBITED&#x2D;AIMLTRAINING`,
  `${VOCAB}DMI-PROHIBITED\u00ad`,
  `${VOCAB}${'DMI-'.repeat(300)}`,
  '<b>&amp;"\'</b>',
];

export type DataMiningForm = 'element' | 'attribute' | 'resource' | 'empty' | 'struct';

export type XmpEdit =
  | { op: 'element'; at: number; name: number; declare: boolean; text: string }
  | { op: 'attribute'; at: number; attr: number; value: string }
  | { op: 'nest'; at: number; depth: number; name: number }
  | { op: 'dtd'; kind: number; at: number }
  | { op: 'truncate'; permille: number }
  | { op: 'repeat'; at: number; span: number; times: number }
  | { op: 'stutter'; permille: number; length: number; times: number }
  | { op: 'namespace'; kind: number; at: number; choice: number }
  | { op: 'dataMining'; at: number; form: DataMiningForm; value: number; prefix: number; declare: boolean }
  | { op: 'text'; at: number; text: string }
  | { op: 'wrapper'; kind: number; at: number }
  | { op: 'markup'; kind: number; at: number }
  | { op: 'char'; at: number; char: string }
  | { op: 'bulk'; target: number; pieces: number; attribute: boolean }
  | { op: 'guid'; value: string; form: DataMiningForm };

const NAMES: ReadonlyArray<{ qname: string; decl: string }> = [
  { qname: 'dc:subject', decl: ' xmlns:dc="http://purl.org/dc/elements/1.1/"' },
  { qname: 'plus:DataMining', decl: ` xmlns:plus="${PLUS}"` },
  { qname: 'rdf:Description', decl: ` xmlns:rdf="${RDF}"` },
  { qname: 'rdf:li', decl: ` xmlns:rdf="${RDF}"` },
  { qname: 'rdf:Bag', decl: ` xmlns:rdf="${RDF}"` },
  { qname: 'x:xmpmeta', decl: ' xmlns:x="adobe:ns:meta/"' },
  { qname: 'rdf:RDF', decl: ` xmlns:rdf="${RDF}"` },
  { qname: 'tdm:reservation', decl: ' xmlns:tdm="http://www.w3.org/ns/tdmrep/"' },
  { qname: 'optmark:ServiceTag', decl: ' xmlns:optmark="http://ns.optmark.org/xmp/1.0/"' },
  { qname: 'xmpNote:HasExtendedXMP', decl: ' xmlns:xmpNote="http://ns.adobe.com/xmp/note/"' },
  { qname: 'ü:ñ', decl: ' xmlns:ü="urn:ü"' },
  { qname: 'a', decl: ' xmlns="urn:default"' },
  { qname: 'xml:foo', decl: '' },
];

const ATTRIBUTES: readonly string[] = [
  'rdf:parseType="Resource"',
  `rdf:resource="${VOCAB}DMI-PROHIBITED"`,
  'xml:lang="x-default"',
  `plus:DataMining="${VOCAB}DMI-PROHIBITED" xmlns:plus="${PLUS}"`,
  'rdf:about="other"',
  'about=""',
  'rdf:ID="a"',
  `xmlns:plus="${PLUS}"`,
  'xmlns:plus="urn:not-plus"',
  'xmlns=""',
  `xmlns:rdf="${PLUS}"`,
  'xmlns:xml="urn:x"',
  'p:q="1"',
  'x:xmptk="fuzz"',
];

const URIS: readonly string[] = ['', RDF, PLUS, 'http://ns.useplus.org/ldf/xmp/1.0', 'HTTP://NS.USEPLUS.ORG/LDF/XMP/1.0/', 'adobe:ns:meta/', 'urn:ü', `urn:${'a'.repeat(2000)}`];
const PREFIXES: readonly string[] = ['xml', 'xmlns', 'rdf', 'x', 'plus', 'a'.repeat(300), 'ü', '_', 'p-1.2', '1p'];
const DM_PREFIXES: readonly string[] = ['plus', 'iptcx', 'p', 'rdf', 'dc'];

const DTDS: readonly string[] = [
  '<!DOCTYPE x:xmpmeta>',
  '<!DOCTYPE x [<!ENTITY e "boom">]>',
  '<!ENTITY e "x">',
  '<!doctype x>',
  '&undefined;',
  '&#0;',
  '&#xD800;',
  '&#x10FFFF;&#65;&amp;&lt;',
  '<!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]>',
  '<! DOCTYPE x>',
];

const MARKUP: readonly string[] = ['<!-- c -->', '<!-- a -- b -->', '<![CDATA[x]]>', '<![CDATA[<plus:DataMining/>]]>', '<?pi data?>', '<?xml version="1.0"?>', '<?xpacket end="w"?>', ']]>', '<', '&', '</rdf:Description>'];

const SPECIAL_TEXT: readonly string[] = ['\uFEFF', '\uFFFE', '\u0000', '\r\n', '\u202E\u200F', '\u2028', '\uD800', '\uDFFF\uD800', 'e\u0301\u0301', '\u{1F600}', '\u0085', '\u007F\u0080'];

/** Offsets just after each `>`, plus both ends: places where markup can go. */
function boundaries(text: string): number[] {
  const out = [0];
  for (let i = text.indexOf('>'); i >= 0; i = text.indexOf('>', i + 1)) out.push(i + 1);
  if (out.at(-1) !== text.length) out.push(text.length);
  return out;
}

const pick = <T>(list: readonly T[], n: number): T => list[n % list.length]!;
const insert = (text: string, at: number, piece: string) => text.slice(0, at) + piece + text.slice(at);
const escape = (value: string) => value.replace(/&(?!#)/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');

/** Start tags as [offset of `<`, offset after the name, offset of `>`, self-closing]. */
function startTags(text: string, only?: RegExp): Array<{ start: number; afterName: number; close: number; selfClosing: boolean }> {
  const tags = [];
  const re = /<(?![?!/])([^\s/>]+)/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (only && !only.test(m[1]!)) continue;
    const close = text.indexOf('>', re.lastIndex);
    if (close < 0) break;
    tags.push({ start: m.index, afterName: re.lastIndex, close, selfClosing: text[close - 1] === '/' });
  }
  return tags;
}

function dataMiningMarkup(qname: string, form: DataMiningForm, value: string): string {
  if (form === 'resource') return `<${qname} rdf:resource="${value}"/>`;
  if (form === 'empty') return `<${qname}/>`;
  if (form === 'struct') return `<${qname} rdf:parseType="Resource"><rdf:value>${value}</rdf:value></${qname}>`;
  return `<${qname}>${value}</${qname}>`;
}

/** Put a property element (or attribute) into the `at`-th description, or a new description when there is none. */
function intoDescription(text: string, at: number, child: string, attribute?: string): string {
  const descriptions = startTags(text, /(^|:)Description$/);
  if (descriptions.length === 0) {
    const description = `<rdf:Description rdf:about=""${attribute ? ` ${attribute}` : ''}>${child}</rdf:Description>`;
    const rdfEnd = text.search(/<\/([\w.-]+:)?RDF>/);
    return rdfEnd >= 0 ? insert(text, rdfEnd, description) : insert(text, pick(boundaries(text), at), description);
  }
  const tag = pick(descriptions, at);
  if (attribute !== undefined) return insert(text, tag.afterName, ` ${attribute}`);
  if (!tag.selfClosing) return insert(text, tag.close + 1, child);
  const name = text.slice(tag.start + 1, tag.afterName);
  return `${text.slice(0, tag.close - 1)}>${child}</${name}>${text.slice(tag.close + 1)}`;
}

function applyEdit(text: string, edit: XmpEdit, maxBytes: number): string {
  const places = boundaries(text);
  switch (edit.op) {
    case 'element': {
      const name = pick(NAMES, edit.name);
      return insert(text, pick(places, edit.at), `<${name.qname}${edit.declare ? name.decl : ''}>${edit.text}</${name.qname}>`);
    }
    case 'attribute': {
      const tags = startTags(text);
      return tags.length ? insert(text, pick(tags, edit.at).afterName, ` ${pick(ATTRIBUTES, edit.attr).replace('"1"', `"${escape(edit.value)}"`)}`) : text;
    }
    case 'nest': {
      const name = pick(NAMES, edit.name);
      const depth = Math.min(edit.depth, Math.floor(maxBytes / (2 * name.qname.length + name.decl.length + 5)));
      return insert(text, pick(places, edit.at), `<${name.qname}${name.decl}>`.repeat(depth) + `</${name.qname}>`.repeat(depth));
    }
    case 'dtd':
      return edit.kind % 2 === 0 ? pick(DTDS, edit.kind) + text : insert(text, pick(places, edit.at), pick(DTDS, edit.kind));
    case 'truncate':
      return text.slice(0, Math.floor((text.length * edit.permille) / 1000));
    case 'repeat': {
      const i = edit.at % places.length;
      const from = places[i]!;
      const to = places[Math.min(places.length - 1, i + 1 + (edit.span % 4))]!;
      const span = text.slice(from, to);
      const times = span.length === 0 ? 0 : Math.min(edit.times, Math.floor((maxBytes - text.length) / span.length));
      return times > 0 ? text.slice(0, to) + span.repeat(times) + text.slice(to) : text;
    }
    case 'stutter': {
      // A piece cut anywhere, tags split included, said again and again.
      const from = Math.floor((text.length * edit.permille) / 1000);
      const span = text.slice(from, from + edit.length);
      const times = span.length === 0 ? 0 : Math.min(edit.times, Math.floor((maxBytes - text.length) / span.length));
      return times > 0 ? text.slice(0, from) + span.repeat(times) + text.slice(from) : text;
    }
    case 'namespace':
      return namespaceEdit(text, edit.kind, edit.at, edit.choice);
    case 'dataMining': {
      const prefix = pick(DM_PREFIXES, edit.prefix);
      const decl = edit.declare ? ` xmlns:${prefix}="${PLUS}"` : '';
      const value = pick(DATA_MINING_VALUES, edit.value);
      if (edit.form === 'attribute') return intoDescription(text, edit.at, '', `${prefix}:DataMining="${escape(value)}"${decl}`);
      const qname = `${prefix}:DataMining`;
      const markup = dataMiningMarkup(qname, edit.form, edit.form === 'resource' ? escape(value) : value).replace(`<${qname}`, `<${qname}${decl}`);
      return intoDescription(text, edit.at, markup);
    }
    case 'text':
      return insert(text, pick(places, edit.at), edit.text);
    case 'wrapper':
      return wrapperEdit(text, edit.kind, pick(places, edit.at), maxBytes);
    case 'markup':
      return insert(text, pick(places, edit.at), pick(MARKUP, edit.kind));
    case 'char': {
      if (text.length === 0) return edit.char;
      const at = edit.at % text.length;
      return text.slice(0, at) + edit.char + text.slice(at + 1);
    }
    case 'bulk':
      return bulk(text, edit, maxBytes);
    case 'guid': {
      const qname = 'xmpNote:HasExtendedXMP';
      const decl = ' xmlns:xmpNote="http://ns.adobe.com/xmp/note/"';
      if (edit.form === 'attribute') return intoDescription(text, 0, '', `${qname}="${escape(edit.value)}"${decl}`);
      return intoDescription(text, 0, dataMiningMarkup(qname, edit.form, escape(edit.value)).replace(`<${qname}`, `<${qname}${decl}`));
    }
  }
}

function namespaceEdit(text: string, kind: number, at: number, choice: number): string {
  const decls = [...text.matchAll(/xmlns(?::([^\s=]+))?\s*=\s*"([^"]*)"/g)];
  const decl = decls.length ? pick(decls, at) : undefined;
  switch (kind % 4) {
    case 0: // the same prefix now means another namespace
      return decl ? text.slice(0, decl.index) + decl[0].replace(`"${decl[2]}"`, `"${pick(URIS, choice)}"`) + text.slice(decl.index + decl[0].length) : text;
    case 1: {
      // rename a prefix everywhere it is used
      const from = decl?.[1];
      // A "prefix" that earlier edits stretched into kilobytes would make a
      // regular expression V8 refuses to compile: leave such text alone.
      if (!from || from.length > 256) return text;
      const to = pick(PREFIXES, choice);
      const quoted = from.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      return text.replace(new RegExp(`(</?|\\s|xmlns:)${quoted}(?=[\\s:=>/])`, 'g'), (_m, lead: string) => lead + to);
    }
    case 2: // drop a declaration: its prefix becomes unbound
      return decl ? text.slice(0, decl.index) + text.slice(decl.index + decl[0].length) : text;
    default: {
      const tags = startTags(text);
      return tags.length ? insert(text, pick(tags, at).afterName, ` xmlns:${pick(PREFIXES, choice)}="${pick(URIS, choice + 1)}"`) : text;
    }
  }
}

function wrapperEdit(text: string, kind: number, at: number, maxBytes: number): string {
  switch (kind % 10) {
    case 0:
      return text.replace(/<\?xpacket begin[^>]*>/, '');
    case 1:
      return text.replace(/<\?xpacket end[^>]*>/, '');
    case 2:
      return text.replace(/end="w"/, 'end="x"');
    case 3:
      return text.replace(/<x:xmpmeta[^>]*>/, '').replace('</x:xmpmeta>', '');
    case 4:
      return text.replace(/x:xmpmeta/g, 'x:xapmeta');
    case 5:
      return `<foo>${text}</foo>`;
    case 6:
      return insert(text, at, '<x:xmpmeta xmlns:x="adobe:ns:meta/"/>');
    case 7:
      return `\uFEFF garbage ${text}`;
    case 8:
      return text.replace(/\n\s+\n(?=<\?xpacket end)/, '\n');
    default: {
      const room = Math.max(0, maxBytes - text.length);
      return text.replace(/(?=<\?xpacket end)/, ' '.repeat(Math.min(room, 70_000)));
    }
  }
}

/** Grow the packet to `target` bytes with large properties: the size where a JPEG packet must spill into Extended XMP. */
function bulk(text: string, edit: { target: number; pieces: number; attribute: boolean }, maxBytes: number): string {
  const target = Math.min(edit.target, maxBytes);
  const pieces = Math.max(1, edit.pieces);
  let out = text;
  for (let i = 0; i < pieces; i++) {
    const left = target - Buffer.byteLength(out);
    const wrapper = edit.attribute ? `dc:b${i}="" xmlns:dc="http://purl.org/dc/elements/1.1/"` : `<dc:b${i} xmlns:dc="http://purl.org/dc/elements/1.1/"></dc:b${i}>`;
    const size = Math.floor(left / (pieces - i)) - wrapper.length - 1;
    if (size <= 0) break;
    const filler = 'x'.repeat(size);
    out = edit.attribute
      ? intoDescription(out, i, '', wrapper.replace('""', `"${filler}"`))
      : intoDescription(out, i, wrapper.replace('></', `>${filler}</`));
  }
  return out;
}

export function applyXmpEdits(text: string, edits: readonly XmpEdit[], maxBytes: number): string {
  return edits.reduce((t, edit) => applyEdit(t, edit, maxBytes), text);
}

/** Sizes at which a JPEG standard packet stops fitting, and one past the 8 MiB cap. */
const BULK_TARGETS = [64_000, 64_990, 65_000, 65_010, 65_400, 65_504, 65_505, 131_072, 8 * 1024 * 1024 + 1];

const at = fc.nat({ max: 10_000 });
const small = (max: number) => fc.nat({ max });
/**
 * Any code point but the surrogates: what fast-check's `unit: 'binary'` draws
 * (the same integer, mapped the same way), without the reverse table of all
 * 1.1 million code points that `fc.string` builds for that unit when it is
 * created (1 to 2 s of every fuzz process's start, for its handful of
 * built-in "dangerous" strings, which mean nothing to an XMP parser).
 */
const anyCodePoint = fc.nat({ max: 0x10ffff - 0x800 }).map((n) => String.fromCodePoint(n < 0xd800 ? n : n + 0x800));
const someText = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: anyCodePoint, maxLength: 12 }),
  fc.constantFrom(...SPECIAL_TEXT),
);
const form = fc.constantFrom<DataMiningForm>('element', 'attribute', 'resource', 'empty', 'struct');

export const xmpEdit: fc.Arbitrary<XmpEdit> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ op: fc.constant('element' as const), at, name: small(99), declare: fc.boolean(), text: someText }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('attribute' as const), at, attr: small(99), value: someText }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('nest' as const), at, depth: fc.constantFrom(2, 32, 63, 64, 65, 200, 5000), name: small(99) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('dtd' as const), kind: small(99), at }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('truncate' as const), permille: small(999) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('repeat' as const), at, span: small(9), times: fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 1, max: 5 }) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 1_000_000 }) }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('stutter' as const), permille: small(999), length: fc.integer({ min: 1, max: 40 }), times: fc.integer({ min: 1, max: 200_000 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('namespace' as const), kind: small(99), at, choice: small(99) }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('dataMining' as const), at, form, value: small(99), prefix: small(99), declare: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('text' as const), at, text: someText }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('wrapper' as const), kind: small(99), at }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('markup' as const), kind: small(99), at }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('char' as const), at: fc.nat(), char: fc.constantFrom('<', '>', '"', '&', '/', ' ', '\0', 'é', ':') }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('bulk' as const), target: fc.constantFrom(...BULK_TARGETS), pieces: fc.integer({ min: 1, max: 4 }), attribute: fc.boolean() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('guid' as const),
      value: fc.oneof(fc.stringMatching(/^[0-9A-F]{32}$/), fc.stringMatching(/^[0-9a-fA-F ]{0,40}$/)),
      form,
    }),
  },
);
