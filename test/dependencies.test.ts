/**
 * The dependency gate: the parsers that read strangers' files must be at
 * least the versions that fixed their published memory-safety bugs. A
 * lockfile update that went backwards, or a sharp build linked against an
 * older system libvips, fails here instead of reaching production.
 *
 * Floors and their advisories:
 * - libvips >= 8.18.3 and sharp >= 0.35.0: GHSA-f88m-g3jw-g9cj (memory-safety
 *   bugs in libvips < 8.18.3, three rated High);
 * - libwebp >= 1.3.2: CVE-2023-4863 (lossless WebP Huffman tables, exploited
 *   in the wild);
 * - libpng >= 1.6.50: the crafted-PNG loops and divisions of libpng #492 and
 *   #717 are fixed in the releases sharp bundles since.
 * (`npm audit` would be the broader gate, but the registry mirror this
 * project builds from answers its advisory endpoint with 405; see
 * docs/dependencies.md.)
 */
import { readFileSync } from 'node:fs';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { installedAsDependency, REQUIRED, unsupportedNode } from '../bin/check-node.js';

/** -1, 0 or 1 as a is older than, the same as or newer than b (numeric dotted versions). */
function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

const FLOORS: Array<[name: string, installed: string | undefined, floor: string]> = [
  // sharp.versions.sharp is the version of its native binding, which must match the JavaScript's: both are checked.
  ['sharp', (JSON.parse(readFileSync(new URL('../node_modules/sharp/package.json', import.meta.url), 'utf8')) as { version: string }).version, '0.35.0'],
  ['sharp (native)', sharp.versions.sharp, '0.35.0'],
  ['libvips', sharp.versions.vips, '8.18.3'],
  ['libwebp', sharp.versions.webp, '1.3.2'],
  ['libpng', sharp.versions.png, '1.6.50'],
];

describe('dependency gate', () => {
  it('compares versions numerically', () => {
    expect(compareVersions('8.18.10', '8.18.3')).toBe(1);
    expect(compareVersions('8.9.0', '8.18.3')).toBe(-1);
    expect(compareVersions('1.6.58', '1.6.58')).toBe(0);
  });

  it.each(FLOORS)('%s %s is at least %s', (_name, installed, floor) => {
    expect(installed, 'version not reported').toMatch(/^\d+(\.\d+)*$/);
    expect(compareVersions(installed!, floor)).toBeGreaterThanOrEqual(0);
  });
});

describe('the Node.js release', () => {
  const packageJson = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { engines: { node: string }; scripts: Record<string, string> };

  it('runs on the supported release, the one bin/check-node.js names; package.json names the client\'s minimum', () => {
    // The package's engines are the command's and the server's; optmark/client alone also runs on Node.js 20.19+ (docs/client.md).
    expect(packageJson.engines.node).toBe(`>=${REQUIRED.major}.${REQUIRED.minor}.0`);
    expect(unsupportedNode(), process.version).toBeUndefined();
    expect(compareVersions(process.versions.node, `${REQUIRED.major}.${REQUIRED.minor}`)).toBeGreaterThanOrEqual(0);
  });

  it('an older Node.js gets one line naming what is needed and what it is', () => {
    for (const old of ['20.20.2', '22.21.0', '24.10.0', '18.0.0']) {
      const line = unsupportedNode(old);
      expect(line).toMatch(/^optmark needs Node\.js 24\.11 or later \(Node\.js 24 LTS\); this is /);
      expect(line).toContain(old);
      expect(line).not.toContain('\n');
    }
    for (const ok of ['24.11.0', '24.21.0', '25.0.0', '26.1.0']) expect(unsupportedNode(ok)).toBeUndefined();
  });

  it('installed into another project, an older Node.js gets a note, not a failed install (optmark/client runs there)', () => {
    expect(installedAsDependency({ npm_lifecycle_event: 'preinstall', INIT_CWD: '/home/ada/app' }, '/home/ada/app/node_modules/optmark')).toBe(true);
    expect(installedAsDependency({ npm_lifecycle_event: 'preinstall', INIT_CWD: '/home/ada/optmark' }, '/home/ada/optmark')).toBe(false);
    expect(installedAsDependency({ npm_lifecycle_event: 'pretest', INIT_CWD: '/home/ada/app' }, '/home/ada/optmark')).toBe(false);
  });

  it('npm ci and npm test check it first', () => {
    expect(packageJson.scripts.preinstall).toBe('node bin/check-node.js');
    expect(packageJson.scripts.pretest).toBe('node bin/check-node.js');
  });
});
