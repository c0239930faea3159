import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { crc32, crc32Fallback } from '../../src/core/bytes/digest.js';
import { decodeXmpText } from '../../src/core/bytes/assemble.js';

describe('crc32', () => {
  it('the table fallback (Node before 20.15) agrees with the native one', () => {
    for (const size of [0, 1, 13, 1000, 65537]) {
      const bytes = randomBytes(size);
      expect(crc32Fallback(bytes)).toBe(crc32(bytes));
    }
    expect(crc32(Buffer.from('IEND', 'latin1'))).toBe(0xae426082);
  });
});

describe('decodeXmpText', () => {
  it('reads UTF-8, and UTF-16 in either byte order, and refuses invalid bytes', () => {
    const text = '<x:xmpmeta xmlns:x="adobe:ns:meta/">é</x:xmpmeta>';
    expect(decodeXmpText(Buffer.from(text, 'utf8'))).toBe(text);
    expect(decodeXmpText(Buffer.from(text, 'utf16le'))).toBe(text);
    expect(decodeXmpText(Buffer.from(text, 'utf16le').swap16())).toBe(text);
    expect(decodeXmpText(Buffer.from([0x3c, 0xc3, 0x28]))).toBeUndefined();
  });
});
