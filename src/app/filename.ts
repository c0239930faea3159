/**
 * The suggested name of a marked file: the upload's stem, made safe for file
 * systems and Content-Disposition headers, plus `-optout` and the extension of
 * the bytes actually produced (never the upload's own extension).
 */
const MAX_STEM = 100;
const SUFFIX = '-optout';

export function outputFilename(uploaded: string | undefined, extension: string): string {
  const base = (uploaded ?? '').split(/[\\/]/).pop() ?? '';
  const dot = base.lastIndexOf('.');
  const stem = (dot > 0 ? base.slice(0, dot) : base)
    .normalize('NFC')
    .replace(/[^\p{L}\p{N}_-]+/gu, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^[-_]+|[-_]+$/g, '');
  // Marking a marked file keeps one suffix: photo-optout.jpg stays photo-optout.jpg.
  const clean = (Array.from(stem).slice(0, MAX_STEM).join('') || 'image').replace(/-optout$/, '');
  return `${clean || 'image'}${SUFFIX}.${extension}`;
}
