/**
 * AFCP trailers (AXS File Concatenation Protocol): metadata (IPTC, text, a
 * thumbnail) appended after a JPEG's EOI, located by absolute file offsets.
 * An XMP edit changes the length of what comes before the trailer, so those
 * offsets must move with it; ExifTool otherwise finds the trailer by
 * scanning and reports "Adjusted AFCP offsets by N". These offset fields are
 * the one place outside the XMP blocks where protect changes bytes.
 *
 * Layout (as ExifTool's AFCP module documents and reads it): a 12-byte
 * header, `AXS!` (big-endian numbers) or `AXS*` (little-endian), a u16
 * version, a u16 entry count and a u32 0; then one 12-byte directory entry
 * per item, a 4-byte tag, a u32 size and a u32 absolute offset of the item's
 * data; the data; and a 12-byte end record, the same signature, the u32
 * absolute offset of the header and a u32 0. Readers find the end record at
 * the end of the file (or before later trailers), then the header through
 * its offset; when the header is not there, ExifTool scans the trailers from
 * their start for it and corrects every offset by the difference.
 */

const HEADER_BYTES = 12;
const ENTRY_BYTES = 12;
/** More entries than any AFCP writer makes; bounds the work of a hostile file. */
const MAX_ENTRIES = 4096;

/** One 4-byte field of an AFCP trailer that holds an absolute file offset. */
export interface AfcpOffsetField {
  /** Position of the field in the file. */
  readonly at: number;
  readonly littleEndian: boolean;
  /**
   * What the stored offsets are off by in this file (the header's real
   * position minus the one recorded; 0 when they are right). Rewriting
   * a field stores its value plus this plus the shift of the trailer.
   */
  readonly correction: number;
}

function isSignature(bytes: Uint8Array, at: number): boolean {
  return bytes[at] === 0x41 && bytes[at + 1] === 0x58 && bytes[at + 2] === 0x53 && (bytes[at + 3] === 0x21 || bytes[at + 3] === 0x2a);
}

function u32(bytes: Uint8Array, at: number, littleEndian: boolean): number {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(at, littleEndian);
}

function u16(bytes: Uint8Array, at: number, littleEndian: boolean): number {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint16(at, littleEndian);
}

function zero32(bytes: Uint8Array, at: number): boolean {
  return bytes[at] === 0 && bytes[at + 1] === 0 && bytes[at + 2] === 0 && bytes[at + 3] === 0;
}

/**
 * The directory of the AFCP whose header is at `header` and end record at
 * `end`, if it is one: its entries' data, corrected by `correction`, lie
 * between the directory and the end record.
 */
function directory(bytes: Uint8Array, header: number, end: number, correction: number): number[] | undefined {
  const littleEndian = bytes[header + 3] === 0x2a;
  if (!isSignature(bytes, header) || bytes[header + 3] !== bytes[end + 3] || !zero32(bytes, header + 8)) return undefined;
  const count = u16(bytes, header + 6, littleEndian);
  const dataStart = header + HEADER_BYTES + count * ENTRY_BYTES;
  if (count === 0 || count > MAX_ENTRIES || dataStart > end) return undefined;
  const fields: number[] = [];
  for (let i = 0; i < count; i++) {
    const entry = header + HEADER_BYTES + i * ENTRY_BYTES;
    const size = u32(bytes, entry + 4, littleEndian);
    const offset = u32(bytes, entry + 8, littleEndian) + correction;
    if (offset < dataStart || offset + size > end) return undefined;
    fields.push(entry + 8);
  }
  return fields;
}

/**
 * The offset fields of every AFCP trailer in `bytes[from, to)` (a JPEG's
 * bytes after its EOI), in file order. Each end record is paired with its
 * header as ExifTool pairs them: at the recorded offset, else the first
 * header from `from` on; a pair whose directory does not fit between them
 * is not AFCP and is left alone.
 */
export function afcpOffsetFields(bytes: Uint8Array, from: number, to: number): AfcpOffsetField[] {
  const search = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const signatures: number[] = [];
  for (let at = search.indexOf('AXS', from, 'latin1'); at >= 0 && at + HEADER_BYTES <= to; at = search.indexOf('AXS', at + 1, 'latin1')) {
    if (isSignature(bytes, at)) signatures.push(at);
  }
  const fields: AfcpOffsetField[] = [];
  const used = new Set<number>();
  for (const end of signatures) {
    if (used.has(end) || !zero32(bytes, end + 8)) continue;
    const littleEndian = bytes[end + 3] === 0x2a;
    const recorded = u32(bytes, end + 4, littleEndian);
    const candidates = recorded >= from && recorded < end ? [recorded] : [];
    const scanned = signatures.find((s) => s < end && !used.has(s));
    if (scanned !== undefined && scanned !== recorded) candidates.push(scanned);
    for (const header of candidates) {
      const correction = header - recorded;
      const entries = directory(bytes, header, end, correction);
      if (!entries) continue;
      used.add(header).add(end);
      fields.push({ at: end + 4, littleEndian, correction }, ...entries.map((at) => ({ at, littleEndian, correction })));
      break;
    }
  }
  return fields.sort((a, b) => a.at - b.at);
}

/**
 * Rewrite the offset fields in `out`, a copy of the file whose trailer moved
 * by `shift` bytes: each field gets its old value, corrected, plus the shift.
 * A value that would not fit 32 bits leaves that trailer's fields as they were.
 */
export function shiftAfcpOffsets(source: Uint8Array, out: Uint8Array, fields: readonly AfcpOffsetField[], shift: number): void {
  const values = fields.map((f) => u32(source, f.at, f.littleEndian) + f.correction + shift);
  if (values.some((v) => v < 0 || v > 0xffffffff)) return;
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  fields.forEach((f, i) => view.setUint32(f.at + shift, values[i]!, f.littleEndian));
}
