/**
 * A bounded walk over a JUMBF box tree (ISO/IEC 19566-5) before the C2PA
 * library parses it. The library reads nested superboxes recursively and
 * copies at each level, so an 8 MB store of nested `jumb` headers takes more
 * than a minute of CPU; a real manifest store is a handful of levels deep
 * (store > manifest > assertion store > assertion > content) and a few
 * hundred boxes. Anything deeper, larger or inconsistent is not a store we
 * read.
 */

export const JUMBF_LIMITS = { maxDepth: 16, maxBoxes: 10_000 } as const;

/** Whether `bytes` is one well-formed `jumb` superbox within the limits. */
export function jumbfWithinBounds(bytes: Uint8Array, limits = JUMBF_LIMITS): boolean {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // Each entry is the end of a superbox still open, outermost first.
  const open: number[] = [];
  let offset = 0;
  let end = bytes.length;
  let boxes = 0;
  let first = true;
  for (;;) {
    while (offset === end && open.length > 0) {
      open.pop();
      end = open.length > 0 ? open[open.length - 1]! : bytes.length;
    }
    if (offset === end) return !first;
    if (end - offset < 8 || ++boxes > limits.maxBoxes) return false;
    let length = view.getUint32(offset);
    const type = view.getUint32(offset + 4);
    let header = 8;
    if (length === 1) {
      if (end - offset < 16) return false;
      const big = view.getBigUint64(offset + 8);
      if (big > BigInt(end - offset)) return false;
      length = Number(big);
      header = 16;
    } else if (length === 0) {
      length = end - offset; // to the end of its parent
    }
    if (length < header || length > end - offset) return false;
    const isSuperbox = type === 0x6a756d62; // 'jumb'
    if (first && !isSuperbox) return false;
    first = false;
    if (isSuperbox) {
      if (open.length + 1 > limits.maxDepth) return false;
      open.push(offset + length);
      end = offset + length;
      offset += header;
    } else {
      offset += length;
    }
  }
}
