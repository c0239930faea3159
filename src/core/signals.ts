/**
 * Opt-out signal identifiers reported in `signals`. Only `iptc.dataMining`
 * decides `optedOut`; the others are reported for what they are.
 */
import type { XmpFacts } from './xmp/facts.js';

export const SIGNAL = {
  /** plus:DataMining holds one of the seven DMI-PROHIBITED* vocabulary URIs. */
  iptcDataMining: 'iptc.dataMining',
  /** W3C TDMRep: tdm:reservation = 1 in the XMP. */
  tdmrepReservation: 'tdmrep.reservation',
  /** A C2PA manifest's CAWG training-and-data-mining assertion says notAllowed or constrained. */
  cawgTrainingMining: 'cawg.trainingMining',
  /** The same in the C2PA 1.x form of the assertion. */
  c2paTrainingMining: 'c2pa.trainingMining',
} as const;

export type Signal = (typeof SIGNAL)[keyof typeof SIGNAL];

/** True when any plus:DataMining occurrence prohibits: the image carries the opt-out. */
export function isOptedOut(facts: XmpFacts): boolean {
  return facts.dataMining.some((d) => d.prohibited);
}

/** Every signal the XMP makes, whether or not it has a plus:DataMining field. */
export function signalsOf(facts: XmpFacts): Signal[] {
  const signals: Signal[] = [];
  if (isOptedOut(facts)) signals.push(SIGNAL.iptcDataMining);
  // TDMRep: "1" reserves; any other value is a protocol error read as unset.
  if (facts.tdmReservation === '1') signals.push(SIGNAL.tdmrepReservation);
  return signals;
}

/**
 * The spec's `signals`, to the letter: "an empty array when the field is
 * absent". The signals found are listed when the file has a plus:DataMining
 * field (whatever its value), and none when it has not, even if other
 * vocabularies say something; those stay visible in verify's details.
 */
export function specSignals(facts: XmpFacts, found: readonly Signal[]): Signal[] {
  return facts.dataMining.length > 0 ? [...found] : [];
}
