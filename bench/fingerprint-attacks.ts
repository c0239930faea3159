/**
 * The transformations of the research note's protocol (section 5.2), with
 * sharp, applied to a marked (or unmarked) RGB picture; each returns the
 * encoded file a verifier would receive.
 */
import sharp, { type Sharp } from 'sharp';
import { random } from '../test/support/random.js';
import type { RgbImage } from './fingerprint-images.js';

export interface Attack {
  readonly id: string;
  readonly description: string;
  /** Required detection rate, or undefined when only reported. */
  readonly target: number | undefined;
  apply(image: RgbImage): Promise<Buffer>;
}

const open = (image: RgbImage): Sharp => sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } });
const r = Math.round;

function crop(image: RgbImage, left: number, top: number, right: number, bottom: number): Sharp {
  const { width: W, height: H } = image;
  return open(image).extract({ left: r(W * left), top: r(H * top), width: W - r(W * left) - r(W * right), height: H - r(H * top) - r(H * bottom) });
}

/** Gaussian noise of the given sd on every channel, from a fixed seed (Box-Muller over mulberry32). */
function withNoise(image: RgbImage, sd: number): RgbImage {
  const next = random(12345);
  // Half a step up, so that log() never sees 0.
  const uniform = () => next() + 0.5 / 4294967296;
  const data = new Uint8Array(image.data.length);
  for (let i = 0; i < data.length; i += 2) {
    const radius = Math.sqrt(-2 * Math.log(uniform()));
    const angle = 2 * Math.PI * uniform();
    data[i] = Math.max(0, Math.min(255, Math.round(image.data[i]! + sd * radius * Math.cos(angle))));
    if (i + 1 < data.length) data[i + 1] = Math.max(0, Math.min(255, Math.round(image.data[i + 1]! + sd * radius * Math.sin(angle))));
  }
  return { ...image, data };
}

const attack = (id: string, description: string, target: number | undefined, apply: (image: RgbImage) => Promise<Buffer>): Attack => ({ id, description, target, apply });

export const ATTACKS: readonly Attack[] = [
  attack('png', 'PNG round trip', 0.99, (i) => open(i).png().toBuffer()),
  attack('jpeg90', 'JPEG q90', 0.99, (i) => open(i).jpeg({ quality: 90 }).toBuffer()),
  attack('jpeg75', 'JPEG q75', 0.99, (i) => open(i).jpeg({ quality: 75 }).toBuffer()),
  attack('jpeg50', 'JPEG q50', 0.99, (i) => open(i).jpeg({ quality: 50 }).toBuffer()),
  attack('webp80', 'WebP q80', 0.99, (i) => open(i).webp({ quality: 80 }).toBuffer()),
  attack('webp50', 'WebP q50', 0.97, (i) => open(i).webp({ quality: 50 }).toBuffer()),
  attack('resize050', 'resize 0.5x, PNG', 0.99, (i) => open(i).resize(r(i.width * 0.5)).png().toBuffer()),
  attack('resize075', 'resize 0.75x, JPEG q90', 0.99, (i) => open(i).resize(r(i.width * 0.75)).jpeg({ quality: 90 }).toBuffer()),
  attack('resize150', 'resize 1.5x, JPEG q90', 0.99, (i) => open(i).resize(r(i.width * 1.5)).jpeg({ quality: 90 }).toBuffer()),
  attack('resize200', 'resize 2x, JPEG q90', 0.99, (i) => open(i).resize(r(i.width * 2)).jpeg({ quality: 90 }).toBuffer()),
  attack('bright120', 'brightness x1.2', 0.99, (i) => open(i).linear(1.2, 0).png().toBuffer()),
  attack('contrast80', 'contrast x0.8', 0.99, (i) => open(i).linear(0.8, 25.6).png().toBuffer()),
  attack('blur1', 'Gaussian blur sigma 1', 0.99, (i) => open(i).blur(1).png().toBuffer()),
  attack('noise5', 'Gaussian noise sigma 5', 0.99, (i) => open(withNoise(i, 5)).png().toBuffer()),
  // Small crops: step 1 still scores high there, so they test that the search does not stop at it.
  attack('crop01t', 'crop 1 % off the top, JPEG q90', 0.99, (i) => crop(i, 0, 0.01, 0, 0).jpeg({ quality: 90 }).toBuffer()),
  attack('crop02', 'crop 2 % per side, JPEG q90', 0.99, (i) => crop(i, 0.02, 0.02, 0.02, 0.02).jpeg({ quality: 90 }).toBuffer()),
  attack('crop05', 'crop 5 % per side', 0.99, (i) => crop(i, 0.05, 0.05, 0.05, 0.05).png().toBuffer()),
  attack('crop10', 'crop 10 % per side', 0.99, (i) => crop(i, 0.1, 0.1, 0.1, 0.1).png().toBuffer()),
  attack('crop10lt', 'crop 10 % left and top', 0.99, (i) => crop(i, 0.1, 0.1, 0, 0).png().toBuffer()),
  attack('combo', 'crop 10 %/6 %, resize 0.4x, JPEG q75', 0.95, async (i) => {
    const cropped = await crop(i, 0.1, 0.06, 0.1, 0.06).raw().toBuffer({ resolveWithObject: true });
    return sharp(cropped.data, { raw: { width: cropped.info.width, height: cropped.info.height, channels: 3 } }).resize(r(i.width * 0.4)).jpeg({ quality: 75 }).toBuffer();
  }),
  attack('screenshot', 'downscale to at most 1366 wide, PNG', undefined, (i) => open(i).resize(Math.min(i.width, 1366)).png().toBuffer()),
  attack('double', 'JPEG q90, resize 0.75x, WebP q75', undefined, async (i) => {
    const jpeg = await open(i).jpeg({ quality: 90 }).toBuffer();
    const smaller = await sharp(jpeg).resize(r(i.width * 0.75)).png().toBuffer();
    return sharp(smaller).webp({ quality: 75 }).toBuffer();
  }),
  attack('rotate05', 'rotate 0.5 degree', undefined, (i) => open(i).rotate(0.5, { background: '#000' }).png().toBuffer()),
  attack('rotate2', 'rotate 2 degrees', undefined, (i) => open(i).rotate(2, { background: '#000' }).png().toBuffer()),
];

/** The transformations the false-positive trials run over (unmarked photos and graphics): all of them. */
export const NULL_ATTACKS: readonly Attack[] = ATTACKS;

/** The transformations of the wrong-key trials (photos marked with the benchmark's key, checked with the null keys). */
export const WRONG_KEY_ATTACKS: readonly Attack[] = ['png', 'jpeg75', 'crop02', 'combo'].map((id) => ATTACKS.find((a) => a.id === id)!);
