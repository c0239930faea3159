/**
 * plus:OtherConstraints, the text DMI-PROHIBITED-SEECONSTRAINT points to:
 * the checks on the text, the Lang Alt as it is written (one rdf:Alt, its
 * x-default item first, other languages kept), escaping, and the file-level
 * write (kept opt-outs leave it alone, repeats, bytes outside the XMP).
 */
import { describe, expect, it } from 'vitest';
import { inspect, InvalidOptionError, protect } from '../../../src/index.js';
import { sniff } from '../../../src/core/formats/sniff.js';
import { isXName, parseXmp, type XElement } from '../../../src/core/xmp/document.js';
import { readFacts } from '../../../src/core/xmp/facts.js';
import { DATA_MINING, NS, OTHER_CONSTRAINTS } from '../../../src/core/xmp/namespaces.js';
import { checkOtherConstraints, MAX_OTHER_CONSTRAINTS_CHARACTERS } from '../../../src/core/xmp/other-constraints.js';
import { serialise } from '../../../src/core/xmp/packet.js';
import { findProperty } from '../../../src/core/xmp/properties.js';
import { setSimpleProperties } from '../../../src/core/xmp/set-property.js';
import { corpusFile } from '../../support/corpus.js';
import { generatedImages } from '../../support/generated.js';

const PLUS = 'http://ns.useplus.org/ldf/xmp/1.0/';
const RDF = 'http://www.w3.org/1999/02/22-rdf-syntax-ns#';
const SEE = 'DMI-PROHIBITED-SEECONSTRAINT';
const SEE_URI = `http://ns.useplus.org/ldf/vocab/${SEE}`;
const TEXT = `Tom & Jerry's <"studio"> terms: ]]> § 4 — Zürich, 東京 😀`;

const generated = await generatedImages();
const image = (name: string) => generated.find((g) => g.name === name)!.bytes;

/** Write the value and the text into `packet` (undefined: a file without XMP) as protect does; the packet text, or undefined when nothing changes. */
function write(packet: string | undefined, text = TEXT): string | undefined {
  const plan = setSimpleProperties(packet === undefined ? undefined : parseXmp(packet), undefined, [
    { name: DATA_MINING, value: SEE_URI },
    { name: OTHER_CONSTRAINTS, value: text, kind: 'langAlt' },
  ]);
  return plan && serialise(plan.standard);
}

/** The one plus:OtherConstraints element of a packet, after checking there is one. */
function theElement(packet: string): XElement {
  const occurrences = findProperty(parseXmp(packet), PLUS, 'OtherConstraints');
  expect(occurrences).toHaveLength(1);
  return occurrences[0]!.node as XElement;
}

/** Its items as [xml:lang, text]. */
function items(packet: string): Array<[string | undefined, string]> {
  const element = theElement(packet);
  expect(element.children).toHaveLength(1);
  const alt = element.children[0]!;
  expect(isXName(alt, NS.rdf, 'Alt')).toBe(true);
  return alt.children.map((li) => {
    expect(isXName(li, NS.rdf, 'li')).toBe(true);
    return [li.attrs.find((a) => isXName(a, NS.xml, 'lang'))?.value, li.text];
  });
}

const DC_PACKET = `<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="Some Tool 1.0">
  <rdf:RDF xmlns:rdf="${RDF}">
    <rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">
      <dc:title><rdf:Alt><rdf:li xml:lang="x-default">Sunset &amp; sea</rdf:li></rdf:Alt></dc:title>
      <!-- a comment that must survive -->
    </rdf:Description>
  </rdf:RDF>
</x:xmpmeta>
${' '.repeat(2000)}
<?xpacket end="w"?>`;

describe('the constraints text', () => {
  it('is needed with DMI-PROHIBITED-SEECONSTRAINT (code or URI), in words, as invalid_option', () => {
    for (const missing of [undefined, '', '   ']) {
      for (const value of [SEE, SEE_URI]) {
        const call = () => checkOtherConstraints(value, missing);
        expect(call).toThrow(InvalidOptionError);
        expect(call).toThrow('"Prohibited, see plus:OtherConstraints" (DMI-PROHIBITED-SEECONSTRAINT) needs a text');
      }
    }
  });

  it('goes with that value only; without a text, any other value or none is fine', () => {
    expect(() => checkOtherConstraints('DMI-PROHIBITED', 'some terms')).toThrow(/written only with .*; DMI-PROHIBITED was asked for/);
    expect(() => checkOtherConstraints(undefined, 'some terms')).toThrow(/; no value was asked for/);
    expect(checkOtherConstraints('DMI-PROHIBITED', undefined)).toBeUndefined();
    expect(checkOtherConstraints('DMI-PROHIBITED', '  ')).toBeUndefined();
    expect(checkOtherConstraints(undefined, undefined)).toBeUndefined();
  });

  it('loses its surrounding whitespace, and keeps everything else', () => {
    expect(checkOtherConstraints(SEE, `  ${TEXT} `)).toBe(TEXT);
  });

  it(`has at most ${MAX_OTHER_CONSTRAINTS_CHARACTERS} characters, counted as Unicode code points`, () => {
    expect(checkOtherConstraints(SEE, 'a'.repeat(1000))).toHaveLength(1000);
    expect(checkOtherConstraints(SEE, '😀'.repeat(1000))).toHaveLength(2000); // 1000 characters, 2000 UTF-16 units
    expect(() => checkOtherConstraints(SEE, 'a'.repeat(1001))).toThrow('has 1001 characters; it may have 1000 at most');
    expect(() => checkOtherConstraints(SEE, '😀'.repeat(1001))).toThrow(InvalidOptionError);
  });

  it('refuses control characters, line breaks and tabs included, and what XML cannot carry', () => {
    for (const [text, shown] of [['a\nb', '000A'], ['a\rb', '000D'], ['a\tb', '0009'], ['a\u0000b', '0000'], ['a\u0007b', '0007'], ['a\u007fb', '007F'], ['a\u0085b', '0085']] as const) {
      expect(() => checkOtherConstraints(SEE, text), shown).toThrow(`holds the control character U+${shown}`);
    }
    expect(() => checkOtherConstraints(SEE, 'a\uFFFEb')).toThrow(InvalidOptionError);
    expect(() => checkOtherConstraints(SEE, 'a\uD800b')).toThrow('not valid Unicode text');
  });
});

describe('writing plus:OtherConstraints as a Lang Alt', () => {
  it('a new packet: the value and one rdf:Alt with one x-default item, in one description, the text escaped', () => {
    const packet = write(undefined)!;
    expect(packet).toContain(
      `<plus:OtherConstraints><rdf:Alt><rdf:li xml:lang="x-default">Tom &amp; Jerry's &lt;"studio"&gt; terms: ]]&gt; § 4 — Zürich, 東京 😀</rdf:li></rdf:Alt></plus:OtherConstraints>`,
    );
    expect(items(packet)).toEqual([['x-default', TEXT]]);
    const doc = parseXmp(packet);
    expect(findProperty(doc, PLUS, 'OtherConstraints')[0]!.description).toBe(doc.rdf!.children[0]);
    expect(findProperty(doc, PLUS, 'DataMining')[0]!.description).toBe(doc.rdf!.children[0]);
    expect(readFacts(doc).otherConstraints).toBe(TEXT);
  });

  it('merged: in the new first description beside the value, everything else kept; written again, nothing changes', () => {
    const packet = write(DC_PACKET)!;
    expect(items(packet)).toEqual([['x-default', TEXT]]);
    expect(packet).toContain('<!-- a comment that must survive -->');
    expect(packet).toContain('Sunset &amp; sea');
    const doc = parseXmp(packet);
    expect(findProperty(doc, PLUS, 'OtherConstraints')[0]!.description).toBe(doc.rdf!.children[0]);
    expect(write(packet)).toBeUndefined();
    // Another text is a change, of the text only.
    const other = write(packet, 'Other terms')!;
    expect(items(other)).toEqual([['x-default', 'Other terms']]);
    const unpadded = (text: string) => text.replace(/\s+<\?xpacket end/, '<?xpacket end');
    expect(unpadded(other.replace('Other terms', "Tom &amp; Jerry's &lt;\"studio\"&gt; terms: ]]&gt; § 4 — Zürich, 東京 😀"))).toBe(unpadded(packet));
  });

  it('replaces the x-default item of an existing Lang Alt in place, keeping the other languages after it', () => {
    const before = DC_PACKET.replace(
      '<!-- a comment',
      `<plus:DataMining xmlns:plus="${PLUS}">${SEE_URI}</plus:DataMining><p:OtherConstraints xmlns:p="${PLUS}"><rdf:Alt><rdf:li xml:lang="de">Alte &amp; Bedingungen</rdf:li><rdf:li xml:lang="x-default">Old terms</rdf:li><rdf:li xml:lang="fr">Anciennes</rdf:li></rdf:Alt></p:OtherConstraints><!-- a comment`,
    );
    const packet = write(before)!;
    expect(items(packet)).toEqual([['x-default', TEXT], ['de', 'Alte & Bedingungen'], ['fr', 'Anciennes']]);
    // Same place, same prefix and declaration.
    expect(packet).toContain(`<p:OtherConstraints xmlns:p="${PLUS}"><rdf:Alt><rdf:li xml:lang="x-default">Tom &amp; Jerry`);
    expect(parseXmp(packet).rdf!.children).toHaveLength(1);
    expect(write(packet)).toBeUndefined();
  });

  it('keeps the other languages when it moves the property from a later description into the first', () => {
    const before = DC_PACKET.replace(
      '    </rdf:Description>\n',
      `    </rdf:Description>\n    <rdf:Description rdf:about="" xmlns:plus="${PLUS}"><plus:OtherConstraints><rdf:Alt><rdf:li xml:lang="x-default">Old</rdf:li><rdf:li xml:lang="de">Alt</rdf:li></rdf:Alt></plus:OtherConstraints></rdf:Description>\n`,
    );
    const packet = write(before)!;
    expect(items(packet)).toEqual([['x-default', TEXT], ['de', 'Alt']]);
    const doc = parseXmp(packet);
    expect(findProperty(doc, PLUS, 'OtherConstraints')[0]!.description).toBe(doc.rdf!.children[0]);
  });

  it('rewrites other shapes (a simple value, an attribute, an rdf:Bag, repeats) as one Lang Alt', () => {
    const shapes = [
      DC_PACKET.replace('<!-- a comment', `<plus:DataMining xmlns:plus="${PLUS}">${SEE_URI}</plus:DataMining><plus:OtherConstraints xmlns:plus="${PLUS}">plain</plus:OtherConstraints><!-- a comment`),
      DC_PACKET.replace('xmlns:dc=', `xmlns:plus="${PLUS}" plus:OtherConstraints="as an attribute" xmlns:dc=`),
      DC_PACKET.replace('<!-- a comment', `<plus:OtherConstraints xmlns:plus="${PLUS}"><rdf:Bag><rdf:li>one</rdf:li></rdf:Bag></plus:OtherConstraints><!-- a comment`),
      DC_PACKET.replace('<!-- a comment', `<plus:OtherConstraints xmlns:plus="${PLUS}">one</plus:OtherConstraints><plus:OtherConstraints xmlns:plus="${PLUS}">two</plus:OtherConstraints><!-- a comment`),
    ];
    for (const before of shapes) {
      const packet = write(before)!;
      expect(items(packet), before).toEqual([['x-default', TEXT]]);
      expect(write(packet)).toBeUndefined();
    }
  });

  it('declares the RDF namespace on the rdf:Alt where it has no prefix in scope', () => {
    const defaultRdf = `<x:xmpmeta xmlns:x="adobe:ns:meta/"><RDF xmlns="${RDF}"><Description about="" xmlns:plus="${PLUS}"><plus:DataMining>${SEE_URI}</plus:DataMining><plus:OtherConstraints>old</plus:OtherConstraints></Description></RDF></x:xmpmeta>`;
    const packet = write(defaultRdf)!;
    expect(packet).toContain(`<plus:OtherConstraints><rdf:Alt xmlns:rdf="${RDF}"><rdf:li xml:lang="x-default">`);
    expect(items(packet)).toEqual([['x-default', TEXT]]);
  });
});

describe('protect and verify with DMI-PROHIBITED-SEECONSTRAINT', () => {
  const cases = ['baseline.jpg', 'with-xmp.jpg', 'rgb8.png', 'with-xmp.png', 'lossy.webp', 'with-xmp.webp'];
  const otherBlocks = (bytes: Uint8Array) =>
    sniff(bytes)
      .blocks(bytes)
      .filter((b) => b.kind === 'other')
      .map((b) => Buffer.from(bytes.subarray(b.offset, b.offset + b.length)));

  it.each(cases)('%s: verify reads the text back; every byte outside the XMP is kept; a second protect returns the same bytes', (name) => {
    const input = image(name);
    const result = protect(input, { value: SEE, otherConstraints: TEXT });
    expect(result).toMatchObject({ value: SEE, otherConstraints: TEXT, changed: true });
    const { details } = inspect(result.bytes);
    expect(details.otherConstraints).toBe(TEXT);
    expect(details.dataMining.map((d) => d.value)).toEqual([SEE_URI]);
    expect(otherBlocks(result.bytes)).toEqual(otherBlocks(input));
    const again = protect(result.bytes, { value: SEE, otherConstraints: TEXT });
    expect(again.changed).toBe(false);
    expect(Buffer.from(again.bytes).equals(Buffer.from(result.bytes))).toBe(true);
  });

  it("refuses the value without a text, and a text with another value, before the file's XMP is read", () => {
    expect(() => protect(image('baseline.jpg'), { value: SEE })).toThrow(InvalidOptionError);
    // Two XMP packets would be ambiguous_xmp: the options are refused first.
    expect(() => protect(corpusFile('exiv2/bug1229-two-xmp.jpg').bytes, { value: SEE })).toThrow(InvalidOptionError);
    expect(() => protect(image('baseline.jpg'), { value: 'DMI-PROHIBITED', otherConstraints: 'terms' })).toThrow(/written only with/);
    expect(() => protect(image('baseline.jpg'), { otherConstraints: 'terms' })).toThrow(/no value was asked for/);
  });

  it("a kept opt-out keeps its own plus:OtherConstraints; overwriting replaces it", () => {
    const first = protect(image('baseline.jpg'), { value: SEE, otherConstraints: 'First terms' }).bytes;
    const kept = protect(first, { value: SEE, otherConstraints: 'Second terms', keepExisting: true });
    expect(kept).toMatchObject({ value: SEE, alreadyCarried: true, changed: false });
    expect(kept.otherConstraints).toBeUndefined();
    expect(inspect(kept.bytes).details.otherConstraints).toBe('First terms');
    const other = protect(image('baseline.jpg'), { value: 'DMI-PROHIBITED' }).bytes;
    const keptOther = protect(other, { value: SEE, otherConstraints: 'Second terms', keepExisting: true });
    expect(keptOther.value).toBe('DMI-PROHIBITED');
    expect(inspect(keptOther.bytes).details.otherConstraints).toBeNull();
    const overwritten = protect(first, { value: SEE, otherConstraints: 'Second terms' });
    expect(overwritten).toMatchObject({ value: SEE, otherConstraints: 'Second terms', alreadyCarried: true, changed: true });
    expect(inspect(overwritten.bytes).details.otherConstraints).toBe('Second terms');
  });

  it('writes over repeated plus:OtherConstraints that disagree (they are rewritten whole) without refusing the file', () => {
    const packet = DC_PACKET.replace('<!-- a comment', `<plus:OtherConstraints xmlns:plus="${PLUS}">one</plus:OtherConstraints><plus:OtherConstraints xmlns:plus="${PLUS}">two</plus:OtherConstraints><!-- a comment`);
    const withRepeats = protect(image('baseline.jpg'), { value: 'DMI-PROHIBITED' }).bytes;
    // The same file with the repeats in its XMP: refused when the text is not written, taken when it is.
    const jpeg = Buffer.from(sniff(withRepeats).writeXmp(withRepeats, { packet }));
    expect(() => protect(jpeg, { value: 'DMI-PROHIBITED' })).toThrow(/repeats plus:OtherConstraints/);
    const written = protect(jpeg, { value: SEE, otherConstraints: TEXT });
    expect(inspect(written.bytes).details.otherConstraints).toBe(TEXT);
    expect(inspect(written.bytes).details.warnings).toEqual([]);
  });
});
