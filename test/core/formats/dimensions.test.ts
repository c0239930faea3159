/**
 * The size a header declares, read without parsing the file, agrees with
 * libvips on every valid corpus file; it is undefined for a header cut
 * before its size fields and never throws on mangled bytes.
 */
import sharp from 'sharp';
import { expect, it } from 'vitest';
import { declaredDimensions, jpegFrameHeaderAt } from '../../../src/core/formats/dimensions.js';
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

/** A corpus file of each header layout, and how many bytes from its start hold its size fields. */
const LAYOUTS = [
  ['jpeg', 'exiftool/XMP.jpg'],
  ['png', 'pngsuite/basn2c08.png'],
  ['webp', 'pillow/hopper.webp'], // VP8 (lossy)
  ['webp', 'libwebp-test-data/lossless1.webp'], // VP8L
  ['webp', 'pillow/iss634-animated.webp'], // VP8X
] as const;

function sizeFieldsEnd(bytes: Uint8Array, format: 'jpeg' | 'png' | 'webp'): number {
  if (format === 'png') return 24;
  if (format === 'webp') return 30;
  return jpegFrameHeaderAt(bytes)! + 9;
}

it.each(LAYOUTS)('%s %s: undefined while a cut stops before the size fields, the full size once it holds them', (format, name) => {
  const bytes = CORPUS.find((f) => f.name === name)!.bytes;
  expect(sniff(bytes).format).toBe(format);
  const full = declaredDimensions(bytes, format)!;
  expect(full.width * full.height).toBeGreaterThan(0);
  const end = sizeFieldsEnd(bytes, format);
  for (let cut = 0; cut < Math.min(bytes.length, end + 64); cut++) {
    expect(declaredDimensions(bytes.subarray(0, cut), format), `cut at ${cut}`).toEqual(cut < end ? undefined : full);
  }
});

it.each(LAYOUTS)('%s %s: never throws on a mangled header, and reads the size from the size fields', (format, name) => {
  const bytes = CORPUS.find((f) => f.name === name)!.bytes;
  const full = declaredDimensions(bytes, format)!;
  const end = sizeFieldsEnd(bytes, format);
  let changed = 0;
  for (let at = 0; at < end; at++) {
    for (const mask of [0x01, 0x80, 0xff]) {
      const mangled = Buffer.from(bytes);
      mangled[at] = mangled[at]! ^ mask;
      const size = declaredDimensions(mangled, format);
      if (size === undefined) continue;
      expect(Number.isInteger(size.width) && Number.isInteger(size.height) && size.width >= 0 && size.height >= 0, `byte ${at} ^ ${mask}`).toBe(true);
      if (size.width !== full.width || size.height !== full.height) changed++;
    }
  }
  // Flipping bits of the size fields moves the size read: the function reads those bytes, not a constant.
  expect(changed).toBeGreaterThan(0);
  // Two hand-made broken JPEG headers: a segment length under 2, and no marker where one must be.
  expect(declaredDimensions(Buffer.from([0xff, 0xd8, 0xff, 0xe1, 0x00, 0x01]), 'jpeg')).toBeUndefined();
  expect(declaredDimensions(Buffer.from([0xff, 0xd8, 0x12, 0x34]), 'jpeg')).toBeUndefined();
});
