/**
 * Regression fixtures: inputs the long fuzz found failing, kept so that
 * `npm test` replays them forever (test/fuzz/regressions/README.md).
 * Large inputs are stored gzipped: they are mostly repeated XMP, which
 * compresses to almost nothing.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { Format } from './containers.js';
import { shortHash } from './mutators.js';

export const REGRESSIONS_DIR = fileURLToPath(new URL('./regressions/', import.meta.url));
export const KNOWN_DIR = fileURLToPath(new URL('./known/', import.meta.url));
const GZIP_ABOVE = 64 * 1024;
const EXTENSIONS: Record<Format, string> = { jpeg: 'jpg', png: 'png', webp: 'webp' };

export interface Fixture {
  readonly name: string;
  readonly bytes: Buffer;
}

/** Save a failing input as `<format>-seed<seed>-<hash>.<ext>[.gz]`, unless it is there already; returns the file name. */
export function saveFixture(format: Format, seed: number | string, bytes: Uint8Array, dir = REGRESSIONS_DIR): string {
  mkdirSync(dir, { recursive: true });
  const hash = shortHash(bytes);
  // The same input found again under another seed adds nothing.
  const existing = readdirSync(dir).find((name) => name.includes(`-${hash}.`));
  if (existing) return existing;
  const base = `${format}-seed${seed}-${hash}.${EXTENSIONS[format]}`;
  const name = bytes.length > GZIP_ABOVE ? `${base}.gz` : base;
  writeFileSync(join(dir, name), bytes.length > GZIP_ABOVE ? gzipSync(bytes, { level: 9 }) : bytes);
  return name;
}

/** Every fixture file of a directory (README.md and other text aside), decompressed. */
export function loadFixtures(dir: string): Fixture[] {
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return [];
  }
  return names
    .filter((name) => /\.(jpe?g|png|webp|bin)(\.gz)?$/i.test(name))
    .map((name) => {
      const raw = readFileSync(join(dir, name));
      return { name, bytes: name.endsWith('.gz') ? gunzipSync(raw) : raw };
    });
}
