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
 * Each fold row is summed in one pass over the sample rows that land on it,
 * a few at a time, rather than by one read-modify-write pass per sample row
 * (the row sums take a third of the time, a whole fold about four fifths);
 * the additions happen in the same order, so the sums are the same to the
 * last bit.
 */
export class Folder {
  private readonly size: number;
  private rows: Float64Array = new Float64Array(0);
  private x0: Int32Array = new Int32Array(0);
  private fx: Float64Array = new Float64Array(0);
  /** Per sample row of the fold row being summed: where its upper source row starts, and the two weights. */
  private top: Int32Array = new Int32Array(0);
  private upper: Float64Array = new Float64Array(0);
  private lower: Float64Array = new Float64Array(0);

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
    const { width, height } = plane;
    // Interpolation reads pixels i and i + 1 with i at most width - 2 (rows
    // j and j + 1, j at most height - 2): in a plane one pixel wide or high
    // that is index -1, outside the row (NaN, or another row's pixel). The
    // canvas has CANVAS_SIDE pixels or more a side; this keeps it that way.
    if (width < 2 || height < 2) throw new RangeError(`A fold needs a plane at least 2 x 2 pixels, got ${width} x ${height}`);
    if (this.rows.length < size * width) this.rows = new Float64Array(size * width);
    const sampleRows = sampleCount(height, step, shiftY);
    const perFoldRow = Math.ceil(sampleRows / size);
    if (this.top.length < perFoldRow) {
      this.top = new Int32Array(perFoldRow);
      this.upper = new Float64Array(perFoldRow);
      this.lower = new Float64Array(perFoldRow);
    }
    for (let r = 0; r < size; r++) {
      let count = 0;
      for (let l = r; l < sampleRows; l += size, count++) {
        const p = Math.max(0, shiftY + l * step);
        if (nearestRows) {
          this.top[count] = Math.min(Math.round(p), height - 1) * width;
          continue;
        }
        const j = Math.min(Math.floor(p), height - 2);
        this.top[count] = j * width;
        this.upper[count] = 1 - (p - j);
        this.lower[count] = p - j;
      }
      if (nearestRows) this.sumNearest(plane.data, width, r * width, count);
      else this.sumInterpolated(plane.data, width, r * width, count);
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
    // Each fold cell sums its columns in a local accumulator (k = c, c + size,
    // ...: the order a pass over k would add them in, so the same sums) rather
    // than by a read-modify-write of `out` per sample, which was most of the fold.
    const rows = this.rows;
    for (let r = 0; r < size; r++) {
      const source = r * width;
      const target = r * size;
      for (let c = 0; c < size; c++) {
        let sum = 0;
        for (let k = c; k < columns; k += size) {
          const i = source + x0[k]!;
          const f = fx[k]!;
          sum += rows[i]! + f * (rows[i + 1]! - rows[i]!);
        }
        out[target + c] = sum;
      }
    }
  }

  /**
   * Fold row at `target` = the sum of the `count` sample rows starting at
   * this.top, in order: the first row copied, the others added up to three
   * per pass (a fold row of an uncropped 4:3 canvas has four rows).
   */
  private sumNearest(data: Float64Array, width: number, target: number, count: number): void {
    const { rows, top } = this;
    if (count === 0) {
      rows.fill(0, target, target + width);
      return;
    }
    rows.set(data.subarray(top[0]!, top[0]! + width), target);
    for (let i = 1; i < count; i += 3) {
      const a = top[i]!;
      const b = top[i + 1]!;
      const c = top[i + 2]!;
      if (count - i >= 3) for (let x = 0; x < width; x++) rows[target + x] = rows[target + x]! + data[a + x]! + data[b + x]! + data[c + x]!;
      else if (count - i === 2) for (let x = 0; x < width; x++) rows[target + x] = rows[target + x]! + data[a + x]! + data[b + x]!;
      else for (let x = 0; x < width; x++) rows[target + x] = rows[target + x]! + data[a + x]!;
    }
  }

  /** Fold row at `target` = the sum of the `count` interpolated sample rows (this.top, this.upper, this.lower), in order. */
  private sumInterpolated(data: Float64Array, width: number, target: number, count: number): void {
    const { rows, top, upper, lower } = this;
    if (count === 0) {
      rows.fill(0, target, target + width);
      return;
    }
    {
      const a = top[0]!;
      const ga = upper[0]!;
      const fa = lower[0]!;
      for (let x = 0; x < width; x++) rows[target + x] = ga * data[a + x]! + fa * data[a + width + x]!;
    }
    let i = 1;
    for (; i + 2 <= count; i += 2) {
      const a = top[i]!;
      const b = top[i + 1]!;
      const ga = upper[i]!;
      const fa = lower[i]!;
      const gb = upper[i + 1]!;
      const fb = lower[i + 1]!;
      for (let x = 0; x < width; x++) rows[target + x] = rows[target + x]! + (ga * data[a + x]! + fa * data[a + width + x]!) + (gb * data[b + x]! + fb * data[b + width + x]!);
    }
    for (; i < count; i++) {
      const a = top[i]!;
      const ga = upper[i]!;
      const fa = lower[i]!;
      for (let x = 0; x < width; x++) rows[target + x]! += ga * data[a + x]! + fa * data[a + width + x]!;
    }
  }
}

/** Samples at shift + k * step that stay within [0, length - 1]. */
function sampleCount(length: number, step: number, shift: number): number {
  return Math.max(0, Math.floor((length - 1 - Math.max(0, shift)) / step) + 1);
}
