/**
 * EXIF orientation as a pixel permutation. Cameras store pixels as the sensor
 * read them and record in EXIF how to turn them for display; platforms that
 * strip metadata usually apply that turn first. The mark is therefore made in
 * the displayed orientation (and the detector looks at the displayed
 * orientation, sharp's auto-orient), so that a copy whose pixels were turned
 * and whose EXIF was dropped carries it the same way as the original.
 *
 * Orientation values (EXIF 2.32, tag 0x0112), as the transform from stored
 * to displayed pixels: 1 none, 2 mirror left-right, 3 rotate 180, 4 mirror
 * top-bottom, 5 transpose, 6 rotate 90 clockwise, 7 transverse, 8 rotate 90
 * counter-clockwise. Values 5 to 8 swap width and height.
 */
import { checkRaster, type Raster } from './raster.js';

export type Orientation = 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8;

export function isOrientation(value: unknown): value is Orientation {
  return Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 8;
}

/**
 * The stored pixel shown at displayed (x, y), as an affine map for a stored
 * image of width x height: sx = ax x + bx y + cx, sy = ay x + by y + cy.
 */
function storedMap(orientation: Orientation, width: number, height: number): [number, number, number, number, number, number] {
  const [w, h] = [width - 1, height - 1];
  switch (orientation) {
    case 1:
      return [1, 0, 0, 0, 1, 0];
    case 2:
      return [-1, 0, w, 0, 1, 0];
    case 3:
      return [-1, 0, w, 0, -1, h];
    case 4:
      return [1, 0, 0, 0, -1, h];
    case 5:
      return [0, 1, 0, 1, 0, 0];
    case 6:
      return [0, 1, 0, -1, 0, h];
    case 7:
      return [0, -1, w, -1, 0, h];
    case 8:
      return [0, -1, w, 1, 0, 0];
  }
}

const swapsSides = (orientation: Orientation): boolean => orientation >= 5;

/** The image as displayed. Orientation 1 returns the input itself. */
export function toDisplayed(stored: Raster, orientation: Orientation): Raster {
  checkRaster(stored);
  if (orientation === 1) return stored;
  const { width, height, channels, data } = stored;
  const [dw, dh] = swapsSides(orientation) ? [height, width] : [width, height];
  const out = new Uint8Array(data.length);
  permute(orientation, width, height, dw, dh, channels, (displayed, storedIndex) => {
    for (let c = 0; c < channels; c++) out[displayed + c] = data[storedIndex + c]!;
  });
  return { data: out, width: dw, height: dh, channels };
}

/**
 * The inverse of toDisplayed: displayed pixels back into the stored layout,
 * written into `into` when given (as many bytes, not `displayed.data`
 * itself), else into a new buffer.
 */
export function toStored(displayed: Raster, orientation: Orientation, into?: Uint8Array): Raster {
  checkRaster(displayed);
  if (orientation === 1) return displayed;
  const { width: dw, height: dh, channels, data } = displayed;
  const [width, height] = swapsSides(orientation) ? [dh, dw] : [dw, dh];
  if (into && (into.length !== data.length || into.buffer === data.buffer)) throw new RangeError('toStored needs a separate buffer of the same size to write into');
  const out = into ?? new Uint8Array(data.length);
  permute(orientation, width, height, dw, dh, channels, (displayedIndex, storedIndex) => {
    for (let c = 0; c < channels; c++) out[storedIndex + c] = data[displayedIndex + c]!;
  });
  return { data: out, width, height, channels };
}

function permute(orientation: Orientation, width: number, height: number, dw: number, dh: number, channels: number, move: (displayed: number, stored: number) => void): void {
  const [ax, bx, cx, ay, by, cy] = storedMap(orientation, width, height);
  for (let y = 0; y < dh; y++) {
    for (let x = 0; x < dw; x++) {
      const sx = ax * x + bx * y + cx;
      const sy = ay * x + by * y + cy;
      move((y * dw + x) * channels, (sy * width + sx) * channels);
    }
  }
}
