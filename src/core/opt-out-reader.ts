/**
 * A quick read of whether a file carries the opt-out in its standard XMP
 * packet, with the same container handlers and XMP parser as verify: what
 * the mark page checks in the browser before uploading, so that files
 * already opted out are skipped without spending a call. It never decides
 * for the server (Extended XMP, C2PA and the signature are not looked at);
 * a file it cannot read is simply sent.
 */
import { sniff } from './formats/sniff.js';
import { isOptedOut } from './signals.js';
import { parseXmp } from './xmp/document.js';
import { NO_FACTS, readFacts } from './xmp/facts.js';

export interface QuickReading {
  readonly optedOut: boolean;
  /** The prohibiting value found (its vocabulary code), when opted out. */
  readonly code: string | undefined;
}

/** @throws the handlers' and the parser's typed errors for a file they cannot read */
export function readOptOut(bytes: Uint8Array): QuickReading {
  const handler = sniff(bytes);
  const first = handler.open(bytes).xmp.packets[0];
  const facts = first ? readFacts(parseXmp(first.text), undefined) : NO_FACTS;
  const optedOut = isOptedOut(facts);
  return { optedOut, code: optedOut ? facts.dataMining.find((d) => d.prohibited)?.code : undefined };
}
