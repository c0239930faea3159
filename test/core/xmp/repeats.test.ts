/**
 * Repeated properties: Adobe's XMP Toolkit (and exiv2 and exempi with it)
 * throws away a packet that repeats a property or a struct's field. verify
 * warns; protect drops exact repeats and refuses repeats that disagree.
 * test/oracle/readers.test.ts checks the result with exiv2 and exempi.
 */
import { describe, expect, it } from 'vitest';
import { inspect, protect } from '../../../src/index.js';
import { jpeg } from '../../../src/core/formats/jpeg.js';
import { parseXmp } from '../../../src/core/xmp/document.js';
import { findProperty } from '../../../src/core/xmp/properties.js';
import { repeatedProperties } from '../../../src/core/xmp/repeats.js';
import { ConflictingXmpError } from '../../../src/errors.js';
import { corpusFile } from '../../support/corpus.js';
import { generatedImages } from '../../support/generated.js';
import { withSegments, xmpPacket, xmpSegment } from '../../support/build.js';

const PS = 'xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/"';
const EXIF = 'xmlns:exif="http://ns.adobe.com/exif/1.0/"';
const plain = (await generatedImages()).find((g) => g.name === 'baseline.jpg')!.bytes;
const repeats = (descriptions: string) => repeatedProperties(parseXmp(xmpPacket(descriptions)));

describe('finding repeated properties', () => {
  it('counts a top-level property over every description and every form', () => {
    const found = repeats(
      `<rdf:Description rdf:about="" ${PS} photoshop:ColorMode="3"><photoshop:City>Lima</photoshop:City></rdf:Description>` +
        `<rdf:Description rdf:about="" xmlns:ps="http://ns.adobe.com/photoshop/1.0/"><ps:ColorMode>3</ps:ColorMode><ps:City>Cusco</ps:City></rdf:Description>`,
    );
    expect(found.map((r) => ({ path: r.path, count: r.occurrences.length, agree: r.agree, values: r.values, topLevel: r.topLevel }))).toEqual([
      { path: 'photoshop:ColorMode', count: 2, agree: true, values: ['"3"'], topLevel: true },
      { path: 'photoshop:City', count: 2, agree: false, values: ['"Lima"', '"Cusco"'], topLevel: true },
    ]);
  });

  it("finds a struct's repeated field, and compares structs and arrays whole", () => {
    const flash = (fired: string) => `<exif:Flash rdf:parseType="Resource"><exif:Fired>${fired}</exif:Fired><exif:Mode>2</exif:Mode></exif:Flash>`;
    expect(repeats(`<rdf:Description ${EXIF}>${flash('True')}${flash('True')}</rdf:Description>`).map((r) => [r.path, r.agree])).toEqual([['exif:Flash', true]]);
    expect(repeats(`<rdf:Description ${EXIF}>${flash('True')}${flash('False')}</rdf:Description>`).map((r) => [r.path, r.agree])).toEqual([['exif:Flash', false]]);
    const field = `<rdf:Description ${EXIF}><exif:Flash rdf:parseType="Resource"><exif:Fired>True</exif:Fired><exif:Fired>False</exif:Fired></exif:Flash></rdf:Description>`;
    expect(repeats(field).map((r) => [r.path, r.topLevel, r.agree])).toEqual([['exif:Flash/exif:Fired', false, false]]);
    const inArray = `<rdf:Description xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:s="urn:s#"><dc:x><rdf:Seq><rdf:li><rdf:Description><s:a>1</s:a><s:a>1</s:a></rdf:Description></rdf:li></rdf:Seq></dc:x></rdf:Description>`;
    expect(repeats(inArray).map((r) => r.path)).toEqual(['dc:x/s:a']);
  });

  it('does not take array items, qualifiers or rdf:value for repeats', () => {
    expect(
      repeats(
        `<rdf:Description xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:subject><rdf:Bag><rdf:li>a</rdf:li><rdf:li>a</rdf:li></rdf:Bag></dc:subject>` +
          `<dc:title><rdf:Alt><rdf:li xml:lang="x-default">t</rdf:li><rdf:li xml:lang="en">t</rdf:li></rdf:Alt></dc:title>` +
          `<dc:source rdf:parseType="Resource"><rdf:value>v</rdf:value></dc:source></rdf:Description>`,
      ),
    ).toEqual([]);
  });
});

describe('verify and protect on a packet that repeats properties', () => {
  it('exiv2/ReaganLargeJpg.jpg: verify warns, protect writes each property once and the packet otherwise as it was', () => {
    const input = corpusFile('exiv2/ReaganLargeJpg.jpg').bytes;
    const warning = inspect(input).details.warnings.find((w) => w.includes("Adobe's XMP Toolkit"));
    expect(warning).toBe(
      "the XMP packet repeats photoshop:ColorMode (2 times), photoshop:ICCProfile (2 times), photoshop:History (2 times), xmpMM:InstanceID (2 times): Adobe's XMP Toolkit, and the readers built on it (exiv2, exempi, Adobe's applications), throw such a packet away whole and see none of its properties; protect writes each once",
    );
    const out = protect(input).bytes;
    const packet = parseXmp(jpeg.readXmp(out).packets[0]!.text);
    expect(repeatedProperties(packet)).toEqual([]);
    expect(findProperty(packet, 'http://ns.adobe.com/photoshop/1.0/', 'ColorMode').map((p) => p.value)).toEqual(['3']);
    expect(inspect(out).details.warnings).toEqual([]);
    // Writing again changes nothing.
    expect(Buffer.from(protect(out).bytes).equals(Buffer.from(out))).toBe(true);
  });

  it('drops exact repeats even when the value is already there, so Adobe-based readers see it', () => {
    const input = withSegments(plain, xmpSegment(xmpPacket(`<rdf:Description rdf:about="" ${PS}><photoshop:Urgency>5</photoshop:Urgency><photoshop:Urgency>5</photoshop:Urgency></rdf:Description>`)));
    const once = protect(input).bytes;
    const withRepeat = jpeg.writeXmp(once, { packet: jpeg.readXmp(once).packets[0]!.text.replace('</photoshop:Urgency>', '</photoshop:Urgency><photoshop:Urgency>5</photoshop:Urgency>') });
    expect(repeatedProperties(parseXmp(jpeg.readXmp(withRepeat).packets[0]!.text))).toHaveLength(1);
    const again = protect(withRepeat);
    expect(again.changed).toBe(true);
    expect(repeatedProperties(parseXmp(jpeg.readXmp(again.bytes).packets[0]!.text))).toEqual([]);
  });

  it('refuses repeats that disagree, with conflicting_xmp naming them, and never refuses a repeated opt-out value', () => {
    const input = withSegments(
      plain,
      xmpSegment(xmpPacket(`<rdf:Description rdf:about="" ${PS} photoshop:City="Lima"><photoshop:City>Cusco</photoshop:City><photoshop:Urgency>5</photoshop:Urgency><photoshop:Urgency>5</photoshop:Urgency></rdf:Description>`)),
    );
    let refusal: unknown;
    try {
      protect(input);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(ConflictingXmpError);
    expect((refusal as ConflictingXmpError).code).toBe('conflicting_xmp');
    expect((refusal as Error).message).toMatch(/^The XMP repeats photoshop:City \("Lima", "Cusco"\) with different values\. Adobe's XMP Toolkit/);
    // verify reads it and warns.
    expect(inspect(input).details.warnings.join('\n')).toMatch(/repeats photoshop:City \(2 times\), photoshop:Urgency \(2 times\)/);

    const PLUS = 'xmlns:plus="http://ns.useplus.org/ldf/xmp/1.0/"';
    const twoValues = withSegments(plain, xmpSegment(xmpPacket(`<rdf:Description rdf:about="" ${PLUS} plus:DataMining="a"><plus:DataMining>b</plus:DataMining></rdf:Description>`)));
    expect(inspect(protect(twoValues).bytes).details.dataMining).toHaveLength(1);
  });
});
