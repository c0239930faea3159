import { describe, expect, it } from 'vitest';
import { setSimpleProperties, setSimpleProperty } from '../../../src/core/xmp/set-property.js';
import { DATA_MINING, SERVICE_TAG } from '../../../src/core/xmp/namespaces.js';
import { parseXmp } from '../../../src/core/xmp/document.js';
import { readFacts } from '../../../src/core/xmp/facts.js';
import { serialise, XPACKET_HEADER, XPACKET_TRAILER } from '../../../src/core/xmp/packet.js';
import { findProperty } from '../../../src/core/xmp/properties.js';

const PLUS = 'http://ns.useplus.org/ldf/xmp/1.0/';
const URI = 'http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED-AIMLTRAINING';
const ALLOWED = 'http://ns.useplus.org/ldf/vocab/DMI-ALLOWED';
const RDF = 'http://www.w3.org/1999/02/22-rdf-syntax-ns#';

function write(standard: string | undefined, uri = URI, extended?: string) {
  const plan = setSimpleProperty(standard === undefined ? undefined : parseXmp(standard), extended === undefined ? undefined : parseXmp(extended), DATA_MINING, uri);
  return plan && { standard: serialise(plan.standard), extended: plan.extended };
}

/** The one DataMining of a written packet, after checking it parses and holds exactly one. */
function theValue(text: string) {
  const facts = readFacts(parseXmp(text));
  expect(facts.dataMining).toHaveLength(1);
  return facts.dataMining[0]!;
}

const DC_PACKET = `<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="Some Tool 1.0">
  <rdf:RDF xmlns:rdf="${RDF}">
    <rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:my="urn:example:my#"
        my:rating="5">
      <dc:title><rdf:Alt><rdf:li xml:lang="x-default">Sunset &amp; sea</rdf:li></rdf:Alt></dc:title>
      <!-- a comment that must survive -->
      <dc:subject><rdf:Bag><rdf:li>sea</rdf:li><rdf:li>sun</rdf:li></rdf:Bag></dc:subject>
    </rdf:Description>
  </rdf:RDF>
</x:xmpmeta>
${' '.repeat(2000)}
<?xpacket end="w"?>`;

describe('writing plus:DataMining', () => {
  it('creates a minimal packet with a valid wrapper when there is no XMP', () => {
    const { standard } = write(undefined)!;
    expect(standard.startsWith(XPACKET_HEADER)).toBe(true);
    expect(standard.endsWith(XPACKET_TRAILER)).toBe(true);
    expect(standard).toMatch(/\n {99}\n/); // padding
    expect(standard).toContain(`<plus:DataMining>${URI}</plus:DataMining>`);
    expect(theValue(standard)).toMatchObject({ value: URI, form: 'element' });
  });

  it('merges: every other property, namespace, comment and byte of formatting is kept', () => {
    const { standard } = write(DC_PACKET)!;
    const inserted = /\n *<rdf:Description rdf:about="" xmlns:plus=[^]*?<\/rdf:Description>/.exec(standard)!;
    expect(inserted).not.toBeNull();
    // Take the inserted description out, and the packet is the original text, padding aside.
    const without = standard.slice(0, inserted.index) + standard.slice(inserted.index + inserted[0].length);
    expect(without.replace(/\s+<\?xpacket end/, '<?xpacket end')).toBe(DC_PACKET.replace(/\s+<\?xpacket end/, '<?xpacket end'));
    expect(standard).toContain('<!-- a comment that must survive -->');
    expect(standard).toContain('my:rating="5"');
    expect(standard).toContain('Sunset &amp; sea');
    expect(theValue(standard)).toMatchObject({ value: URI, form: 'element' });
  });

  it('keeps the packet size by shrinking the padding', () => {
    const { standard } = write(DC_PACKET)!;
    expect(Buffer.byteLength(standard)).toBe(Buffer.byteLength(DC_PACKET));
  });

  it('replaces an element-form value in place rather than adding a second', () => {
    const before = DC_PACKET.replace('<dc:subject>', `<plus:DataMining xmlns:plus="${PLUS}">${ALLOWED}</plus:DataMining><dc:subject>`);
    const { standard } = write(before)!;
    expect(theValue(standard)).toMatchObject({ value: URI, form: 'element' });
    expect(standard).toContain(`<plus:DataMining xmlns:plus="${PLUS}">${URI}</plus:DataMining><dc:subject>`);
  });

  it("puts the value in a new description before the packet's others, so that it is the first", () => {
    const twoDescriptions = DC_PACKET.replace('    </rdf:Description>\n', `    </rdf:Description>\n    <rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/"><xmp:Rating>3</xmp:Rating></rdf:Description>\n`);
    const { standard } = write(twoDescriptions)!;
    const first = parseXmp(standard).rdf!.children[0]!;
    expect(standard.slice(first.start, first.end)).toBe(`<rdf:Description rdf:about="" xmlns:plus="${PLUS}">\n     <plus:DataMining>${URI}</plus:DataMining>\n    </rdf:Description>`);
    // Indented as the description it precedes.
    expect(standard).toContain(`\n    <rdf:Description rdf:about="" xmlns:plus="${PLUS}">\n`);
    expect(parseXmp(standard).rdf!.children).toHaveLength(3);
  });

  it('moves a value held in a later description into a new first one', () => {
    const later = DC_PACKET.replace('    </rdf:Description>\n', `    </rdf:Description>\n    <rdf:Description rdf:about="" xmlns:plus="${PLUS}"><plus:DataMining>${ALLOWED}</plus:DataMining></rdf:Description>\n`);
    const { standard } = write(later)!;
    const doc = parseXmp(standard);
    const [occurrence] = findProperty(doc, PLUS, 'DataMining');
    expect(occurrence!.description).toBe(doc.rdf!.children[0]);
    expect(theValue(standard)).toMatchObject({ value: URI, form: 'element' });
    // The value already right but in a later description is moved as well.
    const right = later.replace(ALLOWED, URI);
    const moved = write(right)!.standard;
    const movedDoc = parseXmp(moved);
    expect(findProperty(movedDoc, PLUS, 'DataMining')[0]!.description).toBe(movedDoc.rdf!.children[0]);
    expect(write(moved)).toBeUndefined();
  });

  it('works on a packet whose descriptions share one line', () => {
    const oneLine = `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="${RDF}"><rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:format>x</dc:format></rdf:Description></rdf:RDF></x:xmpmeta>`;
    const { standard } = write(oneLine)!;
    expect(standard).toContain(`<rdf:RDF xmlns:rdf="${RDF}"><rdf:Description rdf:about="" xmlns:plus="${PLUS}">\n <plus:DataMining>${URI}</plus:DataMining>\n</rdf:Description><rdf:Description rdf:about="" xmlns:dc=`);
    expect(theValue(standard).value).toBe(URI);
  });

  it('rewrites an attribute-form value in element form', () => {
    const before = DC_PACKET.replace('my:rating="5"', `my:rating="5" xmlns:plus="${PLUS}" plus:DataMining="${ALLOWED}"`);
    const { standard } = write(before)!;
    expect(theValue(standard)).toMatchObject({ value: URI, form: 'element' });
    expect(standard).not.toContain('plus:DataMining=');
    expect(standard).toContain('my:rating="5"');
  });

  it('rewrites an rdf:resource value in element form, in place, keeping its prefix', () => {
    const before = DC_PACKET.replace('<dc:subject>', `<p:DataMining xmlns:p="${PLUS}" rdf:resource="${ALLOWED}"/><dc:subject>`);
    const { standard } = write(before)!;
    expect(standard).toContain(`<p:DataMining xmlns:p="${PLUS}">${URI}</p:DataMining><dc:subject>`);
    expect(theValue(standard)).toMatchObject({ value: URI, form: 'element' });
  });

  it('rewrites the requested value held as an attribute or an rdf:resource in element form too (ImageMagick reads only that)', () => {
    const asResource = DC_PACKET.replace('<dc:subject>', `<p:DataMining xmlns:p="${PLUS}" rdf:resource="${URI}"/><dc:subject>`);
    expect(write(asResource)!.standard).toContain(`<p:DataMining xmlns:p="${PLUS}">${URI}</p:DataMining><dc:subject>`);
    const asAttribute = DC_PACKET.replace('my:rating="5"', `my:rating="5" xmlns:plus="${PLUS}" plus:DataMining="${URI}"`);
    const written = write(asAttribute)!.standard;
    expect(theValue(written)).toMatchObject({ value: URI, form: 'element' });
    expect(write(written)).toBeUndefined();
  });

  it('leaves one value where there were several', () => {
    const before = DC_PACKET.replace('my:rating="5"', `my:rating="5" xmlns:plus="${PLUS}" plus:DataMining="${ALLOWED}"`).replace(
      '<dc:subject>',
      `<plus:DataMining>${URI}</plus:DataMining><dc:subject>`,
    );
    expect(theValue(write(before)!.standard)).toMatchObject({ value: URI });
  });

  it('removes a value that sits in Extended XMP and writes it in the standard packet', () => {
    const extended = `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="${RDF}"><rdf:Description rdf:about="" xmlns:plus="${PLUS}"><plus:DataMining>${ALLOWED}</plus:DataMining><plus:Other>kept</plus:Other></rdf:Description></rdf:RDF></x:xmpmeta>`;
    const result = write(DC_PACKET, URI, extended)!;
    expect(theValue(result.standard)).toMatchObject({ value: URI });
    expect(result.extended).toBeDefined();
    expect(findProperty(parseXmp(result.extended!), PLUS, 'DataMining')).toEqual([]);
    expect(result.extended).toContain('<plus:Other>kept</plus:Other>');
  });

  it('changes nothing when the packet already carries exactly this value', () => {
    const once = write(DC_PACKET)!.standard;
    expect(write(once)).toBeUndefined();
    // A different prohibited value is a change.
    expect(write(once, 'http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED')).toBeDefined();
  });

  it('adds a wrapper to a packet that has none', () => {
    const bare = `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="${RDF}"/></x:xmpmeta>`;
    const { standard } = write(bare)!;
    expect(standard.startsWith(XPACKET_HEADER)).toBe(true);
    expect(standard.endsWith(XPACKET_TRAILER)).toBe(true);
    expect(theValue(standard)).toMatchObject({ value: URI });
  });

  it('handles a self-closing rdf:RDF, a missing rdf:RDF and a default-namespace rdf:RDF', () => {
    for (const body of [
      `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="${RDF}"/></x:xmpmeta>`,
      `<x:xmpmeta xmlns:x="adobe:ns:meta/" key="value"/>`,
      `<x:xmpmeta xmlns:x="adobe:ns:meta/"></x:xmpmeta>`,
      `<x:xmpmeta xmlns:x="adobe:ns:meta/"><RDF xmlns="${RDF}"><Description xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:format>x</dc:format></Description></RDF></x:xmpmeta>`,
      `<rdf:RDF xmlns:rdf="${RDF}"></rdf:RDF>`,
    ]) {
      const { standard } = write(`<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?>${body}<?xpacket end="w"?>`)!;
      expect(theValue(standard)).toMatchObject({ value: URI, form: 'element' });
    }
  });

  it('gives the new description the subject the others have, escaped', () => {
    const before = DC_PACKET.replace('rdf:about=""', 'rdf:about="uuid:a&amp;b&quot;c"');
    const { standard } = write(before)!;
    expect(standard).toContain('<rdf:Description rdf:about="uuid:a&amp;b&quot;c" xmlns:plus=');
    expect(theValue(standard)).toMatchObject({ value: URI });
  });

  it('does not clash with a packet that binds the plus prefix to something else', () => {
    const before = DC_PACKET.replace('xmlns:my="urn:example:my#"', 'xmlns:my="urn:example:my#" xmlns:plus="urn:other"');
    const { standard } = write(before)!;
    expect(theValue(standard)).toMatchObject({ value: URI });
    // Not plus, which the packet gives another namespace (Adobe's toolkit would meet one prefix for two URIs).
    expect(standard).toContain(`<rdf:Description rdf:about="" xmlns:plus1="${PLUS}">`);
  });

  it('writes plus:DataMining, and declares last the prefix the packet gives the namespace further down (for exiv2)', () => {
    // A packet that calls the namespace iptcx; its declaration stays after the attribute goes.
    const before = DC_PACKET.replace('my:rating="5"', `my:rating="5" xmlns:iptcx="${PLUS}" iptcx:DataMining="${ALLOWED}"`);
    const { standard } = write(before)!;
    expect(standard).toContain(`<rdf:Description rdf:about="" xmlns:plus="${PLUS}" xmlns:iptcx="${PLUS}">\n     <plus:DataMining>${URI}</plus:DataMining>`);
    expect(theValue(standard)).toMatchObject({ value: URI, form: 'element' });
    // Declared only on an ancestor, before the new description: nothing to add.
    const onRdf = DC_PACKET.replace(`<rdf:RDF xmlns:rdf="${RDF}">`, `<rdf:RDF xmlns:rdf="${RDF}" xmlns:iptcx="${PLUS}">`);
    expect(write(onRdf)!.standard).toContain(`<rdf:Description rdf:about="" xmlns:plus="${PLUS}">\n`);
  });
});

describe('writing several properties in one edit (the value and the provenance tag)', () => {
  const both = (standard: string | undefined, tag = 'eyJ.a.b', uri = URI) => {
    const plan = setSimpleProperties(standard === undefined ? undefined : parseXmp(standard), undefined, [
      { name: DATA_MINING, value: uri },
      { name: SERVICE_TAG, value: tag },
    ]);
    return plan && serialise(plan.standard);
  };
  const tagOf = (text: string) => findProperty(parseXmp(text), SERVICE_TAG.uri, SERVICE_TAG.local).map((p) => p.value);

  it('a new packet holds both in one rdf:Description', () => {
    const text = both(undefined)!;
    expect(text.match(/<rdf:Description/g)).toHaveLength(1);
    expect(theValue(text).value).toBe(URI);
    expect(tagOf(text)).toEqual(['eyJ.a.b']);
  });

  it('merged into a packet: one new first description declaring both namespaces, everything else kept', () => {
    const text = both(DC_PACKET)!;
    expect(text.match(/<rdf:Description/g)).toHaveLength(2);
    const doc = parseXmp(text);
    const first = doc.rdf!.children[0]!;
    expect(findProperty(doc, SERVICE_TAG.uri, SERVICE_TAG.local)[0]!.description).toBe(first);
    expect(findProperty(doc, PLUS, 'DataMining')[0]!.description).toBe(first);
    expect(text).toContain(`xmlns:plus="${PLUS}" xmlns:optmark="${SERVICE_TAG.uri}"`);
    expect(text).toContain('<!-- a comment that must survive -->');
    expect(theValue(text).value).toBe(URI);
    expect(tagOf(text)).toEqual(['eyJ.a.b']);
  });

  it('only what differs is edited: the value stays in place when only the tag changes, and nothing when neither does', () => {
    const once = both(DC_PACKET, 'eyJ.old.tag')!;
    const again = both(once, 'eyJ.new.tag')!;
    expect(again.replace('eyJ.new.tag', 'eyJ.old.tag')).toBe(once);
    expect(both(again, 'eyJ.new.tag')).toBeUndefined();
  });

  it('keeps the two together in the first description: a tag added to a value in place takes the value along', () => {
    // The value already right in the packet's first description, no tag yet.
    const valueOnly = DC_PACKET.replace('<dc:subject>', `<plus:DataMining xmlns:plus="${PLUS}">${URI}</plus:DataMining><dc:subject>`);
    const text = both(valueOnly)!;
    const doc = parseXmp(text);
    expect(findProperty(doc, PLUS, 'DataMining').map((p) => p.description)).toEqual([doc.rdf!.children[0]]);
    expect(findProperty(doc, SERVICE_TAG.uri, SERVICE_TAG.local).map((p) => p.description)).toEqual([doc.rdf!.children[0]]);
    expect(text).toContain('<dc:subject>');
    expect(both(text)).toBeUndefined();
  });

  it('gives each namespace its own prefix even when they ask for the same one', () => {
    for (const packet of [DC_PACKET, undefined]) {
      const plan = setSimpleProperties(packet === undefined ? undefined : parseXmp(packet), undefined, [
        { name: { uri: 'urn:example:a#', prefix: 'ex', local: 'one' }, value: '1' },
        { name: { uri: 'urn:example:b#', prefix: 'ex', local: 'two' }, value: '2' },
        { name: { uri: 'urn:example:c#', prefix: 'rdf', local: 'three' }, value: '3' },
      ])!;
      const doc = parseXmp(serialise(plan.standard));
      expect(findProperty(doc, 'urn:example:a#', 'one').map((p) => p.value)).toEqual(['1']);
      expect(findProperty(doc, 'urn:example:b#', 'two').map((p) => p.value)).toEqual(['2']);
      expect(findProperty(doc, 'urn:example:c#', 'three').map((p) => p.value)).toEqual(['3']);
    }
  });
});
