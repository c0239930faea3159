/**
 * The Buffer the shared container code uses to read Latin-1 and UTF-8 text,
 * for the browser bundle: the few static methods it calls.
 */
const latin1 = new TextDecoder('latin1');
const utf8 = new TextDecoder();
const encoder = new TextEncoder();

function toString(this: Uint8Array, encoding = 'utf8', start = 0, end = this.length): string {
  const part = this.subarray(start, end);
  return encoding === 'latin1' || encoding === 'binary' || encoding === 'ascii' ? latin1.decode(part) : utf8.decode(part);
}

function wrap(bytes: Uint8Array): Uint8Array {
  return Object.assign(bytes, { toString });
}

export const Buffer = {
  from(value: string | ArrayLike<number> | ArrayBuffer, encodingOrOffset?: string | number, length?: number): Uint8Array {
    if (typeof value === 'string') {
      if (encodingOrOffset === 'latin1' || encodingOrOffset === 'binary') return wrap(Uint8Array.from(value, (c) => c.charCodeAt(0) & 0xff));
      return wrap(encoder.encode(value));
    }
    if (value instanceof ArrayBuffer) return wrap(new Uint8Array(value, (encodingOrOffset as number | undefined) ?? 0, length));
    return wrap(Uint8Array.from(value as ArrayLike<number>));
  },
  isBuffer: (value: unknown) => value instanceof Uint8Array,
  allocUnsafe: (size: number) => wrap(new Uint8Array(size)),
  byteLength: (text: string) => encoder.encode(text).length,
  concat(parts: readonly Uint8Array[]): Uint8Array {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return wrap(out);
  },
};
