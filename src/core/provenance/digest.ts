/**
 * The content digest a provenance tag signs: SHA-256 over the file's bytes
 * without its XMP, so that adding XMP properties keeps a tag valid while any
 * other change (pixels, EXIF, ICC, another container block) breaks it.
 *
 * Precisely (docs/provenance.md): the file's blocks in order, as the
 * container handler lists them, minus every `xmp` block (JPEG standard and
 * extension XMP segments before the first SOS; PNG XMP text chunks; WebP
 * `XMP ` chunks) and minus the `header` blocks an XMP edit rewrites (the WebP
 * RIFF header and VP8X chunk, the offsets of a JPEG's AFCP trailer); the
 * remaining bytes are hashed as one stream.
 */
import { createHash } from 'node:crypto';
import type { Block } from '../formats/handler.js';

/**
 * The ranges of `bytes` the content digest covers, in order, as [from, to):
 * adjacent kept blocks in one range. Hashed as one stream, they give
 * contentDigest (a caller may hash them elsewhere, on another thread).
 */
export function contentRanges(blocks: readonly Block[]): Array<readonly [from: number, to: number]> {
  const ranges: Array<[number, number]> = [];
  for (const block of blocks) {
    if (block.kind !== 'other') continue;
    const last = ranges.at(-1);
    if (last && last[1] === block.offset) last[1] = block.offset + block.length;
    else ranges.push([block.offset, block.offset + block.length]);
  }
  return ranges;
}

export function contentDigest(bytes: Uint8Array, blocks: readonly Block[]): Buffer {
  const hash = createHash('sha256');
  for (const [from, to] of contentRanges(blocks)) hash.update(bytes.subarray(from, to));
  return hash.digest();
}
