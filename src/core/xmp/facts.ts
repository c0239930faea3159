/**
 * What the XMP says about opt-out, read from the standard packet and, for
 * JPEG, its Extended XMP. Strings in, plain data out; no container knowledge.
 */
import type { XmpDocument } from './document.js';
import { NS } from './namespaces.js';
import { findProperty, langAltValue, type PropertyForm } from './properties.js';
import { readDataMiningValue, type DataMiningReading } from './vocabulary.js';

export interface DataMiningFact extends DataMiningReading {
  readonly form: PropertyForm;
  /** True when this occurrence sits in JPEG Extended XMP. */
  readonly extended: boolean;
}

export interface XmpFacts {
  /** Every plus:DataMining occurrence, standard packet first. More than one is a defect. */
  readonly dataMining: readonly DataMiningFact[];
  /** plus:OtherConstraints (x-default), the human-readable companion. */
  readonly otherConstraints: string | undefined;
  /** W3C TDMRep `tdm:reservation` and `tdm:policy`, as stored. */
  readonly tdmReservation: string | undefined;
  readonly tdmPolicy: string | undefined;
  /** Our provenance tag (optmark:ServiceTag), as stored. */
  readonly serviceTag: string | undefined;
}

export const NO_FACTS: XmpFacts = {
  dataMining: [],
  otherConstraints: undefined,
  tdmReservation: undefined,
  tdmPolicy: undefined,
  serviceTag: undefined,
};

/** The first simple value of a property (any of `uris`), standard packet first, trimmed. */
export function firstValue(docs: ReadonlyArray<XmpDocument | undefined>, uris: readonly string[], local: string): string | undefined {
  for (const doc of docs) {
    if (!doc) continue;
    for (const uri of uris) {
      const value = findProperty(doc, uri, local).find((p) => p.value !== undefined)?.value;
      if (value !== undefined) return value.trim();
    }
  }
  return undefined;
}

export function readFacts(standard: XmpDocument, extended?: XmpDocument): XmpFacts {
  const docs = extended ? [standard, extended] : [standard];
  const dataMining: DataMiningFact[] = [];
  docs.forEach((doc, index) => {
    for (const occurrence of findProperty(doc, NS.plus, 'DataMining')) {
      // A struct or array where a URI belongs reads as an empty, non-prohibiting value.
      const reading = readDataMiningValue(occurrence.value ?? '');
      dataMining.push({ ...reading, form: occurrence.form, extended: index === 1 });
    }
  });
  let otherConstraints: string | undefined;
  for (const doc of docs) {
    const occurrence = findProperty(doc, NS.plus, 'OtherConstraints')[0];
    if (occurrence) {
      otherConstraints = langAltValue(occurrence);
      break;
    }
  }
  return {
    dataMining,
    otherConstraints,
    tdmReservation: firstValue(docs, [NS.tdm, NS.tdmHash], 'reservation'),
    tdmPolicy: firstValue(docs, [NS.tdm, NS.tdmHash], 'policy'),
    serviceTag: firstValue(docs, [NS.optmark], 'ServiceTag'),
  };
}

/** The GUID a standard packet names in xmpNote:HasExtendedXMP, if any. */
export function extendedXmpGuid(standard: XmpDocument): string | undefined {
  return firstValue([standard], [NS.xmpNote], 'HasExtendedXMP');
}
