/**
 * Decide the format from the bytes alone. The declared content type and the
 * file name are never consulted: what a parser parses must be what we checked.
 */
import { CorruptImageError, EmptyImageError, UnsupportedFormatError } from '../../errors.js';
import { startsWithAt } from '../bytes/view.js';
import type { ContainerHandler } from './handler.js';
import { HANDLERS } from './registry.js';

/** Formats we recognise only to name them in the refusal. */
const KNOWN_UNSUPPORTED: ReadonlyArray<{ name: string; test: (b: Uint8Array) => boolean }> = [
  { name: 'GIF', test: (b) => startsWithAt(b, 0, 'GIF87a') || startsWithAt(b, 0, 'GIF89a') },
  { name: 'TIFF', test: (b) => startsWithAt(b, 0, 'II*\0') || startsWithAt(b, 0, 'MM\0*') },
  { name: 'BMP', test: (b) => startsWithAt(b, 0, 'BM') && b.length >= 26 },
  { name: 'HEIF/AVIF', test: (b) => startsWithAt(b, 4, 'ftyp') },
  { name: 'JPEG 2000', test: (b) => startsWithAt(b, 4, 'jP  ') || startsWithAt(b, 0, '\xff\x4f\xff\x51') },
  { name: 'JPEG XL', test: (b) => startsWithAt(b, 0, '\xff\x0a') || startsWithAt(b, 4, 'JXL ') },
  { name: 'RIFF (not WebP)', test: (b) => startsWithAt(b, 0, 'RIFF') },
  { name: 'PDF', test: (b) => startsWithAt(b, 0, '%PDF') },
  { name: 'SVG or other XML', test: (b) => /^\s*(<\?xml|<svg|<!DOCTYPE)/i.test(head(b)) },
];

function head(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 256)).toString('latin1').replace(/^\uFEFF|^\xEF\xBB\xBF/, '');
}

/**
 * A PNG whose 8-byte signature was mangled by a text-mode transfer (CR/LF
 * conversion, a cleared high bit) still has its IHDR chunk right behind it.
 * That is a corrupt PNG, not an unknown format.
 */
function looksLikeDamagedPng(bytes: Uint8Array): boolean {
  return [11, 12, 13].some((at) => startsWithAt(bytes, at, 'IHDR')) && /PN[Gg]|P.G|.NG/.test(head(bytes).slice(0, 4));
}

/** The handler for these bytes, or a typed error saying why there is none. */
export function sniff(bytes: Uint8Array): ContainerHandler {
  if (bytes.length === 0) throw new EmptyImageError();
  const handler = HANDLERS.find((h) => h.canHandle(bytes));
  if (handler) return handler;
  if (looksLikeDamagedPng(bytes)) {
    throw new CorruptImageError('png', 'damaged PNG signature (typical of a file sent through a text-mode transfer)');
  }
  throw new UnsupportedFormatError(KNOWN_UNSUPPORTED.find((f) => f.test(bytes))?.name);
}
