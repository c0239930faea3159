import { describe, expect, it } from 'vitest';
import { parseXmp } from '../../../src/core/xmp/document.js';
import { readFacts } from '../../../src/core/xmp/facts.js';
import { isOptedOut, signalsOf } from '../../../src/core/signals.js';
import { InvalidXmpError } from '../../../src/errors.js';

const PLUS = 'http://ns.useplus.org/ldf/xmp/1.0/';
const VOCAB = 'http://ns.useplus.org/ldf/vocab/';
const RDF = 'http://www.w3.org/1999/02/22-rdf-syntax-ns#';

function packet(descriptions: string, rdfAttrs = ''): string {
  return `<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="${RDF}"${rdfAttrs}>${descriptions}</rdf:RDF></x:xmpmeta>
<?xpacket end="w"?>`;
}

const facts = (text: string) => readFacts(parseXmp(text));

describe('reading plus:DataMining', () => {
  it('reads the element form', () => {
    const f = facts(packet(`<rdf:Description rdf:about="" xmlns:plus="${PLUS}"><plus:DataMining>${VOCAB}DMI-PROHIBITED-GENAIMLTRAINING</plus:DataMining></rdf:Description>`));
    expect(f.dataMining).toMatchObject([{ code: 'DMI-PROHIBITED-GENAIMLTRAINING', prohibited: true, form: 'element' }]);
    expect(isOptedOut(f)).toBe(true);
  });

  it('reads the attribute form', () => {
    const f = facts(packet(`<rdf:Description rdf:about="" xmlns:plus="${PLUS}" plus:DataMining="${VOCAB}DMI-PROHIBITED-EXCEPTSEARCHENGINEINDEXING"/>`));
    expect(f.dataMining).toMatchObject([{ code: 'DMI-PROHIBITED-EXCEPTSEARCHENGINEINDEXING', prohibited: true, form: 'attribute' }]);
  });

  it('reads the rdf:resource form', () => {
    const f = facts(packet(`<rdf:Description rdf:about="" xmlns:plus="${PLUS}"><plus:DataMining rdf:resource="${VOCAB}DMI-PROHIBITED"/></rdf:Description>`));
    expect(f.dataMining).toMatchObject([{ code: 'DMI-PROHIBITED', prohibited: true, form: 'resource' }]);
  });

  it('matches the namespace URI whatever the prefix, declared on any ancestor', () => {
    const f = facts(packet(`<rdf:Description rdf:about=""><iptcExt:DataMining>${VOCAB}DMI-PROHIBITED</iptcExt:DataMining></rdf:Description>`, ` xmlns:iptcExt="${PLUS}"`));
    expect(isOptedOut(f)).toBe(true);
  });

  it('ignores a plus prefix bound to another namespace', () => {
    const f = facts(packet(`<rdf:Description rdf:about="" xmlns:plus="http://example.com/not-plus/"><plus:DataMining>${VOCAB}DMI-PROHIBITED</plus:DataMining></rdf:Description>`));
    expect(f.dataMining).toEqual([]);
  });

  it('finds the property in any of several rdf:Description elements', () => {
    const f = facts(
      packet(
        `<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:format>image/jpeg</dc:format></rdf:Description>` +
          `<rdf:Description rdf:about="" xmlns:plus="${PLUS}" plus:DataMining="${VOCAB}DMI-PROHIBITED-SEECONSTRAINT">` +
          `<plus:OtherConstraints><rdf:Alt><rdf:li xml:lang="de">Kein KI-Training</rdf:li><rdf:li xml:lang="x-default">No AI training</rdf:li></rdf:Alt></plus:OtherConstraints></rdf:Description>`,
      ),
    );
    expect(isOptedOut(f)).toBe(true);
    expect(f.otherConstraints).toBe('No AI training');
  });

  it.each([
    ['DMI-ALLOWED', `${VOCAB}DMI-ALLOWED`, false],
    ['DMI-UNSPECIFIED', `${VOCAB}DMI-UNSPECIFIED`, false],
    ['an https URI', `https://ns.useplus.org/ldf/vocab/DMI-PROHIBITED`, true],
    ['a bare code', 'DMI-PROHIBITED-AIMLTRAINING', true],
    ['lower case', `${VOCAB}dmi-prohibited`, true],
    ['an invented code', `${VOCAB}DMI-PROHIBITED-AITRAINING`, true],
  ])('does not count %s as an opt-out', (_, value, nonCanonical) => {
    const f = facts(packet(`<rdf:Description rdf:about="" xmlns:plus="${PLUS}"><plus:DataMining>${value}</plus:DataMining></rdf:Description>`));
    expect(f.dataMining).toMatchObject([{ prohibited: false, nonCanonical }]);
    expect(isOptedOut(f)).toBe(false);
    expect(signalsOf(f)).toEqual([]);
  });

  it('counts all seven DMI-PROHIBITED values', () => {
    for (const code of ['AIMLTRAINING', 'GENAIMLTRAINING', 'EXCEPTSEARCHENGINEINDEXING', 'SEECONSTRAINT', 'SEEEMBEDDEDRIGHTSEXPR', 'SEELINKEDRIGHTSEXPR']) {
      const f = facts(packet(`<rdf:Description xmlns:plus="${PLUS}" plus:DataMining="${VOCAB}DMI-PROHIBITED-${code}"/>`));
      expect(isOptedOut(f)).toBe(true);
    }
  });

  it('does not take a struct for a value', () => {
    const f = facts(packet(`<rdf:Description xmlns:plus="${PLUS}"><plus:DataMining rdf:parseType="Resource"><plus:x>${VOCAB}DMI-PROHIBITED</plus:x></plus:DataMining></rdf:Description>`));
    expect(isOptedOut(f)).toBe(false);
  });

  it('reads entities and character references in values', () => {
    const f = facts(packet(`<rdf:Description xmlns:plus="${PLUS}"><plus:DataMining>http://ns.useplus.org/ldf/vocab/DMI&#x2D;PROHIBITED</plus:DataMining></rdf:Description>`));
    expect(isOptedOut(f)).toBe(true);
  });
});

describe('reading TDMRep', () => {
  it.each(['http://www.w3.org/ns/tdmrep/', 'http://www.w3.org/ns/tdmrep#'])('reads tdm:reservation and tdm:policy in %s', (ns) => {
    const f = facts(packet(`<rdf:Description xmlns:tdm="${ns}" tdm:reservation="1"><tdm:policy>https://example.com/policy.json</tdm:policy></rdf:Description>`));
    expect(f.tdmReservation).toBe('1');
    expect(f.tdmPolicy).toBe('https://example.com/policy.json');
    expect(signalsOf(f)).toEqual(['tdmrep.reservation']);
    expect(isOptedOut(f)).toBe(false);
  });

  it('treats any reservation other than 1 as unset', () => {
    expect(signalsOf(facts(packet(`<rdf:Description xmlns:tdm="http://www.w3.org/ns/tdmrep/" tdm:reservation="0"/>`)))).toEqual([]);
    expect(signalsOf(facts(packet(`<rdf:Description xmlns:tdm="http://www.w3.org/ns/tdmrep/" tdm:reservation="yes"/>`)))).toEqual([]);
  });
});

describe('what the parser refuses', () => {
  const refuse = (text: string, reason: RegExp) => {
    expect(() => parseXmp(text)).toThrow(InvalidXmpError);
    expect(() => parseXmp(text)).toThrow(reason);
  };

  it('refuses a DOCTYPE or ENTITY declaration, so no entity is ever expanded', () => {
    refuse(`<!DOCTYPE x [<!ENTITY a "b">]><x:xmpmeta xmlns:x="adobe:ns:meta/">&a;</x:xmpmeta>`, /DOCTYPE/);
    refuse(`<?xpacket begin=""?><!doctype x SYSTEM "file:///etc/passwd"><x:xmpmeta xmlns:x="adobe:ns:meta/"/>`, /DOCTYPE/);
  });

  it('refuses an undeclared entity reference', () => {
    refuse(`<x:xmpmeta xmlns:x="adobe:ns:meta/">&lol;</x:xmpmeta>`, /well-formed/);
  });

  it('refuses nesting deeper than 64', () => {
    refuse(`<x:xmpmeta xmlns:x="adobe:ns:meta/">${'<a>'.repeat(100)}${'</a>'.repeat(100)}</x:xmpmeta>`, /deeper than 64/);
  });

  it('refuses two roots, a foreign root, broken XML and an unbound prefix', () => {
    refuse(`<x:xmpmeta xmlns:x="adobe:ns:meta/"/><x:xmpmeta xmlns:x="adobe:ns:meta/"/>`, /well-formed/);
    refuse(`<svg xmlns="http://www.w3.org/2000/svg"/>`, /root element/);
    refuse(`<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF>`, /well-formed/);
    refuse(`<x:xmpmeta xmlns:x="adobe:ns:meta/"><p:q/></x:xmpmeta>`, /well-formed/);
  });

  it('refuses a packet over the size cap', () => {
    refuse(`<x:xmpmeta xmlns:x="adobe:ns:meta/">${' '.repeat(8 * 1024 * 1024)}</x:xmpmeta>`, /larger than/);
  });

  it('reads past NUL padding and blanked bytes that some writers leave', () => {
    const text = `${packet(`<rdf:Description xmlns:plus="${PLUS}">\0\0\0<plus:DataMining>${VOCAB}DMI-PROHIBITED</plus:DataMining></rdf:Description>`)}\0\0\0\0`;
    expect(isOptedOut(facts(text))).toBe(true);
  });

  it('ends the packet at its first xpacket trailer: the tail of an older, longer packet behind it is not read', () => {
    // exempi rewrites a PNG's packet in place with a shorter one and leaves the old packet's end behind it.
    const current = packet(`<rdf:Description rdf:about="" xmlns:plus="${PLUS}"><plus:DataMining>${VOCAB}DMI-PROHIBITED</plus:DataMining></rdf:Description>`).replace('end="w"', 'end="r"');
    const leftover = `${' '.repeat(300)}zTlU</optmark:ServiceTag>\n <plus:DataMining>${VOCAB}DMI-ALLOWED</plus:DataMining></rdf:Description>\n</rdf:RDF>\n</x:xmpmeta>\n${' '.repeat(2000)}\n<?xpacket end="w"?>`;
    const doc = parseXmp(current + leftover);
    expect(doc.trailer?.end).toBe(current.length);
    expect(readFacts(doc).dataMining).toMatchObject([{ code: 'DMI-PROHIBITED' }]);
    // Only whitespace left behind reads the same.
    expect(parseXmp(`${current}\n   \n<?xpacket end="w"?>`).trailer?.end).toBe(current.length);
  });

  it('accepts a bare rdf:RDF packet and an x:xmpmeta without rdf:RDF', () => {
    expect(isOptedOut(facts(`<rdf:RDF xmlns:rdf="${RDF}"><rdf:Description xmlns:plus="${PLUS}" plus:DataMining="${VOCAB}DMI-PROHIBITED"/></rdf:RDF>`))).toBe(true);
    expect(facts(`<x:xmpmeta xmlns:x="adobe:ns:meta/" key="value"/>`).dataMining).toEqual([]);
  });
});
