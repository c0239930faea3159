/**
 * The Folder against the definition it implements: every sample of the
 * plane at (shiftX + k * step, shiftY + l * step), interpolated (bilinear,
 * or the nearest row and linear along the row), added into cell
 * (k mod size, l mod size). The Folder gets there by a different route
 * (rows summed per fold row a few at a time, then interpolated along the
 * row), so it is compared here with a sample-by-sample loop written
 * straight from the definition, on planes wide, tall and small enough to
 * take every branch (one to sixteen sample rows per fold row).
 */
import { describe, expect, it } from 'vitest';
import { Folder, type Plane } from '../../../src/core/fingerprint/fold.js';
import { random } from '../../support/random.js';

function plane(width: number, height: number, seed: number): Plane {
  const next = random(seed);
  return { data: Float64Array.from({ length: width * height }, () => next() - 0.5), width, height };
}

/** The fold by its definition, one sample at a time. */
function directFold(p: Plane, size: number, step: number, shiftX: number, shiftY: number, nearestRows: boolean): Float64Array {
  const out = new Float64Array(size * size);
  const at = (x: number, y: number) => p.data[y * p.width + x]!;
  for (let l = 0; Math.max(0, shiftY) + l * step <= p.height - 1; l++) {
    const py = Math.max(0, shiftY + l * step);
    for (let k = 0; Math.max(0, shiftX) + k * step <= p.width - 1; k++) {
      const px = Math.max(0, shiftX + k * step);
      const i = Math.min(Math.floor(px), p.width - 2);
      const fx = px - i;
      let value: number;
      if (nearestRows) {
        const y = Math.min(Math.round(py), p.height - 1);
        value = (1 - fx) * at(i, y) + fx * at(i + 1, y);
      } else {
        const j = Math.min(Math.floor(py), p.height - 2);
        const fy = py - j;
        value = (1 - fy) * ((1 - fx) * at(i, j) + fx * at(i + 1, j)) + fy * ((1 - fx) * at(i, j + 1) + fx * at(i + 1, j + 1));
      }
      out[(l % size) * size + (k % size)]! += value;
    }
  }
  return out;
}

describe('Folder', () => {
  const shapes = [
    [341, 256],
    [256, 1024],
    [1024, 256],
    [70, 64],
    [200, 130],
  ] as const;
  for (const [width, height] of shapes) {
    for (const size of [64, 128]) {
      it(`folds a ${width} x ${height} plane into ${size} x ${size} cells as the definition says`, () => {
        const p = plane(width, height, width * 7 + height + size);
        const folder = new Folder(size);
        const out = new Float64Array(size * size);
        for (const step of [1, 1.004, 1.0123, 1.1, 1.28]) {
          for (const [shiftX, shiftY] of [[0, 0], [-0.3, 0.4], [0.7, -0.2]] as const) {
            for (const nearestRows of [true, false]) {
              folder.fold(p, step, shiftX, shiftY, out, nearestRows);
              const expected = directFold(p, size, step, shiftX, shiftY, nearestRows);
              let worst = 0;
              for (let i = 0; i < out.length; i++) worst = Math.max(worst, Math.abs(out[i]! - expected[i]!));
              // The same sums in another order: equal up to rounding (cells hold sums of tens of terms of about 0.3).
              expect(worst, `step ${step}, shift ${shiftX}, ${shiftY}, nearest rows ${nearestRows}`).toBeLessThan(1e-9);
            }
          }
        }
      });
    }
  }

  it('refuses a plane one pixel wide or high, which interpolation would read outside of', () => {
    const out = new Float64Array(64 * 64);
    for (const nearestRows of [false, true]) {
      expect(() => new Folder(64).fold(plane(1, 100, 4), 1, 0, 0, out, nearestRows)).toThrow(RangeError);
      expect(() => new Folder(64).fold(plane(100, 1, 4), 1, 0, 0, out, nearestRows)).toThrow(RangeError);
    }
    new Folder(64).fold(plane(2, 2, 4), 1, 0, 0, out);
    expect(out.every(Number.isFinite)).toBe(true);
  });

  it('a plane with fewer rows or columns than one cell leaves the rest of the fold at zero', () => {
    const p = plane(40, 30, 3);
    const out = new Float64Array(64 * 64).fill(99);
    new Folder(64).fold(p, 1, 0, 0, out);
    expect(out[29 * 64 + 39]).not.toBe(0);
    expect(out[30 * 64]).toBe(0);
    expect(out[40]).toBe(0);
  });
});
