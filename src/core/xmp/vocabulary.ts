/**
 * The PLUS Data Mining vocabulary (PLUS LDF 2.0.1; IPTC Photo Metadata 2023.1+).
 * Labels are the IPTC descriptions, which are also ExifTool's print names.
 */
export const DMI_VOCAB_PREFIX = 'http://ns.useplus.org/ldf/vocab/';

export const DATA_MINING_LABELS = {
  'DMI-UNSPECIFIED': 'Unspecified - no prohibition defined',
  'DMI-ALLOWED': 'Allowed',
  'DMI-PROHIBITED-AIMLTRAINING': 'Prohibited for AI/ML training',
  'DMI-PROHIBITED-GENAIMLTRAINING': 'Prohibited for Generative AI/ML training',
  'DMI-PROHIBITED-EXCEPTSEARCHENGINEINDEXING': 'Prohibited except for search engine indexing',
  'DMI-PROHIBITED': 'Prohibited',
  'DMI-PROHIBITED-SEECONSTRAINT': 'Prohibited, see plus:OtherConstraints',
  'DMI-PROHIBITED-SEEEMBEDDEDRIGHTSEXPR': 'Prohibited, see iptcExt:EmbdEncRightsExpr',
  'DMI-PROHIBITED-SEELINKEDRIGHTSEXPR': 'Prohibited, see iptcExt:LinkedEncRightsExpr',
} as const;

export type DataMiningCode = keyof typeof DATA_MINING_LABELS;

/** The seven codes that opt out; protect writes one of these. */
export const PROHIBITED_CODES = (Object.keys(DATA_MINING_LABELS) as DataMiningCode[]).filter((c) =>
  c.startsWith('DMI-PROHIBITED'),
);
export type ProhibitedCode = Exclude<DataMiningCode, 'DMI-UNSPECIFIED' | 'DMI-ALLOWED'>;

export const DEFAULT_CODE: ProhibitedCode = 'DMI-PROHIBITED-AIMLTRAINING';

export function isProhibitedCode(value: unknown): value is ProhibitedCode {
  return typeof value === 'string' && (PROHIBITED_CODES as string[]).includes(value);
}

export function uriFor(code: DataMiningCode): string {
  return DMI_VOCAB_PREFIX + code;
}

/** How a stored plus:DataMining value reads. */
export interface DataMiningReading {
  /** The value as stored (whitespace around it removed). */
  readonly value: string;
  /** The vocabulary code, when the value is exactly a vocabulary URI. */
  readonly code: DataMiningCode | undefined;
  /** True only for the exact `http://` URI of one of the seven DMI-PROHIBITED codes. */
  readonly prohibited: boolean;
  /**
   * A value that looks like a vocabulary term but is not its exact URI
   * (https, a bare code, other case): reported, never counted as opted out.
   */
  readonly nonCanonical: boolean;
}

export function readDataMiningValue(stored: string): DataMiningReading {
  const value = stored.trim();
  const code = value.startsWith(DMI_VOCAB_PREFIX) ? value.slice(DMI_VOCAB_PREFIX.length) : undefined;
  if (code !== undefined && code in DATA_MINING_LABELS) {
    const known = code as DataMiningCode;
    return { value, code: known, prohibited: isProhibitedCode(known), nonCanonical: false };
  }
  return { value, code: undefined, prohibited: false, nonCanonical: /DMI-/i.test(value) };
}
