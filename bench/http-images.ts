/**
 * The two JPEG bodies of the HTTP benchmark (about 100 KB and 5 MB), made by
 * bench/images.ts's generator: noisy pixels, EXIF, an ICC profile, a few KB
 * of editor XMP and an IPTC-IIM block. Cached under .bench-tmp/http/ by name
 * and recipe version.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generate } from './images.js';

export interface HttpImage {
  readonly name: string;
  readonly label: string;
  readonly path: string;
  readonly bytes: Buffer;
  readonly width: number;
  readonly height: number;
}

/** Bump when the recipe changes, so stale cached files are not reused. */
const RECIPE = 'v2';
const KB = 1024;

export const HTTP_IMAGES: ReadonlyArray<{ name: string; label: string; targetBytes: number; seed: number }> = [
  { name: 'jpeg-100kb', label: '100 KB', targetBytes: 100 * KB, seed: 101 },
  { name: 'jpeg-5mb', label: '5 MB', targetBytes: 5 * KB * KB, seed: 105 },
];

export async function httpImages(dir: string, log: (line: string) => void = () => {}): Promise<HttpImage[]> {
  mkdirSync(dir, { recursive: true });
  const out: HttpImage[] = [];
  for (const spec of HTTP_IMAGES) {
    const path = join(dir, `${spec.name}-${RECIPE}.jpg`);
    const metaPath = `${path}.json`;
    if (!existsSync(path) || !existsSync(metaPath)) {
      const started = performance.now();
      const made = await generate('jpeg', spec.targetBytes, spec.seed);
      writeFileSync(`${path}.part`, made.bytes);
      renameSync(`${path}.part`, path);
      writeFileSync(metaPath, JSON.stringify({ width: made.width, height: made.height }));
      log(`  generated ${spec.name}: ${made.width}x${made.height}, ${(made.bytes.length / KB).toFixed(0)} KB in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
    const { width, height } = JSON.parse(readFileSync(metaPath, 'utf8')) as { width: number; height: number };
    out.push({ name: spec.name, label: spec.label, path, bytes: readFileSync(path), width, height });
  }
  return out;
}
