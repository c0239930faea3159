/**
 * Statistics over a small square window around every pixel of a plane.
 * The window mean is separable: a running sum along each row, then along
 * each column (constant cost per pixel whatever the window). Windows are
 * cut at the borders and divide by the pixels they really hold.
 *
 * Running sums cancel large numbers: a window's mean square
 * minus its squared mean can come out slightly negative on flat areas, and
 * its square root NaN. Every variance here is clamped at 0 before the root.
 */

/**
 * Mean over the (2r + 1)^2 window around each pixel, cut at the borders.
 * Running sums, first along each row, then down the columns a whole row at
 * a time (sequential memory access: column-wise passes were several times
 * slower).
 */
function boxMean(plane: Float32Array | Float64Array, width: number, height: number, radius: number): Float64Array {
  const across = new Float64Array(plane.length);
  const perX = reciprocalCounts(width, radius);
  for (let y = 0; y < height; y++) {
    const base = y * width;
    let sum = 0;
    for (let x = 0; x < Math.min(radius, width); x++) sum += plane[base + x]!;
    for (let x = 0; x < width; x++) {
      if (x + radius < width) sum += plane[base + x + radius]!;
      if (x > radius) sum -= plane[base + x - radius - 1]!;
      across[base + x] = sum * perX[x]!;
    }
  }
  const out = new Float64Array(plane.length);
  const perY = reciprocalCounts(height, radius);
  const columns = new Float64Array(width);
  for (let y = 0; y < Math.min(radius, height); y++) addRow(columns, across, y * width, 1);
  for (let y = 0; y < height; y++) {
    if (y + radius < height) addRow(columns, across, (y + radius) * width, 1);
    if (y > radius) addRow(columns, across, (y - radius - 1) * width, -1);
    const scale = perY[y]!;
    const base = y * width;
    for (let x = 0; x < width; x++) out[base + x] = columns[x]! * scale;
  }
  return out;
}

function addRow(columns: Float64Array, plane: Float64Array, start: number, sign: number): void {
  for (let x = 0; x < columns.length; x++) columns[x]! += sign * plane[start + x]!;
}

/** 1 / (number of window pixels along one axis) at each position. */
function reciprocalCounts(length: number, radius: number): Float64Array {
  const out = new Float64Array(length);
  for (let i = 0; i < length; i++) out[i] = 1 / (Math.min(length, i + radius + 1) - Math.max(0, i - radius));
  return out;
}

function squares(plane: Float32Array | Float64Array): Float64Array {
  const out = new Float64Array(plane.length);
  for (let i = 0; i < plane.length; i++) out[i] = plane[i]! * plane[i]!;
  return out;
}

/** Local standard deviation (texture activity) over a (2r + 1)^2 window. */
export function localStd(plane: Float32Array, width: number, height: number, radius: number): Float32Array {
  const mean = boxMean(plane, width, height, radius);
  const meanSquare = boxMean(squares(plane), width, height, radius);
  const out = new Float32Array(plane.length);
  for (let i = 0; i < out.length; i++) out[i] = Math.sqrt(Math.max(0, meanSquare[i]! - mean[i]! * mean[i]!));
  return out;
}

/**
 * Whitening for detection: remove the local mean (the picture's smooth
 * content, which the mid-band mark has little of), then divide by the local
 * RMS of what is left plus `floor`, so strong edges and textures do not
 * outvote the many quiet pixels where the mark is clearest. Exactly flat
 * areas come out exactly 0.
 */
export function whiten(plane: Float32Array, width: number, height: number, radius: number, floor: number): Float64Array {
  const mean = boxMean(plane, width, height, radius);
  const residual = new Float64Array(plane.length);
  for (let i = 0; i < residual.length; i++) residual[i] = plane[i]! - mean[i]!;
  const power = boxMean(squares(residual), width, height, radius);
  for (let i = 0; i < residual.length; i++) residual[i] = residual[i]! / (Math.sqrt(Math.max(0, power[i]!)) + floor);
  return residual;
}
