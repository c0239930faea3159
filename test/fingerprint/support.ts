/** What the fingerprint's CLI tests share: a scratch workspace, and photo-like test images made in code. */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll } from 'vitest';
import { FingerprintKeys } from '../../src/adapters/fingerprint-keys.js';
import detect, { embed } from '../../src/adapters/fingerprint-worker.js';
import { createPixelDecoder } from '../../src/adapters/pixels.js';
import { createFingerprinting, type Fingerprinting } from '../../src/app/fingerprint.js';
import { killAll } from '../process/support.js';
import { ExifTool } from '../support/exiftool.js';

/**
 * A directory of the test file's own, the CLI's environment with its data
 * directory there, and an ExifTool; all closed and removed after the file.
 */
export function cliWorkspace(prefix: string): { dir: string; env: Record<string, string>; exiftool: ExifTool } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const exiftool = new ExifTool();
  afterAll(async () => {
    await exiftool.close();
    await killAll();
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir, env: { OPTMARK_DATA_DIR: join(dir, 'data') }, exiftool };
}

/**
 * Gives the data directory `dataDir` a fingerprint secret derived from
 * `label` (version 1) instead of the random one the CLI would create, so
 * that what a test sees of the mark does not change from run to run.
 */
export function fixFingerprintKey(dataDir: string, label: string): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const secret = createHash('sha256').update(label).digest('base64');
  const keys = { format: 'optmark-fingerprint-keys', secrets: [{ version: 1, createdAt: '2026-01-01T00:00:00.000Z', secret }] };
  writeFileSync(join(dataDir, 'fingerprint-keys.json'), JSON.stringify(keys), { mode: 0o600 });
}

/** Smooth shapes plus fine texture, so the detector has something to vote on. */
export async function texturedPhoto(width: number, height: number, format: 'jpeg' | 'png' | 'webp' = 'jpeg', seed = 7): Promise<Buffer> {
  const data = Buffer.alloc(width * height * 3);
  let s = seed;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      s = (s * 1103515245 + 12345) >>> 0;
      const v = (128 + 60 * Math.sin(x / 23 + seed) + 40 * Math.cos(y / 17) + (s >>> 27)) | 0;
      const i = (y * width + x) * 3;
      data[i] = v;
      data[i + 1] = (v + 30) & 255;
      data[i + 2] = (v * 2) & 255;
    }
  }
  const image = sharp(data, { raw: { width, height, channels: 3 } });
  return format === 'jpeg' ? image.jpeg({ quality: 90 }).toBuffer() : format === 'png' ? image.png().toBuffer() : image.webp({ quality: 90 }).toBuffer();
}

/**
 * The fingerprint as a server composes it, in this thread: the pixel
 * decoder, the detector and embedder, and a fixed secret in a temporary data
 * directory removed after the file's tests.
 */
export function inThreadFingerprinting(label: string): Fingerprinting {
  const dataDir = mkdtempSync(join(tmpdir(), 'optmark-fp-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
  fixFingerprintKey(dataDir, label);
  const keys = FingerprintKeys.open(join(dataDir, 'fingerprint-keys.json'));
  return createFingerprinting({
    pixels: createPixelDecoder({ maxPixels: 1e8, concurrency: 1, queue: 1 }),
    detect: async (task) => detect(task),
    embed: async (task) => embed(task),
    detecting: () => keys.detecting,
    marking: () => keys.marking,
  });
}
