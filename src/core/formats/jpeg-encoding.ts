/**
 * How a JPEG was encoded, read from its headers: the quality its
 * quantisation tables correspond to, its chroma subsampling and whether it
 * is progressive. A re-encoding (the fingerprint's) that copies these keeps
 * the file about the size it was, where a fixed quality 95 could nearly
 * double a camera's or a website's quality-75 file.
 *
 * The quality is estimated the way libjpeg's and ImageMagick's estimators
 * do it, from the published method: libjpeg (the IJG code, jcparam.c) makes
 * its tables by scaling the example tables of ITU-T T.81 Annex K (K.1 for
 * luminance, K.2 for chrominance) by
 *   scale = quality < 50 ? 5000 / quality : 200 - 2 quality   (per cent)
 *   entry = clamp(floor((base x scale + 50) / 100), 1, 255)
 * so every quality from 1 to 100 gives one pair of tables; the file's
 * tables are compared with each, and the quality whose tables are nearest
 * (the sum of absolute differences over luminance and chrominance) is the
 * estimate, exact when the tables are equal. Encoders with tables of their
 * own (cameras, mozjpeg's defaults, Photoshop) get the nearest IJG quality,
 * with `exact: false`.
 */

/** ITU-T T.81 Annex K, Table K.1 (luminance), in natural (row-major) order. */
const LUMINANCE = [
  16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92, 49,
  64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
];
/** ITU-T T.81 Annex K, Table K.2 (chrominance), in natural order. */
const CHROMINANCE = [
  17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99, 99, 99, 47, 66, 99, 99, 99, 99, 99, 99, ...new Array<number>(32).fill(99),
];
/** Position in natural order of the k-th coefficient in zigzag order (DQT stores tables in zigzag order). */
const ZIGZAG = [
  0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45,
  38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
];

export interface JpegEncoding {
  /** The IJG quality (1-100) whose tables are nearest the file's; undefined when the file has no luminance table. */
  readonly quality: number | undefined;
  /** The file's tables are exactly the IJG tables of that quality. */
  readonly exact: boolean;
  /** The chroma subsampling of a colour file ('4:2:0', '4:2:2', '4:4:0', '4:4:4', or 'other'); undefined for grey. */
  readonly subsampling: '4:2:0' | '4:2:2' | '4:4:0' | '4:4:4' | 'other' | undefined;
  /** Written as a progressive JPEG (SOF2, SOF6, SOF10, SOF14). */
  readonly progressive: boolean;
}

/** The IJG table for `quality` (natural order), as libjpeg makes it with force_baseline. */
export function ijgTable(base: readonly number[], quality: number): number[] {
  const q = Math.min(100, Math.max(1, Math.round(quality)));
  const scale = q < 50 ? Math.floor(5000 / q) : 200 - 2 * q;
  return base.map((b) => Math.min(255, Math.max(1, Math.floor((b * scale + 50) / 100))));
}

const TABLES = Array.from({ length: 100 }, (_, i) => ({ quality: i + 1, luminance: ijgTable(LUMINANCE, i + 1), chrominance: ijgTable(CHROMINANCE, i + 1) }));

/**
 * Reads the headers of a JPEG (up to its first scan). Returns undefined
 * when they cannot be read (not a JPEG, cut short): the caller then keeps
 * its defaults.
 */
export function jpegEncoding(bytes: Uint8Array): JpegEncoding | undefined {
  if (bytes.length < 4 || bytes[0] !== 0xff || bytes[1] !== 0xd8) return undefined;
  const tables = new Map<number, number[]>();
  let frame: { progressive: boolean; components: Array<{ id: number; h: number; v: number; table: number }> } | undefined;
  let pos = 2;
  while (pos + 4 <= bytes.length) {
    if (bytes[pos] !== 0xff) return undefined;
    let at = pos + 1;
    while (at < bytes.length && bytes[at] === 0xff) at++;
    if (at + 2 >= bytes.length) return undefined;
    const marker = bytes[at]!;
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      pos = at + 1;
      continue;
    }
    const length = (bytes[at + 1]! << 8) | bytes[at + 2]!;
    const start = at + 3;
    const end = at + 1 + length;
    if (length < 2 || end > bytes.length) return undefined;
    if (marker === 0xdb) readTables(bytes, start, end, tables);
    else if (isFrame(marker)) frame = readFrame(bytes, start, end, marker);
    else if (marker === 0xda || marker === 0xd9) break;
    pos = end;
  }
  if (!frame) return undefined;
  const luma = frame.components[0] ? tables.get(frame.components[0].table) : undefined;
  const chromaComponent = frame.components.length >= 3 ? frame.components[1] : undefined;
  const chroma = chromaComponent ? tables.get(chromaComponent.table) : undefined;
  const estimate = luma ? nearestQuality(luma, chroma) : { quality: undefined, exact: false };
  return { ...estimate, subsampling: subsamplingOf(frame.components), progressive: frame.progressive };
}

/** SOF markers: C0-CF except DHT (C4), JPG (C8) and DAC (CC). */
function isFrame(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

function readTables(bytes: Uint8Array, start: number, end: number, into: Map<number, number[]>): void {
  let at = start;
  while (at < end) {
    const precision = bytes[at]! >> 4;
    const id = bytes[at]! & 0x0f;
    const size = precision ? 2 : 1;
    if (at + 1 + 64 * size > end) return;
    const natural = new Array<number>(64);
    for (let k = 0; k < 64; k++) {
      const p = at + 1 + k * size;
      natural[ZIGZAG[k]!] = precision ? (bytes[p]! << 8) | bytes[p + 1]! : bytes[p]!;
    }
    into.set(id, natural);
    at += 1 + 64 * size;
  }
}

function readFrame(bytes: Uint8Array, start: number, end: number, marker: number) {
  const count = bytes[start + 5] ?? 0;
  const components: Array<{ id: number; h: number; v: number; table: number }> = [];
  for (let i = 0; i < count && start + 6 + 3 * i + 2 < end; i++) {
    const p = start + 6 + 3 * i;
    components.push({ id: bytes[p]!, h: bytes[p + 1]! >> 4, v: bytes[p + 1]! & 0x0f, table: bytes[p + 2]! });
  }
  // SOF2, SOF6, SOF10, SOF14: progressive.
  return { progressive: marker === 0xc2 || marker === 0xc6 || marker === 0xca || marker === 0xce, components };
}

function subsamplingOf(components: ReadonlyArray<{ h: number; v: number }>): JpegEncoding['subsampling'] {
  if (components.length < 3) return undefined;
  const [y, cb, cr] = components as [{ h: number; v: number }, { h: number; v: number }, { h: number; v: number }];
  if (cb.h !== cr.h || cb.v !== cr.v || cb.h === 0 || cb.v === 0) return 'other';
  const h = y.h / cb.h;
  const v = y.v / cb.v;
  if (h === 1 && v === 1) return '4:4:4';
  if (h === 2 && v === 2) return '4:2:0';
  if (h === 2 && v === 1) return '4:2:2';
  if (h === 1 && v === 2) return '4:4:0';
  return 'other';
}

function nearestQuality(luma: readonly number[], chroma: readonly number[] | undefined): { quality: number; exact: boolean } {
  let best = { quality: 0, distance: Number.POSITIVE_INFINITY };
  for (const t of TABLES) {
    let distance = 0;
    for (let i = 0; i < 64; i++) distance += Math.abs(luma[i]! - t.luminance[i]!);
    if (chroma) for (let i = 0; i < 64; i++) distance += Math.abs(chroma[i]! - t.chrominance[i]!);
    // Ties (at the top, where many entries clamp to 1) go to the higher quality, which loses nothing.
    if (distance <= best.distance) best = { quality: t.quality, distance };
  }
  return { quality: best.quality, exact: best.distance === 0 };
}
