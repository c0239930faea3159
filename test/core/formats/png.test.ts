import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { inspect, protect } from '../../../src/index.js';
import { png } from '../../../src/core/formats/png.js';
import { AmbiguousXmpError } from '../../../src/errors.js';
import { corpusFile } from '../../support/corpus.js';
import { generatedImages } from '../../support/generated.js';
import { afterIhdr, chunk, enc, latin1, xmpPacket } from '../../support/build.js';

const PLUS = 'http://ns.useplus.org/ldf/xmp/1.0/';
const URI = 'http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED-AIMLTRAINING';
const images = Object.fromEntries((await generatedImages()).map((g) => [g.name, g.bytes]));
const plain = images['rgb8.png']!;
const packet = xmpPacket(`<rdf:Description xmlns:plus="${PLUS}" plus:DataMining="${URI}"/>`);
const KEYWORD = 'XML:com.adobe.xmp\0';

const types = (bytes: Uint8Array) => png.blocks(bytes).map((b) => (b.kind === 'xmp' ? `XMP:${b.type}` : b.type));
const insert = (bytes: Uint8Array, ...chunks: Buffer[]) => {
  const [head, tail] = afterIhdr(bytes);
  return Buffer.concat([head, ...chunks, tail]);
};
const beforeIend = (bytes: Uint8Array, ...chunks: Buffer[]) => Buffer.concat([bytes.subarray(0, bytes.length - 12), ...chunks, bytes.subarray(bytes.length - 12)]);

describe('PNG: the XMP chunk', () => {
  it('is an uncompressed iTXt right after IHDR, with a correct CRC', () => {
    const out = protect(plain).bytes;
    expect(types(out).slice(0, 4)).toEqual(['signature', 'IHDR', 'XMP:iTXt', 'pHYs']);
    const block = png.blocks(out)[2]!;
    const data = Buffer.from(out.subarray(block.offset + 8, block.offset + block.length - 4));
    expect(data.subarray(0, 22).toString('latin1')).toBe('XML:com.adobe.xmp\0\0\0\0\0');
  });

  it('replaces an uncompressed iTXt before IDAT in place', () => {
    const input = beforeIend(insert(plain, chunk('tEXt', latin1('Comment\0hello'))), chunk('tEXt', latin1('Author\0me')));
    const withXmp = png.writeXmp(input, { packet });
    const out = protect(withXmp, { value: 'DMI-PROHIBITED' }).bytes;
    expect(types(out)).toEqual(types(withXmp));
    expect(inspect(out).details.dataMining).toMatchObject([{ value: 'http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED' }]);
  });

  it.each([
    ['compressed iTXt', chunk('iTXt', Buffer.concat([latin1(KEYWORD), Buffer.from([1, 0, 0, 0]), deflateSync(enc(packet))]))],
    ['zTXt', chunk('zTXt', Buffer.concat([latin1(KEYWORD), Buffer.from([0]), deflateSync(enc(packet))]))],
    ['tEXt', chunk('tEXt', Buffer.concat([latin1(KEYWORD), enc(packet)]))],
    ['iTXt with a language tag', chunk('iTXt', Buffer.concat([latin1(KEYWORD), Buffer.from([0, 0]), latin1('en\0XMP\0'), enc(packet)]))],
  ])('reads XMP from a %s, and rewrites it as the standard iTXt', (_, xmp) => {
    const input = insert(plain, xmp);
    expect(inspect(input).result.optedOut).toBe(true);
    const out = protect(input, { value: 'DMI-PROHIBITED' }).bytes;
    expect(types(out).filter((t) => t.startsWith('XMP'))).toEqual(['XMP:iTXt']);
    expect(inspect(out).details.dataMining).toMatchObject([{ value: 'http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED' }]);
  });

  it('reads XMP after IDAT with a warning, and moves it before IDAT', () => {
    const input = corpusFile('exiftool/PNG.png').bytes;
    expect(types(input).indexOf('XMP:iTXt')).toBeGreaterThan(types(input).indexOf('IDAT'));
    expect(inspect(input).details.warnings.join()).toMatch(/after IDAT/);
    const out = protect(input).bytes;
    expect(types(out).indexOf('XMP:iTXt')).toBeLessThan(types(out).indexOf('IDAT'));
    expect(inspect(out).details.warnings).toEqual([]);
  });

  it('leaves text chunks with other keywords alone', () => {
    const other = chunk('iTXt', Buffer.concat([latin1('XML:com.adobe.xmp.not\0'), Buffer.from([0, 0, 0, 0]), enc(packet)]));
    const input = insert(plain, other);
    expect(inspect(input).result.optedOut).toBe(false);
    expect(Buffer.from(protect(input).bytes).includes(other)).toBe(true);
  });

  it('refuses to write into a file with two XMP chunks', () => {
    const xmp = chunk('iTXt', Buffer.concat([latin1(KEYWORD), Buffer.from([0, 0, 0, 0]), enc(packet)]));
    const input = beforeIend(insert(plain, xmp), xmp);
    expect(() => protect(input)).toThrow(AmbiguousXmpError);
    expect(inspect(input).result.optedOut).toBe(true);
  });

  it('works on APNG: acTL and fcTL stay where they were', () => {
    const input = corpusFile('pillow/apng-delay.png').bytes;
    const order = (bytes: Uint8Array) => types(bytes).filter((t) => ['acTL', 'fcTL', 'IDAT', 'fdAT'].includes(t));
    expect(order(protect(input).bytes)).toEqual(order(input));
  });
});
