import { CorruptImageError, type ImageFormat } from '../../errors.js';

/**
 * Bounds-checked reads over an image's bytes. Every length or offset that comes
 * from the file goes through `need()` first, so a lying or truncated file ends
 * in a CorruptImageError naming what was cut short, never a RangeError.
 */
export class ByteView {
  readonly length: number;
  private readonly data: DataView;

  constructor(
    readonly bytes: Uint8Array,
    readonly format: ImageFormat,
  ) {
    this.length = bytes.length;
    this.data = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** Throw unless `count` bytes are available at `offset`. */
  need(offset: number, count: number, what: string): void {
    if (offset < 0 || count < 0 || offset + count > this.length) {
      throw this.corrupt(
        `${what} runs past the end of the file (needs ${count} bytes at offset ${offset}, file has ${this.length})`,
      );
    }
  }

  corrupt(reason: string): CorruptImageError {
    return new CorruptImageError(this.format, reason);
  }

  u8(offset: number, what: string): number {
    this.need(offset, 1, what);
    return this.bytes[offset]!;
  }

  u16be(offset: number, what: string): number {
    this.need(offset, 2, what);
    return this.data.getUint16(offset, false);
  }

  u32be(offset: number, what: string): number {
    this.need(offset, 4, what);
    return this.data.getUint32(offset, false);
  }

  u16le(offset: number, what: string): number {
    this.need(offset, 2, what);
    return this.data.getUint16(offset, true);
  }

  u24le(offset: number, what: string): number {
    this.need(offset, 3, what);
    return this.data.getUint16(offset, true) | (this.bytes[offset + 2]! << 16);
  }

  u32le(offset: number, what: string): number {
    this.need(offset, 4, what);
    return this.data.getUint32(offset, true);
  }

  /** Latin-1 decode of `count` bytes (FourCCs, chunk types, signatures). */
  ascii(offset: number, count: number, what: string): string {
    this.need(offset, count, what);
    return latin1(this.bytes, offset, offset + count);
  }
}

export function latin1(bytes: Uint8Array, start: number, end: number): string {
  let text = '';
  for (let i = start; i < end; i++) text += String.fromCharCode(bytes[i]!);
  return text;
}

/** True when `bytes` holds exactly the Latin-1 string `text` at `offset`. */
export function startsWithAt(bytes: Uint8Array, offset: number, text: string): boolean {
  if (offset < 0 || offset + text.length > bytes.length) return false;
  for (let i = 0; i < text.length; i++) {
    if (bytes[offset + i] !== text.charCodeAt(i)) return false;
  }
  return true;
}
