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
 * Working arrays, kept from one call to the next: whiten runs on every
 * verify, and a fresh set of plane-sized arrays each time (a few MB) kept
 * the garbage collector busy enough to show in the detector's p95. Calls
 * are synchronous and a thread runs one at a time, so one set per thread
 * (module) is enough.
 */
let across = new Float64Array(0);
let work = new Float64Array(0);
let source = new Float64Array(0);
let columns = new Float64Array(0);

function scratch(length: number, width: number): void {
  if (across.length < length) {
    across = new Float64Array(length);
    work = new Float64Array(length);
    source = new Float64Array(length);
  }
  if (columns.length < width) columns = new Float64Array(width);
}

/**
 * The plane as float64 in `source` (exact): boxMean then only ever reads one
 * kind of array, which V8 compiles tighter than a loop that sees both.
 */
function asFloat64(plane: Float32Array): Float64Array {
  const out = source;
  for (let i = 0; i < plane.length; i++) out[i] = plane[i]!;
  return out;
}

/**
 * Mean over the (2r + 1)^2 window around each pixel, cut at the borders,
 * into `out` (which may be `plane` itself: the plane is read whole before
 * `out` is written). Running sums, first along each row, then down the
 * columns a whole row at a time (sequential memory access: column-wise
 * passes were several times slower). Uses `across` and `columns`, read
 * into locals once (a module variable is reloaded on every access).
 */
function boxMean(plane: Float64Array, width: number, height: number, radius: number, out: Float64Array): void {
  const rowMeans = across;
  const sums = columns;
  const perX = reciprocalCounts(width, radius);
  const lead = Math.min(radius, width);
  for (let y = 0; y < height; y++) {
    const base = y * width;
    let sum = 0;
    for (let x = 0; x < lead; x++) sum += plane[base + x]!;
    for (let x = 0; x < width; x++) {
      if (x + radius < width) sum += plane[base + x + radius]!;
      if (x > radius) sum -= plane[base + x - radius - 1]!;
      rowMeans[base + x] = sum * perX[x]!;
    }
  }
  const perY = reciprocalCounts(height, radius);
  sums.fill(0, 0, width);
  for (let y = 0; y < Math.min(radius, height); y++) addRow(sums, rowMeans, width, y * width);
  for (let y = 0; y < height; y++) {
    if (y + radius < height) addRow(sums, rowMeans, width, (y + radius) * width);
    if (y > radius) subtractRow(sums, rowMeans, width, (y - radius - 1) * width);
    const scale = perY[y]!;
    const base = y * width;
    for (let x = 0; x < width; x++) out[base + x] = sums[x]! * scale;
  }
}

function addRow(sums: Float64Array, rows: Float64Array, width: number, start: number): void {
  for (let x = 0; x < width; x++) sums[x] = sums[x]! + rows[start + x]!;
}

function subtractRow(sums: Float64Array, rows: Float64Array, width: number, start: number): void {
  for (let x = 0; x < width; x++) sums[x] = sums[x]! - rows[start + x]!;
}

/** 1 / (number of window pixels along one axis) at each position. */
function reciprocalCounts(length: number, radius: number): Float64Array {
  const out = new Float64Array(length);
  for (let i = 0; i < length; i++) out[i] = 1 / (Math.min(length, i + radius + 1) - Math.max(0, i - radius));
  return out;
}

/** Local standard deviation (texture activity) over a (2r + 1)^2 window. */
export function localStd(plane: Float32Array, width: number, height: number, radius: number): Float32Array {
  scratch(plane.length, width);
  const values = asFloat64(plane);
  const squares = work;
  const mean = new Float64Array(plane.length);
  boxMean(values, width, height, radius, mean);
  for (let i = 0; i < plane.length; i++) squares[i] = values[i]! * values[i]!;
  boxMean(squares, width, height, radius, squares);
  const out = new Float32Array(plane.length);
  for (let i = 0; i < out.length; i++) out[i] = Math.sqrt(Math.max(0, squares[i]! - mean[i]! * mean[i]!));
  return out;
}

/**
 * Whitening for detection: remove the local mean (the picture's smooth
 * content, which the mid-band mark has little of), then divide by the local
 * RMS of what is left plus `floor`, so strong edges and textures do not
 * outvote the many quiet pixels where the mark is clearest. Flat areas
 * come out near 0 but not exactly 0: resampled with float32 weights that
 * do not sum to exactly 1 (resample.ts), a flat picture's canvas varies by
 * rounding, and what is left once the mean is removed (up to a few 1e-5,
 * divided by about `floor`) stays. The detector's ENERGY_FLOOR (detect.ts)
 * is what keeps such areas from voting.
 */
export function whiten(plane: Float32Array, width: number, height: number, radius: number, floor: number): Float64Array {
  scratch(plane.length, width);
  const values = asFloat64(plane);
  const local = work;
  const residual = new Float64Array(plane.length);
  boxMean(values, width, height, radius, local);
  for (let i = 0; i < residual.length; i++) {
    const r = values[i]! - local[i]!;
    residual[i] = r;
    local[i] = r * r;
  }
  boxMean(local, width, height, radius, local);
  for (let i = 0; i < residual.length; i++) residual[i] = residual[i]! / (Math.sqrt(Math.max(0, local[i]!)) + floor);
  return residual;
}
