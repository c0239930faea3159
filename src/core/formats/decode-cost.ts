/**
 * What decoding an image's pixels would cost, read from its container
 * before any decoder runs. The pixel limit (width x height) bounds most
 * decodes, but two kinds of small file cost far more than their size says:
 *
 * - A JPEG with more than one scan (every progressive JPEG) is decoded into
 *   a buffer of DCT coefficients for the whole image, 2 bytes for each of
 *   the 64 coefficients of every 8 x 8 block of every component, however
 *   small the output is asked to be (shrink-on-load does not help); and
 *   every scan walks every block of the components it covers. A file of a
 *   few hundred kilobytes can declare 100 megapixels and two thousand
 *   near-empty scans: over a minute of CPU and half a gigabyte (a "scan
 *   bomb", known to the libjpeg-turbo project, which leaves the limit to
 *   the application). Real encoders write 1 to about 20 scans.
 * - An animated WebP is decoded frame after frame; libvips' first-page
 *   decode still grows faster than the number of frames (measured: 2 s at
 *   25,000 tiny frames, 37 s at 100,000).
 *
 * Pure: the caller decides what budget to allow (src/app/fingerprint.ts).
 */
import { jpegFrameHeaderAt } from './dimensions.js';
import { jpeg } from './jpeg.js';
import { webp } from './webp.js';
import type { ImageFormat } from '../../errors.js';

export interface DecodeCost {
  /** Bytes of the whole-image coefficient buffer libjpeg allocates (a JPEG with more than one scan), else 0. */
  readonly coefficientBytes: number;
  /** 8 x 8 blocks visited by all the scans together (JPEG); about the work of entropy decoding. */
  readonly blockVisits: number;
  readonly scans: number;
  /** Animation frames (WebP ANMF chunks); 1 for a still image. */
  readonly frames: number;
}

const STILL: DecodeCost = { coefficientBytes: 0, blockVisits: 0, scans: 0, frames: 1 };

/** @throws CorruptImageError when the container cannot be walked (the decoder would refuse it too) */
export function decodeCost(bytes: Uint8Array, format: ImageFormat): DecodeCost {
  switch (format) {
    case 'jpeg':
      return jpegCost(bytes);
    case 'webp':
      return { ...STILL, frames: Math.max(1, webp.blocks(bytes).filter((b) => b.type === 'ANMF').length) };
    case 'png':
      // Interlaced or not, a PNG is inflated row by row: the pixel limit bounds it.
      return STILL;
  }
}

interface Component {
  readonly id: number;
  /** Blocks of this component in the frame. */
  readonly blocks: number;
}

function jpegCost(bytes: Uint8Array): DecodeCost {
  // The walk validates the whole container (CorruptImageError otherwise), so the frame header is there.
  const blocks = jpeg.blocks(bytes);
  const frame = jpegFrameHeaderAt(bytes);
  const components = frame === undefined ? [] : frameComponents(bytes, frame);
  let scans = 0;
  let blockVisits = 0;
  for (const block of blocks) {
    if (block.type === 'SOS') {
      const payload = payloadStart(bytes, block.offset);
      scans++;
      const count = bytes[payload] ?? 0;
      for (let i = 0; i < count; i++) {
        const id = bytes[payload + 1 + 2 * i];
        blockVisits += components.find((c) => c.id === id)?.blocks ?? 0;
      }
    }
  }
  const coefficientBytes = scans > 1 ? components.reduce((sum, c) => sum + c.blocks * 64 * 2, 0) : 0;
  return { coefficientBytes, blockVisits, scans, frames: 1 };
}

/** Where a marker segment's payload starts: after its fill bytes (0xFF), marker and length. */
function payloadStart(bytes: Uint8Array, offset: number): number {
  let at = offset + 1;
  while (bytes[at] === 0xff) at++;
  return at + 3;
}

/**
 * The frame's components with their block counts (ITU T.81 A.1.1: each
 * component's size follows its sampling factors), from the frame header at
 * `frame` (jpegFrameHeaderAt: height at +5, width at +7, count at +9).
 */
function frameComponents(bytes: Uint8Array, frame: number): Component[] {
  const height = (bytes[frame + 5]! << 8) | bytes[frame + 6]!;
  const width = (bytes[frame + 7]! << 8) | bytes[frame + 8]!;
  const count = bytes[frame + 9] ?? 0;
  const raw = Array.from({ length: count }, (_, i) => {
    const at = frame + 10 + 3 * i;
    return { id: bytes[at]!, h: Math.max(1, bytes[at + 1]! >> 4), v: Math.max(1, bytes[at + 1]! & 15) };
  });
  const hMax = Math.max(1, ...raw.map((c) => c.h));
  const vMax = Math.max(1, ...raw.map((c) => c.v));
  return raw.map((c) => ({
    id: c.id,
    blocks: Math.ceil(Math.ceil((width * c.h) / hMax) / 8) * Math.ceil(Math.ceil((height * c.v) / vMax) / 8),
  }));
}
