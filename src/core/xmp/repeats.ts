/**
 * Properties a packet repeats. RDF allows a property to be written twice;
 * the XMP data model does not, and Adobe's XMP Toolkit (ParseRDF.cpp,
 * AddChildNode: "Duplicate property or field node") throws away the whole
 * packet when a top-level property, or a field of one struct, appears twice.
 * exiv2, exempi and Adobe's applications read XMP through that toolkit, so
 * for them such a file carries no XMP at all. ExifTool and our reader take
 * the packet as it is.
 *
 * Top-level properties are counted over every rdf:Description of the packet
 * (they describe one resource); a struct's fields within that struct. Array
 * items (rdf:li) and rdf:value are never repeats.
 */
import { isXName, type XAttr, type XElement, type XmpDocument } from './document.js';
import { NS } from './namespaces.js';

export interface RepeatedProperty {
  readonly uri: string;
  readonly local: string;
  /** Where it is, as written: `photoshop:ColorMode`, or `exif:Flash/exif:Fired` for a struct's field. */
  readonly path: string;
  /** True for a property of the packet's subject, false for a struct's field. */
  readonly topLevel: boolean;
  /** Every occurrence, in document order. */
  readonly occurrences: ReadonlyArray<XElement | XAttr>;
  /** Every occurrence holds the same value (the same text, or the same struct or array). */
  readonly agree: boolean;
  /** The distinct values, each as a short text for a message. */
  readonly values: readonly string[];
}

interface Field {
  readonly uri: string;
  readonly local: string;
  readonly qname: string;
  readonly node: XElement | XAttr;
}

/** Attributes that are properties (or struct fields), not RDF syntax or XML plumbing. */
function isFieldAttribute(attr: XAttr): boolean {
  return attr.uri !== '' && attr.uri !== NS.rdf && attr.uri !== NS.xml && attr.uri !== NS.xmlns;
}

/** The fields an element holds as attributes. */
function attributeFields(node: XElement): Field[] {
  return node.attrs.filter(isFieldAttribute).map((attr) => ({ uri: attr.uri, local: attr.local, qname: attr.qname, node: attr }));
}

/** The fields a node element (rdf:Description, a typed node, or a property with rdf:parseType="Resource") holds. */
function fieldsOf(node: XElement): Field[] {
  const fields = attributeFields(node);
  for (const child of node.children) if (child.uri !== NS.rdf) fields.push({ uri: child.uri, local: child.local, qname: child.qname, node: child });
  return fields;
}

const isResourceParse = (element: XElement) => element.attrs.some((a) => isXName(a, NS.rdf, 'parseType') && a.value === 'Resource');
const isArray = (element: XElement) => element.uri === NS.rdf && (element.local === 'Bag' || element.local === 'Seq' || element.local === 'Alt');

/** The field sets nested in one property element: a struct's fields, or those of each struct an array holds. */
function nestedFieldSets(property: XElement): Field[][] {
  if (isResourceParse(property)) return [fieldsOf(property)];
  if (property.attrs.some((a) => isXName(a, NS.rdf, 'resource'))) return [];
  if (property.children.length === 0) {
    // An empty property element with property attributes is a struct of them.
    const attributes = attributeFields(property);
    return attributes.length > 0 ? [attributes] : [];
  }
  const sets: Field[][] = [];
  for (const child of property.children) {
    if (isArray(child)) {
      for (const item of child.children) if (isXName(item, NS.rdf, 'li')) sets.push(...nestedFieldSets(item));
    } else if (child.uri === NS.rdf && child.local !== 'Description') {
      continue; // rdf:value and other RDF terms carry no fields
    } else {
      sets.push(fieldsOf(child)); // a node element: rdf:Description or a typed node
    }
  }
  return sets;
}

/** A value as a comparable text: the same text for the same value, whatever the form it is written in. */
function canonical(node: XElement | XAttr): string {
  if (!('children' in node)) return `"${node.value}"`;
  const resource = node.attrs.find((a) => isXName(a, NS.rdf, 'resource'));
  const attributes = node.attrs.filter((a) => a.uri !== NS.xmlns && a.qname !== 'xmlns' && a !== resource);
  if (node.children.length === 0 && attributes.length === 0) return `"${resource ? resource.value : node.text}"`;
  const attrText = attributes.map((a) => `{${a.uri}}${a.local}=${JSON.stringify(a.value)}`).sort().join(' ');
  const inner = node.children.length > 0 ? node.children.map((c) => `<{${c.uri}}${c.local} ${canonical(c)}>`).join('') : JSON.stringify(node.text);
  return `[${attrText}|${inner}]`;
}

/** A short text of a value for a message. */
function shown(node: XElement | XAttr): string {
  const text = 'children' in node ? (node.children.length > 0 ? 'a struct or array' : node.text) : node.value;
  return text.length > 40 ? `${JSON.stringify(text.slice(0, 37))}...` : JSON.stringify(text);
}

/**
 * Every property or struct field the packet repeats. Only the first
 * occurrence of a repeat is looked into (the others are what dropping it
 * removes), so no two reported occurrences nest.
 */
export function repeatedProperties(doc: XmpDocument): RepeatedProperty[] {
  const found: RepeatedProperty[] = [];
  const visit = (fields: readonly Field[], parentPath: string, topLevel: boolean): void => {
    const groups = new Map<string, Field[]>();
    for (const field of fields) {
      const key = `${field.uri}\u0000${field.local}`;
      const group = groups.get(key);
      if (group) group.push(field);
      else groups.set(key, [field]);
    }
    for (const group of groups.values()) {
      const [first] = group as [Field, ...Field[]];
      const path = parentPath ? `${parentPath}/${first.qname}` : first.qname;
      if (group.length > 1) {
        const texts = group.map((f) => canonical(f.node));
        const distinct = [...new Set(texts)];
        const values = distinct.map((text) => shown(group[texts.indexOf(text)]!.node));
        found.push({ uri: first.uri, local: first.local, path, topLevel, occurrences: group.map((f) => f.node), agree: distinct.length === 1, values });
      }
      if ('children' in first.node) for (const set of nestedFieldSets(first.node)) visit(set, path, false);
    }
  };
  visit(doc.rdf ? doc.rdf.children.flatMap(fieldsOf) : [], '', true);
  return found;
}

/** "photoshop:ColorMode (2 times), xmpMM:InstanceID (3 times)": for messages. */
export function describeRepeats(repeats: readonly RepeatedProperty[]): string {
  const shownRepeats = repeats.slice(0, 10).map((r) => `${r.path} (${r.occurrences.length} times)`);
  return shownRepeats.join(', ') + (repeats.length > 10 ? ` and ${repeats.length - 10} more` : '');
}
