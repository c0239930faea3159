/**
 * EXIF orientation as a pixel permutation, with sharp's auto-orient as the
 * oracle for all eight values, and the round trip back to the stored layout
 * (into a new buffer or one given).
 */
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { toDisplayed, toStored, type Orientation, type Raster } from '../../../src/core/fingerprint/index.js';

const stored: Raster = (() => {
  const width = 7;
  const height = 4;
  const data = new Uint8Array(width * height * 3);
  for (let i = 0; i < data.length; i++) data[i] = (i * 37 + 11) & 255;
  return { data, width, height, channels: 3 };
})();

describe.each([1, 2, 3, 4, 5, 6, 7, 8] as Orientation[])('orientation %i', (orientation) => {
  it('turns the pixels as sharp displays them', async () => {
    // PNG keeps the values exactly; sharp reads the EXIF orientation from eXIf.
    const file = await sharp(stored.data, { raw: { width: stored.width, height: stored.height, channels: 3 } }).withMetadata({ orientation }).png().toBuffer();
    const { data, info } = await sharp(file).rotate().raw().toBuffer({ resolveWithObject: true });
    const displayed = toDisplayed(stored, orientation);
    expect([displayed.width, displayed.height]).toEqual([info.width, info.height]);
    expect(Buffer.from(displayed.data).equals(data)).toBe(true);
  });

  it('comes back to the stored layout', () => {
    const back = toStored(toDisplayed(stored, orientation), orientation);
    expect([back.width, back.height]).toEqual([stored.width, stored.height]);
    expect(Buffer.from(back.data).equals(Buffer.from(stored.data))).toBe(true);
  });

  it('comes back into a buffer it is given, as it would into a new one', () => {
    const into = new Uint8Array(stored.data.length);
    const back = toStored(toDisplayed(stored, orientation), orientation, into);
    expect(Buffer.from(back.data).equals(Buffer.from(stored.data))).toBe(true);
    // Orientation 1 is the input itself; any other writes where it was told to.
    expect(back.data === into).toBe(orientation !== 1);
  });
});

it('toStored refuses a buffer to write into that is the input itself or not its size', () => {
  const displayed = toDisplayed(stored, 6);
  expect(() => toStored(displayed, 6, displayed.data)).toThrow(RangeError);
  expect(() => toStored(displayed, 6, new Uint8Array(displayed.data.length - 1))).toThrow(RangeError);
});
