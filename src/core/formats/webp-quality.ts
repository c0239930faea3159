/**
 * The quality a lossy WebP was encoded at, estimated from its VP8 frame
 * header (RFC 6386): the quantiser indices (0-127) of its segments, read
 * with the boolean decoder of RFC 6386 section 7, mapped back to a
 * libwebp quality.
 *
 * libwebp (src/enc/quant_enc.c, as its documentation and source describe
 * the mapping) turns a quality Q in [0, 1] into a compression factor
 * c = cbrt(Q < 0.75 ? 2 Q / 3 : 2 Q - 1) and gives each segment the index
 * 127 (1 - c^e), e = 1 - k x alpha close to 1 and spread around it by the
 * segments' spatial-noise-shaping strengths (centred, so their mean is
 * about the base). The geometric mean of the segments' factors is mapped
 * back through the same formula, then through a calibration measured on
 * libwebp's output (CALIBRATION). Other encoders, or libwebp's other
 * modes, give an approximate figure; a header that cannot be read gives
 * undefined.
 */

export interface WebpQuality {
  /** 0-100. */
  readonly quality: number;
  /** The mean quantiser index of the frame's segments (0 finest, 127 coarsest). */
  readonly quantiser: number;
}

/** The estimate for a WebP file (RIFF), or undefined when it has no lossy frame or its header cannot be read. */
export function webpQuality(bytes: Uint8Array): WebpQuality | undefined {
  const frame = findVp8(bytes);
  if (!frame) return undefined;
  const indices = frameQuantisers(bytes.subarray(frame.start, frame.end));
  if (indices === undefined) return undefined;
  // Each segment's c = c_base ^ e with the exponents e centred on 1: the
  // geometric mean of the segments' c is c_base.
  const logs = indices.map((q) => Math.log(Math.max(1e-6, 1 - q / 127)));
  const base = 127 * (1 - Math.exp(logs.reduce((a, b) => a + b, 0) / logs.length));
  return { quality: calibrated(qualityOfQuantiser(base)), quantiser: indices.reduce((a, b) => a + b, 0) / indices.length };
}

/**
 * The formula's figure against the quality libwebp (the encoder sharp
 * bundles, default settings) was given: the mean over six photographs of
 * the test corpus (test/corpus: pillow, exifr, exiv2; none of them in the
 * fingerprint benchmark's photos), for qualities 10 to 100 in steps of 5.
 * The formula reads low under 80 (its segments' spread is wider there than
 * the geometric mean allows for): 68 for 75, 42.7 for 50. Each pair is
 * (formula, quality); between pairs, linear.
 */
const CALIBRATION: ReadonlyArray<readonly [number, number]> = [
  [0, 0], [6.8, 10], [10.7, 15], [15, 20], [19.3, 25], [23.8, 30], [28, 35], [33.3, 40], [38, 45], [42.7, 50], [48, 55], [52.5, 60],
  [57.5, 65], [62.5, 70], [68, 75], [78.3, 80], [83.3, 85], [89.3, 90], [94.8, 95], [100, 100],
];

function calibrated(formula: number): number {
  for (let i = 1; i < CALIBRATION.length; i++) {
    const [x1, y1] = CALIBRATION[i]!;
    if (formula <= x1) {
      const [x0, y0] = CALIBRATION[i - 1]!;
      return Math.round(y0 + ((formula - x0) * (y1 - y0)) / (x1 - x0));
    }
  }
  return 100;
}

/** libwebp's quality for a quantiser index (the inverse of its mapping, segment spread left out). */
export function qualityOfQuantiser(index: number): number {
  const c = 1 - Math.min(127, Math.max(0, index)) / 127;
  const linear = c * c * c;
  const q = linear < 0.5 ? linear * 1.5 : (linear + 1) / 2;
  return Math.round(100 * q);
}

function findVp8(bytes: Uint8Array): { start: number; end: number } | undefined {
  if (bytes.length < 20) return undefined;
  const tag = (at: number) => String.fromCharCode(bytes[at]!, bytes[at + 1]!, bytes[at + 2]!, bytes[at + 3]!);
  if (tag(0) !== 'RIFF' || tag(8) !== 'WEBP') return undefined;
  let at = 12;
  while (at + 8 <= bytes.length) {
    const size = (bytes[at + 4]! | (bytes[at + 5]! << 8) | (bytes[at + 6]! << 16) | (bytes[at + 7]! << 24)) >>> 0;
    const start = at + 8;
    const end = Math.min(bytes.length, start + size);
    if (tag(at) === 'VP8 ') return { start, end };
    at = start + size + (size & 1);
  }
  return undefined;
}

/** RFC 6386 section 7: the boolean entropy decoder. */
class BoolDecoder {
  private value: number;
  private range = 255;
  private bits = 0;
  private at: number;

  constructor(
    private readonly data: Uint8Array,
    start: number,
  ) {
    this.value = ((data[start] ?? 0) << 8) | (data[start + 1] ?? 0);
    this.at = start + 2;
  }

  bool(probability: number): number {
    const split = 1 + (((this.range - 1) * probability) >> 8);
    const big = split << 8;
    let bit;
    if (this.value >= big) {
      bit = 1;
      this.range -= split;
      this.value -= big;
    } else {
      bit = 0;
      this.range = split;
    }
    while (this.range < 128) {
      this.value <<= 1;
      this.range <<= 1;
      if (++this.bits === 8) {
        this.bits = 0;
        this.value |= this.data[this.at++] ?? 0;
      }
    }
    return bit;
  }

  /** An n-bit unsigned literal, most significant bit first. */
  literal(n: number): number {
    let v = 0;
    for (let i = 0; i < n; i++) v = (v << 1) | this.bool(128);
    return v;
  }

  /** An n-bit magnitude and a sign bit. */
  signed(n: number): number {
    const v = this.literal(n);
    return this.bool(128) ? -v : v;
  }

  /** A flag, and when it is set an n-bit signed value (else undefined). */
  optionalSigned(n: number): number | undefined {
    return this.bool(128) ? this.signed(n) : undefined;
  }
}

/** The quantiser index of each of the frame's segments (one when it has none), from a key frame's header. */
function frameQuantisers(frame: Uint8Array): number[] | undefined {
  if (frame.length < 12) return undefined;
  // Frame tag: bit 0 clear for a key frame; then the start code 9d 01 2a and the size.
  if ((frame[0]! & 1) !== 0 || frame[3] !== 0x9d || frame[4] !== 0x01 || frame[5] !== 0x2a) return undefined;
  const d = new BoolDecoder(frame, 10);
  d.literal(1); // colour space
  d.literal(1); // clamping type
  let segments: { absolute: boolean; quantisers: Array<number | undefined> } | undefined;
  if (d.literal(1)) {
    const updateMap = d.literal(1);
    const updateData = d.literal(1);
    if (updateData) {
      const absolute = d.literal(1) === 1;
      const quantisers = [0, 1, 2, 3].map(() => d.optionalSigned(7));
      for (let i = 0; i < 4; i++) d.optionalSigned(6); // loop filter levels
      segments = { absolute, quantisers };
    }
    if (updateMap) for (let i = 0; i < 3; i++) if (d.literal(1)) d.literal(8);
  }
  d.literal(1); // filter type
  d.literal(6); // loop filter level
  d.literal(3); // sharpness
  if (d.literal(1) && d.literal(1)) {
    for (let i = 0; i < 8; i++) d.optionalSigned(6); // reference frame and mode deltas
  }
  d.literal(2); // number of DCT partitions
  const base = d.literal(7);
  if (!segments) return [base];
  return segments.quantisers.map((q) => Math.min(127, Math.max(0, segments.absolute ? (q ?? 0) : base + (q ?? 0))));
}
