/**
 * sfc32 (Chris Doty-Humphrey's Small Fast Counting generator, 32-bit): a
 * fixed, portable algorithm, so a key gives the same pattern on every
 * machine and every Node version (Math.random gives no such promise).
 * Seeded from an HMAC digest, not for secrecy of the stream but for
 * reproducibility: the secret is in the seed.
 */
export interface Prng {
  /** A uniformly distributed unsigned 32-bit integer. */
  nextUint32(): number;
  /** +1 or -1 with equal probability. */
  nextSign(): 1 | -1;
  /** A uniformly distributed integer in [0, bound). */
  nextBelow(bound: number): number;
}

export function sfc32(seed: Uint8Array): Prng {
  if (seed.length < 16) throw new RangeError('sfc32 needs a 16-byte seed');
  const view = new DataView(seed.buffer, seed.byteOffset, 16);
  let a = view.getUint32(0, true);
  let b = view.getUint32(4, true);
  let c = view.getUint32(8, true);
  let d = view.getUint32(12, true);
  const next = (): number => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return t >>> 0;
  };
  // The first outputs still resemble the seed; the authors discard a dozen.
  for (let i = 0; i < 15; i++) next();
  return {
    nextUint32: next,
    nextSign: () => ((next() & 1) === 1 ? 1 : -1),
    nextBelow(bound) {
      // Rejection keeps it exactly uniform when 2^32 is not a multiple of bound.
      const limit = 0x1_0000_0000 - (0x1_0000_0000 % bound);
      for (;;) {
        const x = next();
        if (x < limit) return x % bound;
      }
    },
  };
}
