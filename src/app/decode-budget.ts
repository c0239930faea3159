/**
 * The fingerprint's decode budget: what the pixel decoder is not asked to
 * decode, beyond the pixel limit it enforces itself, because the file's
 * container says the decode would cost far more than its pixel count
 * (core/formats/decode-cost.ts). Verify answers such a file with `blocks: 0`,
 * marking refuses it (src/app/fingerprint.ts).
 */
import { decodeCost } from '../core/formats/decode-cost.js';
import { sniff } from '../core/formats/sniff.js';

/**
 * What a decode may cost beyond the pixel limit (core/formats/decode-cost.ts).
 * A JPEG's coefficient buffer: 400 MiB takes a 100-megapixel 4:2:0
 * progressive JPEG (286 MiB) or a 4:4:4 one up to 70 megapixels, and keeps
 * two decode slots under a gigabyte. Block visits: a real 100-megapixel
 * progressive JPEG makes 12 to 22 million (10 scans); a scan bomb's visits
 * cost about 15 ns each, so 40 million are about 0.6 s. Animation frames:
 * 1,000 decode in milliseconds; a still photo has one.
 */
const DECODE_BUDGET = { coefficientBytes: 400 * 2 ** 20, blockVisits: 40_000_000, frames: 1000 } as const;

/** Why decoding `bytes` would cost more than DECODE_BUDGET allows, or undefined when it would not. */
export function overDecodeBudget(bytes: Uint8Array): string | undefined {
  const cost = decodeCost(bytes, sniff(bytes).format);
  if (cost.coefficientBytes > DECODE_BUDGET.coefficientBytes) {
    return `its ${cost.scans} scans would need ${Math.round(cost.coefficientBytes / 2 ** 20)} MiB of coefficients to decode, over the ${DECODE_BUDGET.coefficientBytes / 2 ** 20} MiB allowed`;
  }
  if (cost.blockVisits > DECODE_BUDGET.blockVisits) {
    return `its ${cost.scans} scans would take ${Math.round(cost.blockVisits / 1e6)} million block decodes, over the ${DECODE_BUDGET.blockVisits / 1e6} million allowed`;
  }
  if (cost.frames > DECODE_BUDGET.frames) return `it has ${cost.frames} animation frames, over the ${DECODE_BUDGET.frames} allowed`;
  return undefined;
}
