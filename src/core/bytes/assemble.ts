/**
 * Build a new file from an ordered list of pieces: byte ranges of the input
 * (copied verbatim) and new bytes. One allocation, one pass: this is how every
 * handler writes, so every byte it does not mean to change is a plain copy.
 */
export type Piece = Uint8Array | { readonly from: number; readonly to: number };

export function assemble(source: Uint8Array, pieces: readonly Piece[]): Uint8Array {
  let total = 0;
  for (const piece of pieces) total += piece instanceof Uint8Array ? piece.length : piece.to - piece.from;
  // Every byte is written below, so skip the zero fill.
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (const piece of pieces) {
    if (piece instanceof Uint8Array) {
      out.set(piece, at);
      at += piece.length;
    } else {
      out.set(source.subarray(piece.from, piece.to), at);
      at += piece.to - piece.from;
    }
  }
  return out;
}

/**
 * The same file as `assemble` would build, left as the views that make it
 * (ranges of `source`, and the new bytes) without copying anything: a writer
 * that writes them out in one call (writev) never builds the file at all.
 * The views are valid while `source` is unchanged.
 */
export function views(source: Uint8Array, pieces: readonly Piece[]): Uint8Array[] {
  return pieces.map((piece) => (piece instanceof Uint8Array ? piece : source.subarray(piece.from, piece.to)));
}

/** One new buffer holding `parts` in order (what `assemble` builds from the same pieces). */
export function join(parts: readonly Uint8Array[]): Uint8Array {
  return assemble(new Uint8Array(0), parts);
}

const encoder = new TextEncoder();
export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

const strictDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
/** Decode UTF-8; returns undefined when the bytes are not valid UTF-8. */
export function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return strictDecoder.decode(bytes);
  } catch {
    return undefined;
  }
}

const utf16be = new TextDecoder('utf-16be', { fatal: true, ignoreBOM: true });
const utf16le = new TextDecoder('utf-16le', { fatal: true, ignoreBOM: true });

/**
 * Decode an XMP packet. XMP is UTF-8 almost everywhere, but the XMP spec
 * allows UTF-16 and real files carry it (ExifTool's own test images); the
 * encoding shows in the first bytes, `<` or the BOM of the xpacket header.
 * Returns undefined when the bytes are not valid text in the detected encoding.
 */
export function decodeXmpText(bytes: Uint8Array): string | undefined {
  const [a, b] = [bytes[0], bytes[1]];
  const decoder = (a === 0x00 && b === 0x3c) || (a === 0xfe && b === 0xff) ? utf16be
    : (a === 0x3c && b === 0x00) || (a === 0xff && b === 0xfe) ? utf16le
    : undefined;
  if (!decoder) return decodeUtf8(bytes);
  try {
    return decoder.decode(bytes);
  } catch {
    return undefined;
  }
}
