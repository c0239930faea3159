/**
 * Separable resampling of one-channel float planes, with pixel centres
 * aligned (pixel i of a side of n covers [i, i + 1) and the two sides span
 * the same extent), the convention libvips and sharp use: embedder and
 * detector map an image onto the analysis canvas with this one code so the
 * geometry cannot drift between them.
 *
 * Weights are computed per axis once, as sparse rows (CSR), then applied
 * horizontally to every source row and vertically to the result.
 */

interface AxisWeights {
  /** Number of destination samples. */
  readonly length: number;
  /** Destination i uses index[offset[i] .. offset[i + 1]) with the same weights. */
  readonly offset: Int32Array;
  readonly index: Int32Array;
  readonly weight: Float32Array;
}

/**
 * Resize weights: the exact area average (box) when shrinking, so every
 * source pixel counts once and nothing aliases; linear interpolation when
 * enlarging.
 */
export function resizeAxis(sourceLength: number, length: number): AxisWeights {
  const ratio = sourceLength / length;
  if (ratio <= 1) return sampleAxis(sourceLength, length, 0.5 * ratio - 0.5, ratio);
  const offset = new Int32Array(length + 1);
  const index: number[] = [];
  const weight: number[] = [];
  for (let i = 0; i < length; i++) {
    const from = i * ratio;
    const to = Math.min(sourceLength, (i + 1) * ratio);
    for (let j = Math.floor(from); j < to; j++) {
      const overlap = Math.min(to, j + 1) - Math.max(from, j);
      if (overlap > 1e-9) {
        index.push(j);
        weight.push(overlap / ratio);
      }
    }
    offset[i + 1] = index.length;
  }
  return { length, offset, index: Int32Array.from(index), weight: Float32Array.from(weight) };
}

/**
 * Linear interpolation at positions start + i * step (in source pixel
 * indices), clamped to the edge pixels.
 */
function sampleAxis(sourceLength: number, length: number, start: number, step: number): AxisWeights {
  const offset = new Int32Array(length + 1);
  const index = new Int32Array(2 * length);
  const weight = new Float32Array(2 * length);
  const last = sourceLength - 1;
  for (let i = 0; i < length; i++) {
    const p = Math.min(last, Math.max(0, start + i * step));
    const j = Math.min(Math.floor(p), Math.max(0, last - 1));
    const f = p - j;
    index[2 * i] = j;
    index[2 * i + 1] = Math.min(j + 1, last);
    weight[2 * i] = 1 - f;
    weight[2 * i + 1] = f;
    offset[i + 1] = 2 * (i + 1);
  }
  return { length, offset, index, weight };
}

/** Gives source row y in `out` (the source may be computed on the fly, e.g. luma from RGB). */
export type RowReader = (y: number, out: Float32Array) => void;

/**
 * Resample a `sourceWidth` x `sourceHeight` plane, calling
 * `onRow(y, row)` for every destination row in order (the row buffer is
 * reused: copy it if you keep it). Nothing full-size is allocated, so an
 * enlargement to 12 megapixels streams.
 */
export function resampleRows(read: RowReader, sourceWidth: number, sourceHeight: number, xs: AxisWeights, ys: AxisWeights, onRow: (y: number, row: Float32Array) => void): void {
  const width = xs.length;
  const horizontal = new Float32Array(sourceHeight * width);
  const source = new Float32Array(sourceWidth);
  const needed = new Uint8Array(sourceHeight);
  for (let k = 0; k < ys.offset[ys.length]!; k++) needed[ys.index[k]!] = 1;
  const { offset: xo, index: xi, weight: xw } = xs;
  for (let y = 0; y < sourceHeight; y++) {
    if (!needed[y]) continue;
    read(y, source);
    const base = y * width;
    for (let i = 0; i < width; i++) {
      let sum = 0;
      for (let k = xo[i]!, end = xo[i + 1]!; k < end; k++) sum += xw[k]! * source[xi[k]!]!;
      horizontal[base + i] = sum;
    }
  }
  const row = new Float32Array(width);
  const { offset: yo, index: yi, weight: yw } = ys;
  for (let j = 0; j < ys.length; j++) {
    row.fill(0);
    for (let k = yo[j]!, end = yo[j + 1]!; k < end; k++) {
      const w = yw[k]!;
      const base = yi[k]! * width;
      for (let i = 0; i < width; i++) row[i]! += w * horizontal[base + i]!;
    }
    onRow(j, row);
  }
}

/** Resample a whole plane into a new one (read as it is when the size does not change). */
export function resamplePlane(read: RowReader, sourceWidth: number, sourceHeight: number, xs: AxisWeights, ys: AxisWeights): Float32Array {
  const out = new Float32Array(xs.length * ys.length);
  if (xs.length === sourceWidth && ys.length === sourceHeight) {
    const row = new Float32Array(sourceWidth);
    for (let y = 0; y < sourceHeight; y++) {
      read(y, row);
      out.set(row, y * sourceWidth);
    }
    return out;
  }
  resampleRows(read, sourceWidth, sourceHeight, xs, ys, (y, row) => out.set(row, y * xs.length));
  return out;
}

/** A RowReader over a plane already in memory. */
export function planeRows(plane: Float32Array, width: number): RowReader {
  return (y, out) => out.set(plane.subarray(y * width, (y + 1) * width));
}
