/**
 * The verdict's exact binomial tail, against values computed by hand and
 * with exact integer arithmetic.
 */
import { describe, expect, it } from 'vitest';
import { binomialUpperTail, criticalMatches } from '../../../src/core/fingerprint/binomial.js';

/** P[Bin(n, 1/2) >= k] as an exact fraction, converted at the end. */
function exactTail(n: number, k: number): number {
  let sum = 0n;
  let c = 1n; // C(n, 0)
  for (let i = 0; i <= n; i++) {
    if (i >= k) sum += c;
    c = (c * BigInt(n - i)) / BigInt(i + 1);
  }
  // One rounding (Number of the integer sum), then an exact division by a power of two.
  return Number(sum) / 2 ** n;
}

describe('binomialUpperTail', () => {
  it('matches small cases worked by hand', () => {
    expect(binomialUpperTail(10, 8)).toBeCloseTo(56 / 1024, 15); // C(10,8)+C(10,9)+C(10,10) = 45+10+1
    expect(binomialUpperTail(20, 20)).toBe(2 ** -20);
    expect(binomialUpperTail(1, 1)).toBe(0.5);
    expect(binomialUpperTail(128, 0)).toBe(1);
    expect(binomialUpperTail(128, 129)).toBe(0);
    expect(binomialUpperTail(0, 0)).toBe(1);
  });

  it('agrees with exact integer arithmetic to 1e-12 relative for n = 128 and 256', () => {
    for (const n of [128, 256]) {
      for (let k = n / 2; k <= n; k++) {
        const exact = exactTail(n, k);
        expect(Math.abs(binomialUpperTail(n, k) - exact) / exact).toBeLessThan(1e-12);
      }
    }
  });

  it('refuses arguments outside its domain', () => {
    expect(() => binomialUpperTail(-1, 0)).toThrow(RangeError);
    expect(() => binomialUpperTail(10.5, 3)).toThrow(RangeError);
    expect(() => binomialUpperTail(10, 2.5)).toThrow(RangeError);
  });
});

describe('criticalMatches', () => {
  it('gives the thresholds of the research note', () => {
    expect(criticalMatches(128, 1e-6)).toBe(92);
    expect(criticalMatches(256, 1e-6)).toBe(167);
    expect(criticalMatches(512, 1e-6)).toBe(311);
    expect(criticalMatches(128, 1e-9)).toBe(98);
  });

  it('is the smallest count whose tail is within alpha', () => {
    for (const n of [20, 50, 100, 128]) {
      for (const alpha of [1e-3, 1e-6, 5e-7]) {
        const k = criticalMatches(n, alpha);
        if (k <= n) expect(binomialUpperTail(n, k)).toBeLessThanOrEqual(alpha);
        expect(binomialUpperTail(n, k - 1)).toBeGreaterThan(alpha);
      }
    }
  });

  it('says "impossible" (n + 1) when even n of n is not rare enough', () => {
    expect(criticalMatches(19, 1e-6)).toBe(20); // 2^-19 = 1.9e-6
    expect(criticalMatches(20, 1e-6)).toBe(20); // 2^-20 = 9.5e-7
    expect(criticalMatches(0, 1e-6)).toBe(1);
  });
});
