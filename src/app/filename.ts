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

/** The longest name kept for a file (records, the vault: their columns hold 1,024 characters). */
export const MAX_KEPT_NAME = 1024;

/**
 * A file's name as given (an upload's, a repository path), as records and
 * the vault keep it: without control characters (a NUL cannot be stored;
 * the others only hide what the name says), well formed, and at most
 * MAX_KEPT_NAME characters, its end (the extension) kept when it is cut.
 */
export function keptName(name: string): string {
  const chars = Array.from(name.toWellFormed().replace(/[\u0000-\u001f\u007f-\u009f]/g, ''));
  if (chars.length <= MAX_KEPT_NAME) return chars.join('');
  const tail = chars.slice(-16);
  return [...chars.slice(0, MAX_KEPT_NAME - tail.length - 1), '…', ...tail].join('');
}

/**
 * A multipart part's file name as its sender wrote it. Browsers and undici's
 * FormData (the HTML standard's multipart/form-data encoding) send a `"`, a
 * CR and an LF in a file name as %22, %0D and %0A, and encode nothing else:
 * exactly those three are decoded, so that `say "hi".jpg` comes back as
 * say-hi-optout.jpg, not say-22hi-22-optout.jpg (CR and LF then go by
 * keptName's rule). A name typed with "%22" in it reads as a quote: the
 * encoding cannot tell the two apart.
 */
export function formFilename(name: string): string {
  return name.replace(/%(22|0d|0a)/gi, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}
