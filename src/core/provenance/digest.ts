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

export function contentDigest(bytes: Uint8Array, blocks: readonly Block[]): Buffer {
  const hash = createHash('sha256');
  let from = -1;
  let to = -1;
  for (const block of blocks) {
    if (block.kind !== 'other') continue;
    // Adjacent kept blocks are hashed in one update.
    if (block.offset === to) {
      to = block.offset + block.length;
      continue;
    }
    if (from >= 0) hash.update(bytes.subarray(from, to));
    from = block.offset;
    to = block.offset + block.length;
  }
  if (from >= 0) hash.update(bytes.subarray(from, to));
  return hash.digest();
}
