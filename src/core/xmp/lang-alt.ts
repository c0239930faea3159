/**
 * Lang Alt properties (XMP Specification Part 1, 8.2.2.4): an rdf:Alt of
 * text items, each with its xml:lang, the "x-default" item first. optmark
 * writes one, plus:OtherConstraints, as
 *
 *   <plus:OtherConstraints><rdf:Alt><rdf:li xml:lang="x-default">TEXT</rdf:li></rdf:Alt></plus:OtherConstraints>
 *
 * Writing sets the x-default item. The items in other languages the
 * property already has are kept, with their text, after it (they are not
 * translated: a reader that picks another language reads what was there).
 */
import { isXName, type XElement } from './document.js';
import { escapeAttr, escapeText, type NewProperty, type TextEdit } from './edit.js';
import { NS } from './namespaces.js';
import type { PropertyOccurrence } from './properties.js';

export const X_DEFAULT = 'x-default';

/** One item of a Lang Alt: its language and its text. */
export interface LangItem {
  readonly lang: string;
  readonly text: string;
}

const langOf = (li: XElement): string | undefined => li.attrs.find((a) => isXName(a, NS.xml, 'lang'))?.value;
const isDefault = (lang: string | undefined): boolean => lang?.toLowerCase() === X_DEFAULT;
const isDeclaration = (a: XElement['attrs'][number]): boolean => a.uri === NS.xmlns || a.qname === 'xmlns';

/** The items of a property element that is a Lang Alt as XMP writes one (one rdf:Alt of text items, each with xml:lang); undefined for any other shape. */
function langAltItems(element: XElement): XElement[] | undefined {
  if (element.attrs.some((a) => !isDeclaration(a) && a.uri !== NS.xml)) return undefined;
  if (element.children.length !== 1 || element.text.trim() !== '') return undefined;
  const alt = element.children[0]!;
  if (!isXName(alt, NS.rdf, 'Alt')) return undefined;
  const items = alt.children;
  return items.every((li) => isXName(li, NS.rdf, 'li') && langOf(li) !== undefined && li.children.length === 0) ? items : undefined;
}

/**
 * Whether `occurrence` is a Lang Alt, in element form, whose one x-default
 * item holds exactly `text` (what writing it again would leave).
 */
export function holdsDefaultText(occurrence: PropertyOccurrence, text: string): boolean {
  if (occurrence.form !== 'element') return false;
  const items = langAltItems(occurrence.node as XElement);
  const defaults = items?.filter((li) => isDefault(langOf(li))) ?? [];
  return defaults.length === 1 && !defaults[0]!.selfClosing && defaults[0]!.text === text;
}

/**
 * The items in languages other than x-default that an occurrence holds
 * (in any rdf:Alt, rdf:Bag or rdf:Seq it has; text items with an xml:lang
 * only, the first per language), to be kept when its x-default is written.
 */
export function otherLanguages(occurrence: PropertyOccurrence | undefined): LangItem[] {
  if (!occurrence || occurrence.form !== 'element' || occurrence.value !== undefined) return [];
  const items: LangItem[] = [];
  const seen = new Set<string>();
  for (const array of (occurrence.node as XElement).children) {
    if (array.uri !== NS.rdf) continue;
    for (const li of array.children) {
      const lang = langOf(li);
      if (!isXName(li, NS.rdf, 'li') || lang === undefined || isDefault(lang) || li.children.length > 0 || seen.has(lang.toLowerCase())) continue;
      seen.add(lang.toLowerCase());
      items.push({ lang, text: li.text });
    }
  }
  return items;
}

/** Element text, escaped; a carriage return (only ever there from a character reference) stays one. */
const escapeItem = (text: string): string => escapeText(text).replace(/\r/g, '&#13;');

/** The rdf:Alt of a Lang Alt, x-default first, with `rdf` the prefix of the RDF namespace and `declaration` any attributes its start tag needs. */
function altMarkup(rdf: string, text: string, others: readonly LangItem[], declaration = ''): string {
  const item = (lang: string, value: string) => `<${rdf}:li xml:lang="${escapeAttr(lang)}">${escapeItem(value)}</${rdf}:li>`;
  return `<${rdf}:Alt${declaration}>${[item(X_DEFAULT, text), ...others.map((o) => item(o.lang, o.text))].join('')}</${rdf}:Alt>`;
}

/** A new Lang Alt property whose x-default is `text`, the `others` after it. */
export function langAltProperty(uri: string, preferredPrefix: string, local: string, text: string, others: readonly LangItem[] = []): NewProperty {
  return { uri, preferredPrefix, markup: (p, rdf) => `<${p}:${local}>${altMarkup(rdf, text, others)}</${p}:${local}>` };
}

/**
 * An edit rewriting a property element, whatever its shape, as a Lang Alt
 * whose x-default is `text` and the `others` after it, in the same place,
 * under the same name, keeping the namespace declarations its start tag
 * made. The RDF namespace goes under the prefix in scope there; where none
 * is (RDF as the default namespace), the rdf:Alt declares one.
 */
export function rewriteAsLangAlt(source: string, element: XElement, text: string, others: readonly LangItem[]): TextEdit {
  const decls = element.attrs
    .filter(isDeclaration)
    .map((a) => ` ${source.slice(a.start, a.end).trim()}`)
    .join('');
  let rdf = [...element.bindings].find(([prefix, uri]) => prefix !== '' && uri === NS.rdf)?.[0];
  let declaration = '';
  if (rdf === undefined) {
    rdf = 'rdf';
    for (let n = 1; element.bindings.has(rdf); n++) rdf = `rdf${n}`;
    declaration = ` xmlns:${rdf}="${NS.rdf}"`;
  }
  return { start: element.start, end: element.end, text: `<${element.qname}${decls}>${altMarkup(rdf, text, others, declaration)}</${element.qname}>` };
}
