/**
 * A check's result in plain words, for people: the verdict first, then what
 * each part means. The dashboard's page (with or without JavaScript) and the
 * CLI show these words; the numbers stay in the detail.
 */
import type { VerifyDetails, VerifyResult } from './verify-image.js';

export type VerdictKind = 'opted-out' | 'stripped' | 'not-opted-out';

export interface Verdict {
  readonly kind: VerdictKind;
  /** One line: what the image says. */
  readonly headline: string;
  /** What it means and, where there is one, what to do. */
  readonly explanation: string;
  /** The provenance tag in words. */
  readonly signature: string;
  /** The fingerprint in words: found, not found or not examined; never a percentage for an absent mark. */
  readonly fingerprint: string;
  /** Other opt-out signals found (TDMRep, C2PA/CAWG), named. */
  readonly otherSignals: readonly string[];
}

const SIGNAL_NAMES: Readonly<Record<string, string>> = {
  'tdmrep.reservation': 'a TDMRep reservation (tdm:reservation = 1)',
  'cawg.trainingMining': 'a Content Credentials (CAWG) training-and-data-mining assertion that does not allow AI training',
  'c2pa.trainingMining': 'a Content Credentials (C2PA) training-and-data-mining assertion that does not allow AI training',
};

/** `details.signals` holds every signal found, also those the API's `signals` leaves out when the file has no IPTC field. */
export function verdictOf(result: VerifyResult, details: Pick<VerifyDetails, 'signals'>): Verdict {
  const otherSignals = details.signals.filter((s) => s !== 'iptc.dataMining').map((s) => SIGNAL_NAMES[s] ?? s);
  const { provenance, fingerprint } = result;
  const signature = !provenance.present
    ? 'No signature of this service.'
    : !provenance.verifiable
      ? 'Signed by another deployment of optmark, or with a key this service does not know: it cannot be checked here.'
      : provenance.valid
        ? 'Signed by this service, and unchanged since: the signature is valid.'
        : 'Signed by this service, but the file or its opt-out was changed after signing: the signature no longer holds.';
  const fingerprintWords =
    fingerprint.blocks === 0
      ? 'Not examined: the image is too small or too flat to carry the fingerprint, or its pixels cannot be decoded.'
      : fingerprint.present
        ? "Found: this service's fingerprint is in the pixels."
        : 'Not found.';
  if (result.optedOut) {
    return {
      kind: 'opted-out',
      headline: 'Opted out',
      explanation: 'The image carries the IPTC Data Mining opt-out: it reserves the use of the image for AI training, in a way machines can read. It may deter some reuse; it does not guarantee that AI systems comply.',
      signature,
      fingerprint: fingerprintWords,
      otherSignals,
    };
  }
  if (fingerprint.present) {
    return {
      kind: 'stripped',
      headline: "Not opted out in the metadata, but this service's fingerprint is in the pixels",
      explanation: 'The image was marked by this service, and its metadata was probably stripped since (many sites and tools remove it). Mark it again to put the opt-out back.',
      signature,
      fingerprint: fingerprintWords,
      otherSignals,
    };
  }
  return {
    kind: 'not-opted-out',
    headline: 'Not opted out',
    explanation:
      otherSignals.length > 0
        ? 'The image does not carry the IPTC Data Mining opt-out, though it carries another signal (below). Mark it to add the opt-out most tools read.'
        : 'The image does not carry the IPTC Data Mining opt-out. Mark it to add it.',
    signature,
    fingerprint: fingerprintWords,
    otherSignals,
  };
}
