/**
 * Key material: deterministic, separated by secret and version, and split
 * into disjoint roles (the exactness of the verdict depends on it).
 */
import { describe, expect, it } from 'vitest';
import { deriveFingerprintKey } from '../../../src/core/fingerprint/index.js';
import { sfc32 } from '../../../src/core/fingerprint/prng.js';
import { BLOCK, BLOCKS_PER_ROW, BLOCK_COUNT, PERIOD, TILE } from '../../../src/core/fingerprint/scheme.js';

const SECRET = Buffer.from('0123456789abcdef0123456789abcdef');

function blockValues(tile: Float32Array, size: number, b: number): number[] {
  const x0 = (b % BLOCKS_PER_ROW) * BLOCK;
  const y0 = Math.floor(b / BLOCKS_PER_ROW) * BLOCK;
  const out: number[] = [];
  for (let y = y0; y < y0 + BLOCK; y++) for (let x = x0; x < x0 + BLOCK; x++) out.push(tile[(y % size) * size + (x % size)]!);
  return out;
}

describe('deriveFingerprintKey', () => {
  it('is deterministic and depends on both secret and version', () => {
    const bytes = (tile: Float32Array) => Buffer.from(tile.buffer, tile.byteOffset, tile.byteLength);
    const a = bytes(deriveFingerprintKey(SECRET, 'v1').tile);
    expect(bytes(deriveFingerprintKey(Buffer.from(SECRET), 'v1').tile).equals(a)).toBe(true);
    expect(bytes(deriveFingerprintKey(SECRET, 'v2').tile).equals(a)).toBe(false);
    const other = Buffer.from(SECRET);
    other[0]! ^= 1;
    expect(bytes(deriveFingerprintKey(other, 'v1').tile).equals(a)).toBe(false);
  });

  it('gives each block zero mean and unit RMS', () => {
    const { tile } = deriveFingerprintKey(SECRET, 'v1');
    for (let b = 0; b < BLOCK_COUNT; b++) {
      const v = blockValues(tile, TILE, b);
      const mean = v.reduce((s, x) => s + x, 0) / v.length;
      const rms = Math.sqrt(v.reduce((s, x) => s + x * x, 0) / v.length);
      expect(Math.abs(mean)).toBeLessThan(1e-6);
      expect(rms).toBeCloseTo(1, 5);
    }
  });

  it('splits the tile into 128 verification blocks and disjoint synchronisation blocks', () => {
    const key = deriveFingerprintKey(SECRET, 'v1');
    expect(key.verificationBlocks.length).toBe(128);
    const verification = new Set(key.verificationBlocks);
    let periodic = 0;
    let anchors = 0;
    for (let b = 0; b < BLOCK_COUNT; b++) {
      const anchor = blockValues(key.anchorTile, TILE, b).some((v) => v !== 0);
      const inPeriodic = blockValues(key.periodicTile, PERIOD, b).some((v) => v !== 0);
      if (verification.has(b)) {
        expect(anchor || inPeriodic).toBe(false);
        continue;
      }
      expect(anchor !== inPeriodic).toBe(true); // every other block is exactly one kind of synchronisation block
      if (anchor) anchors++;
      if (inPeriodic) {
        periodic++;
        expect(blockValues(key.tile, TILE, b)).toEqual(blockValues(key.periodicTile, PERIOD, b));
      } else {
        expect(blockValues(key.tile, TILE, b)).toEqual(blockValues(key.anchorTile, TILE, b));
      }
    }
    expect(periodic + anchors).toBe(128);
    expect(periodic % 4).toBe(0);
  });

  it('refuses a short secret and an empty version', () => {
    expect(() => deriveFingerprintKey(Buffer.alloc(15), 'v1')).toThrow(RangeError);
    expect(() => deriveFingerprintKey(SECRET, '')).toThrow(RangeError);
  });
});

describe('sfc32', () => {
  it('is a fixed algorithm: same seed, same stream', () => {
    const seed = new Uint8Array(16).map((_, i) => i * 17);
    const a = sfc32(seed);
    const b = sfc32(seed);
    const first = Array.from({ length: 8 }, () => a.nextUint32());
    expect(Array.from({ length: 8 }, () => b.nextUint32())).toEqual(first);
    expect(new Set(first).size).toBe(8);
  });

  it('draws below a bound uniformly enough', () => {
    const prng = sfc32(new Uint8Array(16).fill(3));
    const counts = [0, 0, 0];
    for (let i = 0; i < 30000; i++) counts[prng.nextBelow(3)]!++;
    for (const c of counts) expect(Math.abs(c - 10000)).toBeLessThan(400);
  });
});
