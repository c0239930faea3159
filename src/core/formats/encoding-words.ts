/**
 * How a fingerprinted file was written, as data and in words: shared by the
 * CLI and the dashboard's browser code (no imports, so the browser bundle
 * takes nothing else).
 */

/** How a fingerprinted file is written (encoding-like.ts). */
export type FingerprintEncoding =
  | { readonly format: 'png' | 'webp'; readonly lossless: true }
  | {
      readonly format: 'jpeg' | 'webp';
      readonly lossless: false;
      /** 1-100: the original's, estimated from its headers, or the default quality when they say nothing usable. */
      readonly quality: number;
      /** The quality was read from the original (false: the default). */
      readonly estimated: boolean;
      /** A JPEG's chroma subsampling as written (undefined for grey). */
      readonly subsampling?: '4:2:0' | '4:4:4' | undefined;
      readonly progressive: boolean;
      /** Set when the file was written at a higher quality than the original's (this), to keep the mark or, for a WebP, 40 dB against the original. */
      readonly raisedFrom?: number;
    };

/**
 * The re-encoding in words, for the CLI and the dashboard: e.g. "re-encoded
 * as JPEG at quality 85, the original's (progressive, 4:2:0)" or "written
 * losslessly as PNG".
 */
export function describeEncoding(encoding: FingerprintEncoding): string {
  const name = encoding.format === 'jpeg' ? 'JPEG' : encoding.format === 'png' ? 'PNG' : 'WebP';
  if (encoding.lossless) return `written losslessly as ${name}`;
  const whose =
    encoding.raisedFrom !== undefined
      ? `above the original's ${encoding.raisedFrom}, whose re-encoding lost too much`
      : encoding.estimated
        ? "the original's"
        : "a default, the original's not being readable from its headers";
  const details = encoding.format === 'jpeg' ? [encoding.progressive ? 'progressive' : '', encoding.subsampling ?? ''].filter(Boolean) : [];
  return `re-encoded as ${name} at quality ${encoding.quality}, ${whose}${details.length ? ` (${details.join(', ')})` : ''}`;
}

/** A file's size change in per cent, signed, e.g. "+3.2 %" or "-0.4 %". */
export function sizeChange(before: number, after: number): string {
  if (before <= 0) return 'n/a';
  const change = (100 * (after - before)) / before;
  return `${change >= 0 ? '+' : '−'}${Math.abs(change).toFixed(1)} %`;
}
