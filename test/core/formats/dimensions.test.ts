/**
 * The size a header declares, read without parsing the file, agrees with
 * libvips on every valid corpus file, and never throws on garbage.
 */
import sharp from 'sharp';
import { expect, it } from 'vitest';
import { declaredDimensions } from '../../../src/core/formats/dimensions.js';
import { sniff } from '../../../src/core/formats/sniff.js';
import { CORPUS, INTENTIONALLY_CORRUPT } from '../../support/corpus.js';

const valid = CORPUS.filter((f) => !INTENTIONALLY_CORRUPT.has(f.name));

it(`agrees with libvips on all ${valid.length} valid corpus files`, async () => {
  const disagreements: string[] = [];
  for (const file of valid) {
    const meta = await sharp(file.bytes).metadata();
    const size = declaredDimensions(file.bytes, sniff(file.bytes).format);
    // libvips reports one page of an animation; the header names the canvas, which is the same size.
    if (size?.width !== meta.width || size?.height !== (meta.pageHeight ?? meta.height)) {
      disagreements.push(`${file.name}: ${size?.width}x${size?.height} vs ${meta.width}x${meta.pageHeight ?? meta.height}`);
    }
  }
  expect(disagreements).toEqual([]);
});

it('gives undefined, never an exception, for cut and mangled headers', () => {
  const jpeg = CORPUS.find((f) => f.name.endsWith('.jpg'))!.bytes;
  for (let cut = 0; cut < 400; cut++) {
    for (const format of ['jpeg', 'png', 'webp'] as const) {
      expect(() => declaredDimensions(jpeg.subarray(0, cut), format)).not.toThrow();
    }
  }
  expect(declaredDimensions(Buffer.from([0xff, 0xd8, 0xff, 0xe1, 0x00, 0x01]), 'jpeg')).toBeUndefined();
  expect(declaredDimensions(Buffer.from([0xff, 0xd8, 0x12, 0x34]), 'jpeg')).toBeUndefined();
});
