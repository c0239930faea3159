/**
 * Read top-level XMP properties the way RDF/XML defines them. A property of
 * an rdf:Description can be written three ways, all equivalent:
 *   element    <plus:DataMining>URI</plus:DataMining>
 *   attribute  <rdf:Description plus:DataMining="URI">
 *   resource   <plus:DataMining rdf:resource="URI"/>
 * and a packet may spread its properties over several rdf:Description elements.
 */
import { descriptions, isXName, type XAttr, type XElement, type XmpDocument } from './document.js';
import { NS } from './namespaces.js';

export type PropertyForm = 'element' | 'attribute' | 'resource';

export interface PropertyOccurrence {
  readonly form: PropertyForm;
  /** The simple value, or undefined when the property is a struct or array. */
  readonly value: string | undefined;
  /** The element or attribute that holds it. */
  readonly node: XElement | XAttr;
  readonly description: XElement;
}

/** Attributes of a node element that are RDF syntax or XML plumbing, not properties. */
function isPropertyAttribute(attr: XAttr): boolean {
  return attr.uri !== '' && attr.uri !== NS.rdf && attr.uri !== NS.xml && attr.uri !== NS.xmlns;
}

/** The simple value of a property element, if it has one. */
function simpleValue(element: XElement): { form: PropertyForm; value: string | undefined } {
  const resource = element.attrs.find((a) => isXName(a, NS.rdf, 'resource'));
  if (resource) return { form: 'resource', value: resource.value };
  const struct = element.children.length > 0 || element.attrs.some((a) => isPropertyAttribute(a) || isXName(a, NS.rdf, 'parseType'));
  return { form: 'element', value: struct ? undefined : element.text };
}

/** Every top-level property of the packet, in document order. */
export function* properties(doc: XmpDocument): Generator<PropertyOccurrence & { readonly name: XAttr | XElement }> {
  for (const description of descriptions(doc)) {
    for (const attr of description.attrs) {
      if (isPropertyAttribute(attr)) yield { form: 'attribute', value: attr.value, node: attr, description, name: attr };
    }
    for (const child of description.children) {
      yield { ...simpleValue(child), node: child, description, name: child };
    }
  }
}

/**
 * Every occurrence of one property (by namespace URI and local name), in
 * document order. Names are compared before any value is read: verify asks
 * for half a dozen properties of packets with hundreds.
 */
export function findProperty(doc: XmpDocument, uri: string, local: string): PropertyOccurrence[] {
  const found: PropertyOccurrence[] = [];
  for (const description of descriptions(doc)) {
    for (const attr of description.attrs) {
      if (attr.local === local && attr.uri === uri && isPropertyAttribute(attr)) found.push({ form: 'attribute', value: attr.value, node: attr, description });
    }
    for (const child of description.children) {
      if (child.local === local && child.uri === uri) found.push({ ...simpleValue(child), node: child, description });
    }
  }
  return found;
}

/** The x-default (or first) item of a Lang Alt property such as plus:OtherConstraints. */
export function langAltValue(occurrence: PropertyOccurrence): string | undefined {
  if (occurrence.value !== undefined) return occurrence.value;
  const element = occurrence.node as XElement;
  const alt = element.children.find((c) => isXName(c, NS.rdf, 'Alt'));
  const items = alt?.children.filter((c) => isXName(c, NS.rdf, 'li')) ?? [];
  const byDefault = items.find((li) => li.attrs.some((a) => isXName(a, NS.xml, 'lang') && a.value === 'x-default'));
  return (byDefault ?? items[0])?.text;
}
