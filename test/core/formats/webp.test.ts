import { describe, expect, it } from 'vitest';
import { inspect, protect } from '../../../src/index.js';
import { webp, WEBP_FLAGS } from '../../../src/core/formats/webp.js';
import { AmbiguousXmpError } from '../../../src/errors.js';
import { corpusFile } from '../../support/corpus.js';
import { enc, riff, riffChunk, xmpPacket } from '../../support/build.js';

const PLUS = 'http://ns.useplus.org/ldf/xmp/1.0/';
const URI = 'http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED-AIMLTRAINING';
const packet = xmpPacket(`<rdf:Description xmlns:plus="${PLUS}" plus:DataMining="${URI}"/>`);

const types = (bytes: Uint8Array) => webp.blocks(bytes).map((b) => b.type);
const vp8x = (bytes: Uint8Array) => {
  const block = webp.blocks(bytes).find((b) => b.type === 'VP8X')!;
  const at = block.offset + 8;
  const b = Buffer.from(bytes);
  return { flags: b[at]!, width: b.readUIntLE(at + 4, 3) + 1, height: b.readUIntLE(at + 7, 3) + 1 };
};
const chunksOf = (bytes: Uint8Array) => {
  const b = Buffer.from(bytes);
  const out: Buffer[] = [];
  for (let at = 12; at < b.length; ) {
    const size = b.readUInt32LE(at + 4);
    out.push(b.subarray(at, at + 8 + size + (size & 1)));
    at += 8 + size + (size & 1);
  }
  return out;
};

describe('WebP: the XMP chunk', () => {
  it('converts a simple lossy file to VP8X with the canvas of the bitstream, keeping trailing unknown chunks', () => {
    const input = corpusFile('libwebp-test-data/test.webp').bytes; // VP8 + IART ICOP INAM
    const out = protect(input).bytes;
    expect(types(input)).toEqual(['RIFF', 'VP8 ', 'IART', 'ICOP', 'INAM']);
    expect(types(out)).toEqual(['RIFF', 'VP8X', 'VP8 ', 'XMP ', 'IART', 'ICOP', 'INAM']);
    expect(vp8x(out)).toEqual({ flags: WEBP_FLAGS.XMP, width: 128, height: 128 });
    expect(Buffer.from(out).readUInt32LE(4)).toBe(out.length - 8);
  });

  it('sets the alpha flag from a lossless bitstream that uses alpha', () => {
    const out = protect(corpusFile('libwebp-test-data/lossless1.webp').bytes).bytes;
    expect(vp8x(out)).toEqual({ flags: WEBP_FLAGS.XMP | WEBP_FLAGS.ALPHA, width: 1000, height: 307 });
  });

  it('sets only the XMP flag of an existing VP8X, and puts XMP after EXIF', () => {
    const input = corpusFile('pillow/hopper_orientation_6.webp').bytes; // VP8X(EXIF) VP8 EXIF
    const out = protect(input).bytes;
    expect(vp8x(out).flags).toBe(vp8x(input).flags | WEBP_FLAGS.XMP);
    expect(types(out)).toEqual(['RIFF', 'VP8X', 'VP8 ', 'EXIF', 'XMP ']);
  });

  it('marks animated files after the last frame', () => {
    const input = corpusFile('pillow/iss634-animated.webp').bytes;
    const out = protect(input).bytes;
    expect(vp8x(out).flags & (WEBP_FLAGS.ANIMATION | WEBP_FLAGS.XMP)).toBe(WEBP_FLAGS.ANIMATION | WEBP_FLAGS.XMP);
    const t = types(out);
    expect(t.lastIndexOf('ANMF')).toBe(t.indexOf('XMP ') - 1);
  });

  it('pads an odd XMP chunk and keeps the RIFF size even', () => {
    const input = corpusFile('pillow/hopper.webp').bytes;
    for (const value of ['DMI-PROHIBITED', 'DMI-PROHIBITED-GENAIMLTRAINING'] as const) {
      const out = protect(input, { value }).bytes;
      expect(out.length % 2).toBe(0);
      expect(Buffer.from(out).readUInt32LE(4)).toBe(out.length - 8);
      expect(inspect(out).result.optedOut).toBe(true);
    }
  });

  it('reads ImageMagick\'s "XMP\\0" chunk and an unannounced XMP chunk, and repairs both', () => {
    const simple = corpusFile('pillow/hopper.webp').bytes;
    const [image] = chunksOf(simple);
    const input = riff([image!, riffChunk('XMP\0', enc(packet))]);
    const read = inspect(input);
    expect(read.result.optedOut).toBe(true);
    expect(read.details.warnings.join('\n')).toMatch(/XMP\\0/);
    const out = protect(input).bytes;
    expect(types(out)).toEqual(['RIFF', 'VP8X', 'VP8 ', 'XMP ']);
    expect(inspect(out).details.warnings).toEqual([]);
  });

  it('refuses to write into a file with two XMP chunks', () => {
    const [image] = chunksOf(corpusFile('pillow/hopper.webp').bytes);
    const input = riff([image!, riffChunk('XMP ', enc(packet)), riffChunk('XMP ', enc(packet))]);
    expect(() => protect(input)).toThrow(AmbiguousXmpError);
  });
});
