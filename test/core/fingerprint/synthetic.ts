/**
 * Test pictures made in code: reproducible (own seeded generator), with the
 * ingredients that matter to a watermark detector: smooth gradients, noise
 * and texture at several scales, and hard-edged strokes like text.
 */
import sharp, { type Sharp } from 'sharp';
import type { Raster } from '../../../src/core/fingerprint/index.js';
import { random } from '../../support/random.js';


/** Value noise: random values on a coarse grid, bilinearly interpolated. */
function valueNoise(width: number, height: number, cell: number, rnd: () => number): Float32Array {
  const gw = Math.ceil(width / cell) + 2;
  const gh = Math.ceil(height / cell) + 2;
  const grid = Float32Array.from({ length: gw * gh }, () => rnd() * 2 - 1);
  const out = new Float32Array(width * height);
  for (let y = 0; y < height; y++) {
    const gy = y / cell;
    const j = Math.floor(gy);
    const fy = gy - j;
    for (let x = 0; x < width; x++) {
      const gx = x / cell;
      const i = Math.floor(gx);
      const fx = gx - i;
      const a = grid[j * gw + i]! + fx * (grid[j * gw + i + 1]! - grid[j * gw + i]!);
      const b = grid[(j + 1) * gw + i]! + fx * (grid[(j + 1) * gw + i + 1]! - grid[(j + 1) * gw + i]!);
      out[y * width + x] = a + fy * (b - a);
    }
  }
  return out;
}

/** A photo-like RGB picture: gradient sky, multi-scale texture, fine grain, a block of "text". */
export function syntheticPhoto(width: number, height: number, seed: number, channels: 3 | 4 = 3): Raster {
  const rnd = random(seed);
  const layers = [64, 16, 4].map((cell) => valueNoise(width, height, cell, rnd));
  const data = new Uint8Array(width * height * channels);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      const texture = y > height / 3 ? 40 * layers[0]![i]! + 25 * layers[1]![i]! + 12 * layers[2]![i]! : 6 * layers[0]![i]!;
      const grain = (rnd() - 0.5) * 6;
      // Strokes: a grid of short bars, as lines of text are.
      const inText = x > width * 0.1 && x < width * 0.6 && y > height * 0.05 && y < height * 0.25;
      const stroke = inText && (Math.floor(y / 6) % 2 === 0) && (Math.floor(x / 3) * 7919 + Math.floor(y / 12) * 104729) % 5 < 3;
      const base = 70 + 110 * (y / height) + texture + grain;
      const p = i * channels;
      data[p] = clamp(stroke ? 20 : base + 20);
      data[p + 1] = clamp(stroke ? 20 : base);
      data[p + 2] = clamp(stroke ? 25 : base - 25 + 30 * (x / width));
      if (channels === 4) data[p + 3] = (x * 7 + y * 3) & 255;
    }
  }
  return { data, width, height, channels };
}

/**
 * Colour noise: every R, G and B value drawn independently around mid-grey
 * with a standard deviation of `sd` levels (the sum of four uniform draws,
 * close to Gaussian), clipped to 0..255. No structure at any scale.
 */
export function noisePicture(width: number, height: number, seed: number, sd = 40, channels: 1 | 3 = 3): Raster {
  const rnd = random(seed);
  const data = new Uint8Array(width * height * channels);
  // Four uniforms on [0, 1) sum to mean 2, variance 1/3.
  for (let i = 0; i < data.length; i++) data[i] = clamp(128 + sd * Math.sqrt(3) * (rnd() + rnd() + rnd() + rnd() - 2));
  return { data, width, height, channels };
}

/**
 * A smooth two-way colour gradient: R follows x, G follows y, B the
 * diagonal, each over the whole 0..255 range (so two corners are near
 * black and near white). No texture, unless `grain` adds a uniform grain
 * of +/- that many levels.
 */
export function gradientPicture(width: number, height: number, grain = 0): Raster {
  const data = new Uint8Array(width * height * 3);
  const rnd = random(width * 7 + height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const p = (y * width + x) * 3;
      // The same grain on R, G and B (a luma grain, as film's).
      const g = grain ? grain * (2 * rnd() - 1) : 0;
      data[p] = clamp((x * 255) / (width - 1) + g);
      data[p + 1] = clamp((y * 255) / (height - 1) + g);
      data[p + 2] = clamp(((x + y) * 255) / (width + height - 2) + g);
    }
  }
  return { data, width, height, channels: 3 };
}

/**
 * A page of text: margins, lines of words of 2 to 9 glyphs with ragged line
 * ends and blank lines between paragraphs. The glyphs are 40 fixed random
 * 5 x 7 bitmaps drawn at `scale` (hard edges, no anti-aliasing, as a
 * screenshot of small text has), in `ink` on `paper` (grey levels).
 */
export function textPicture(width: number, height: number, seed: number, { paper = 235, ink = 30, scale = 2 } = {}): Raster {
  const rnd = random(seed);
  const glyphs = Array.from({ length: 40 }, () => Array.from({ length: 35 }, () => rnd() < 0.45));
  const data = new Uint8Array(width * height * 3).fill(paper);
  const glyphWidth = 5 * scale;
  const glyphHeight = 7 * scale;
  const advance = 6 * scale;
  const lineHeight = 11 * scale;
  const margin = 24;
  for (let top = margin; top + glyphHeight < height - margin; top += lineHeight) {
    if (rnd() < 0.12) continue; // a blank line between paragraphs
    // The last line of a paragraph ends early.
    const end = rnd() < 0.2 ? margin + (width - 2 * margin) * (0.3 + 0.5 * rnd()) : width - margin;
    for (let left = margin; left + glyphWidth < end; left += advance) {
      const letters = 2 + Math.floor(rnd() * 8);
      for (let n = 0; n < letters && left + glyphWidth < end; n++, left += advance) {
        const glyph = glyphs[Math.floor(rnd() * glyphs.length)]!;
        for (let gy = 0; gy < glyphHeight; gy++) {
          for (let gx = 0; gx < glyphWidth; gx++) {
            if (!glyph[Math.floor(gy / scale) * 5 + Math.floor(gx / scale)]) continue;
            const p = ((top + gy) * width + left + gx) * 3;
            data.fill(ink, p, p + 3);
          }
        }
      }
    }
  }
  return { data, width, height, channels: 3 };
}

/**
 * A strong regular pattern, as stripes, blinds or a fabric make: a sine
 * grating of `amplitude` levels around mid-grey, `period` pixels long, at
 * `angle` degrees (0: the stripes run vertically), with grain of +/- 15
 * levels so that no area is flat.
 */
export function gratingPicture(width: number, height: number, { amplitude, period, angle, seed = 1 }: { amplitude: number; period: number; angle: number; seed?: number }): Raster {
  const rnd = random(seed);
  const fx = Math.cos((angle * Math.PI) / 180) / period;
  const fy = Math.sin((angle * Math.PI) / 180) / period;
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      data.fill(clamp(128 + amplitude * Math.sin(2 * Math.PI * (fx * x + fy * y)) + (rnd() - 0.5) * 30), (y * width + x) * 3, (y * width + x + 1) * 3);
    }
  }
  return { data, width, height, channels: 3 };
}

export function flatGrey(width: number, height: number, level = 128): Raster {
  return { data: new Uint8Array(width * height).fill(level), width, height, channels: 1 };
}

const clamp = (v: number) => Math.max(0, Math.min(255, Math.round(v)));

/** Through a real encoder and back, with an optional sharp transformation, as luminance (one channel). */
export async function roundTrip(image: Raster, transform: (s: Sharp) => Sharp): Promise<Raster> {
  const raw = { width: image.width, height: image.height, channels: image.channels as 1 | 2 | 3 | 4 };
  const encoded = await transform(sharp(image.data, { raw })).toBuffer();
  const { data, info } = await sharp(encoded).removeAlpha().greyscale().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: info.channels };
}
