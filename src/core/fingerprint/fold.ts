/**
 * Folding: add every sample of a (resampled) plane into a TILE-periodic
 * accumulator, so all repeats of the pattern pile up on one tile. With
 * sums (not means) a correlation of the fold with the tile is exactly the
 * correlation of the whole plane with the tiled pattern, the matched filter.
 */

export interface Plane {
  readonly data: Float64Array;
  readonly width: number;
  readonly height: number;
}

/**
 * Folds the plane sampled at (shiftX + k * step, shiftY + l * step), k and l
 * = 0, 1, ... while inside the plane, with bilinear interpolation, into
 * `out` (size x size, overwritten). step = 1 / scale: a crop that enlarged
 * the picture by `scale` is undone by sampling the plane more sparsely.
 *
 * Interpolation and folding are linear and the horizontal interpolation is
 * the same for every row, so the rows are interpolated vertically and
 * summed per fold row first (whole-row vector work), and the horizontal
 * interpolation runs once per fold row instead of once per sample row.
 */
export class Folder {
  private readonly size: number;
  private rows: Float64Array = new Float64Array(0);
  private x0: Int32Array = new Int32Array(0);
  private fx: Float64Array = new Float64Array(0);

  constructor(size: number) {
    this.size = size;
  }

  /**
   * @param nearestRows take the nearest sample row instead of interpolating
   *   two (a third cheaper; the scan only ranks scales, and the jitter of at
   *   most half a pixel in one direction costs little of the score)
   */
  fold(plane: Plane, step: number, shiftX: number, shiftY: number, out: Float64Array, nearestRows = false): void {
    const { size } = this;
    const { data, width, height } = plane;
    if (this.rows.length < size * width) this.rows = new Float64Array(size * width);
    const rows = this.rows;
    rows.fill(0, 0, size * width);
    const mask = size - 1;
    const sampleRows = sampleCount(height, step, shiftY);
    for (let l = 0; l < sampleRows; l++) {
      const p = Math.max(0, shiftY + l * step);
      if (nearestRows) {
        const source = Math.min(Math.round(p), height - 1) * width;
        const target = (l & mask) * width;
        for (let x = 0; x < width; x++) rows[target + x]! += data[source + x]!;
        continue;
      }
      const j = Math.min(Math.floor(p), height - 2);
      const fy = p - j;
      const gy = 1 - fy;
      const top = j * width;
      const bottom = top + width;
      const target = (l & mask) * width;
      for (let x = 0; x < width; x++) rows[target + x]! += gy * data[top + x]! + fy * data[bottom + x]!;
    }

    const columns = sampleCount(width, step, shiftX);
    if (this.x0.length < columns) {
      this.x0 = new Int32Array(columns);
      this.fx = new Float64Array(columns);
    }
    const { x0, fx } = this;
    for (let k = 0; k < columns; k++) {
      const p = Math.max(0, shiftX + k * step);
      const i = Math.min(Math.floor(p), width - 2);
      x0[k] = i;
      fx[k] = p - i;
    }
    out.fill(0);
    for (let r = 0; r < size; r++) {
      const source = r * width;
      const target = r * size;
      for (let k = 0; k < columns; k++) {
        const i = source + x0[k]!;
        const f = fx[k]!;
        out[target + (k & mask)]! += rows[i]! + f * (rows[i + 1]! - rows[i]!);
      }
    }
  }
}

/** Samples at shift + k * step that stay within [0, length - 1]. */
function sampleCount(length: number, step: number, shift: number): number {
  return Math.max(0, Math.floor((length - 1 - Math.max(0, shift)) / step) + 1);
}
