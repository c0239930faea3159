import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { crc32 } from '../../src/core/bytes/digest.js';
import { decodeXmpText } from '../../src/core/bytes/assemble.js';

describe('crc32', () => {
  it("gives PNG's CRC, and continues from a previous value", () => {
    expect(crc32(Buffer.from('IEND', 'latin1'))).toBe(0xae426082);
    expect(crc32(Buffer.from('123456789', 'latin1'))).toBe(0xcbf43926);
    const bytes = randomBytes(65537);
    expect(crc32(bytes.subarray(1000), crc32(bytes.subarray(0, 1000)))).toBe(crc32(bytes));
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
