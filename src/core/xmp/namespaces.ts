/** Namespace URIs we read or write. Matching is always on the URI, never the prefix. */
export const NS = {
  x: 'adobe:ns:meta/',
  rdf: 'http://www.w3.org/1999/02/22-rdf-syntax-ns#',
  xml: 'http://www.w3.org/XML/1998/namespace',
  xmlns: 'http://www.w3.org/2000/xmlns/',
  /** PLUS LDF XMP namespace (plus:DataMining, plus:OtherConstraints). */
  plus: 'http://ns.useplus.org/ldf/xmp/1.0/',
  /** Holds HasExtendedXMP, the GUID of a JPEG's Extended XMP. */
  xmpNote: 'http://ns.adobe.com/xmp/note/',
  /** W3C TDMRep, the form its spec gives for XMP. */
  tdm: 'http://www.w3.org/ns/tdmrep/',
  /** W3C TDMRep, the EPUB prefix form (with '#'); accepted on read. */
  tdmHash: 'http://www.w3.org/ns/tdmrep#',
  /** optmark's own properties: the signed provenance tag. */
  optmark: 'http://ns.optmark.org/xmp/1.0/',
} as const;

/** The opt-out field. */
export const DATA_MINING = { uri: NS.plus, prefix: 'plus', local: 'DataMining' } as const;
/** The readable constraints DMI-PROHIBITED-SEECONSTRAINT points to: a Lang Alt of text (PLUS LDF). */
export const OTHER_CONSTRAINTS = { uri: NS.plus, prefix: 'plus', local: 'OtherConstraints' } as const;
/** Our signed provenance tag, a compact JWS (docs/provenance.md). */
export const SERVICE_TAG = { uri: NS.optmark, prefix: 'optmark', local: 'ServiceTag' } as const;
