/**
 * Key material: everything the embedder and the detector derive from the
 * deployment's secret for one key version. Pure computation (HMAC-SHA256 is
 * a function, not I/O), deterministic, cheap enough (< 5 ms) to derive once
 * per process and keep.
 *
 * Three independent streams, each from its own HMAC label:
 * - `roles` gives each of the 256 blocks of the tile a role: periodic
 *   synchronisation (PERIODIC_POSITIONS positions of a quarter tile, the
 *   same pattern in all four quarters), anchor synchronisation (unique) or
 *   verification (128 blocks, unique);
 * - `shapes` picks each block's pattern (a keyed +/- sum of mid-band DCT
 *   basis functions);
 * - `signs` flips each block's pattern or not.
 * The detector synchronises with the periodic and anchor blocks only and
 * votes with the verification blocks only. On an image that does not carry
 * this key's mark, each verification block's sign is a fair coin that
 * nothing in the synchronisation saw, which is what makes the verdict's
 * false-positive bound exact (detect.ts).
 */
import { createHmac } from 'node:crypto';
import { sfc32, type Prng } from './prng.js';
import { BAND_AXIS_MAX, BAND_MAX, BAND_MIN, BLOCK, BLOCKS_PER_ROW, BLOCK_COUNT, PERIOD, PERIODIC_POSITIONS, TILE, VERIFICATION_BLOCKS } from './scheme.js';

/** Names this scheme in the HMAC labels: another scheme with the same secret gets unrelated patterns. */
const SCHEME_LABEL = 'optmark/fingerprint/tkbs-1';
const MIN_SECRET_BYTES = 16;
const QUARTER_BLOCKS = PERIOD / BLOCK;

export interface FingerprintKey {
  readonly version: string;
  /** The whole pattern, TILE x TILE, row-major; each block has unit RMS and zero mean. */
  readonly tile: Float32Array;
  /** The periodic synchronisation blocks, PERIOD x PERIOD (zero elsewhere): what the scale search correlates with. */
  readonly periodicTile: Float32Array;
  /** The anchor synchronisation blocks, TILE x TILE (zero elsewhere): what picks the quarter-tile shift. */
  readonly anchorTile: Float32Array;
  /** Verification blocks, as indices in the row-major grid of BLOCKS_PER_ROW x BLOCKS_PER_ROW blocks, ascending. */
  readonly verificationBlocks: Uint16Array;
}

type Role = 'periodic' | 'anchor' | 'verification';

/**
 * @param secret the deployment's fingerprint secret, at least 16 bytes
 * @param version names the key version (stored with each mark record); a new version is a new pattern
 */
export function deriveFingerprintKey(secret: Uint8Array, version: string): FingerprintKey {
  if (secret.length < MIN_SECRET_BYTES) throw new RangeError(`The fingerprint secret must have at least ${MIN_SECRET_BYTES} bytes`);
  if (version.length === 0) throw new RangeError('The fingerprint key version must not be empty');
  const stream = (name: string): Prng => sfc32(createHmac('sha256', secret).update(`${SCHEME_LABEL}/${version}/${name}`).digest());

  const roles = assignRoles(stream('roles'));
  const shapes = stream('shapes');
  const signs = stream('signs');
  // One shape and sign per block in index order; a periodic block copies its first-quarter twin's.
  const patterns: Float64Array[] = [];
  for (let b = 0; b < BLOCK_COUNT; b++) {
    const chip = blockShape(shapes);
    const sign = signs.nextSign();
    for (let i = 0; i < chip.length; i++) chip[i]! *= sign;
    patterns.push(roles[b] === 'periodic' ? patterns[quarterTwin(b)] ?? chip : chip);
  }

  const tile = new Float32Array(TILE * TILE);
  const periodicTile = new Float32Array(PERIOD * PERIOD);
  const anchorTile = new Float32Array(TILE * TILE);
  for (let b = 0; b < BLOCK_COUNT; b++) {
    const x0 = (b % BLOCKS_PER_ROW) * BLOCK;
    const y0 = Math.floor(b / BLOCKS_PER_ROW) * BLOCK;
    const chip = patterns[b]!;
    for (let y = 0; y < BLOCK; y++) {
      for (let x = 0; x < BLOCK; x++) {
        const value = chip[y * BLOCK + x]!;
        tile[(y0 + y) * TILE + x0 + x] = value;
        if (roles[b] === 'anchor') anchorTile[(y0 + y) * TILE + x0 + x] = value;
        if (roles[b] === 'periodic' && x0 < PERIOD && y0 < PERIOD) periodicTile[(y0 + y) * PERIOD + x0 + x] = value;
      }
    }
  }
  const verificationBlocks = Uint16Array.from(roles.flatMap((role, b) => (role === 'verification' ? [b] : [])));
  return { version, tile, periodicTile, anchorTile, verificationBlocks };
}

/** The block at the same position in the tile's first quarter. */
function quarterTwin(b: number): number {
  const bx = (b % BLOCKS_PER_ROW) % QUARTER_BLOCKS;
  const by = Math.floor(b / BLOCKS_PER_ROW) % QUARTER_BLOCKS;
  return by * BLOCKS_PER_ROW + bx;
}

function assignRoles(prng: Prng): Role[] {
  const roles = new Array<Role>(BLOCK_COUNT);
  const positions = shuffled(QUARTER_BLOCKS * QUARTER_BLOCKS, prng);
  const periodic = new Set(positions.slice(0, PERIODIC_POSITIONS));
  const others: number[] = [];
  for (let b = 0; b < BLOCK_COUNT; b++) {
    const position = (Math.floor(b / BLOCKS_PER_ROW) % QUARTER_BLOCKS) * QUARTER_BLOCKS + ((b % BLOCKS_PER_ROW) % QUARTER_BLOCKS);
    if (periodic.has(position)) roles[b] = 'periodic';
    else others.push(b);
  }
  const order = shuffled(others.length, prng);
  order.forEach((i, rank) => {
    roles[others[i]!] = rank < VERIFICATION_BLOCKS ? 'verification' : 'anchor';
  });
  return roles;
}

/** A keyed permutation of 0 .. n - 1 (Fisher-Yates). */
function shuffled(n: number, prng: Prng): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = prng.nextBelow(i + 1);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

/** The orthonormal 8-point DCT-II basis, BASIS[u * BLOCK + x]. */
const BASIS = (() => {
  const basis = new Float64Array(BLOCK * BLOCK);
  for (let u = 0; u < BLOCK; u++) {
    const scale = Math.sqrt((u === 0 ? 1 : 2) / BLOCK);
    for (let x = 0; x < BLOCK; x++) basis[u * BLOCK + x] = scale * Math.cos((Math.PI * (2 * x + 1) * u) / (2 * BLOCK));
  }
  return basis;
})();

/** The (u, v) frequencies a block pattern is made of. */
const BAND: ReadonlyArray<readonly [number, number]> = (() => {
  const band: Array<[number, number]> = [];
  for (let v = 0; v <= BAND_AXIS_MAX; v++) {
    for (let u = 0; u <= BAND_AXIS_MAX; u++) if (u + v >= BAND_MIN && u + v <= BAND_MAX) band.push([u, v]);
  }
  return band;
})();

/**
 * A keyed +/- sum of the band's basis functions. The basis is orthonormal, so
 * the sum has RMS sqrt(|band| / 64) whatever the signs: dividing by it gives
 * every block unit RMS, and the mean is zero because DC is not in the band.
 */
function blockShape(prng: Prng): Float64Array {
  const out = new Float64Array(BLOCK * BLOCK);
  const norm = 1 / Math.sqrt(BAND.length / (BLOCK * BLOCK));
  for (const [u, v] of BAND) {
    const weight = prng.nextSign() * norm;
    for (let y = 0; y < BLOCK; y++) {
      const by = weight * BASIS[v * BLOCK + y]!;
      for (let x = 0; x < BLOCK; x++) out[y * BLOCK + x]! += by * BASIS[u * BLOCK + x]!;
    }
  }
  return out;
}
