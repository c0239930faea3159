/**
 * Structure-aware fuzzing of protect and verify (the property is in
 * property.ts, the mutations in mutators.ts), one format per test file
 * (jpeg|png|webp.fuzz.test.ts). A fixed seed and a fixed number of runs:
 * every `npm test` checks the same cases, and a failure replays with the seed
 * and path fast-check prints. `npm run fuzz` explores further with random
 * seeds. XMP stays under 96 KiB here (enough to cross the JPEG
 * standard-packet limit); the long run goes to megabytes.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Format } from './containers.js';
import { fuzzCase, type Seed } from './mutators.js';
import { checkInput, type CheckReport } from './property.js';
import { loadSeeds } from './seeds.js';

const SEED = 0x0b7a2c;
/** The hardening plan's PARSE-3: 20,000 runs per format on every commit (about 20 s per format here). */
const RUNS: Record<Format, number> = { jpeg: 20_000, png: 20_000, webp: 20_000 };
/** Three times the time a run takes on an idle machine: the suite shares two cores. */
const RUN_TIMEOUT_MS = 180_000;
const LIMITS = { maxXmpBytes: 96 * 1024 };
/** Growth over the whole run that would mean a leak (the run itself needs a few tens of MB). */
const MAX_HEAP_GROWTH = 256 * 1024 * 1024;
const MAX_RSS_GROWTH = 768 * 1024 * 1024;
/** PARSE-3's bound on the process as a whole, at its peak (so on every input's memory, whatever it allocated and freed). */
const MAX_RSS = 1024 * 1024 * 1024;
/** The test process's highest resident size so far (each test file runs in a process of its own). */
const peakRss = () => process.resourceUsage().maxRSS * 1024;

/** The fuzz run of one format, with its memory check: one test file per format, so that vitest runs them side by side. */
export function fuzzFormat(format: Format): void {
  let seeds: Seed[];
  let memoryBefore: NodeJS.MemoryUsage;
  let began = 0;
  const reports: CheckReport[] = [];

  beforeAll(async () => {
    seeds = await loadSeeds();
    memoryBefore = process.memoryUsage();
    began = performance.now();
  });

  it(`${RUNS[format]} mutated files: typed client errors only, within the time bound; protected output opted out, stable, lossless`, { timeout: RUN_TIMEOUT_MS }, async () => {
    await fc.assert(
      fc.asyncProperty(fuzzCase(seeds, format, LIMITS), async (c) => {
        reports.push(await checkInput(c.bytes, { sign: c.sign, value: c.value }));
      }),
      { seed: SEED, numRuns: RUNS[format] },
    );
    // The mutations must reach both sides: files protect accepts, and each kind of refusal.
    const count = (p: (r: CheckReport) => boolean) => reports.filter(p).length;
    expect(count((r) => r.protect === 'ok')).toBeGreaterThan(RUNS[format] / 10);
    expect(count((r) => r.protect === 'corrupt_image')).toBeGreaterThan(RUNS[format] / 10);
    expect(count((r) => r.protect === 'invalid_xmp')).toBeGreaterThan(RUNS[format] / 50);
    expect(count((r) => r.protect === 'unsupported_image_format')).toBeGreaterThan(0);
    expect(count((r) => r.pixelsCompared)).toBeGreaterThan(RUNS[format] / 50);
    expect(peakRss()).toBeLessThan(MAX_RSS);
  });

  it('memory stays bounded after the run', () => {
    const after = process.memoryUsage();
    expect(after.heapUsed - memoryBefore.heapUsed).toBeLessThan(MAX_HEAP_GROWTH);
    expect(after.rss - memoryBefore.rss).toBeLessThan(MAX_RSS_GROWTH);
  });

  afterAll(() => {
    // Reported where a run can be compared with the next one.
    const slowest = Math.max(0, ...reports.map((r) => r.slowestMs));
    const notIdempotent = reports.filter((r) => r.idempotent === false).length;
    const pixels = reports.filter((r) => r.pixelsCompared).length;
    const accepted = reports.filter((r) => r.protect === 'ok').length;
    console.info(`fuzz ${format}: ${reports.length} inputs in ${((performance.now() - began) / 1000).toFixed(1)} s, ${accepted} protected, ${pixels} of them compared pixel for pixel (sharp refuses the rest, or they are over 4 megapixels), slowest call ${slowest.toFixed(0)} ms, ${notIdempotent} outputs changed when protected again, resident ${(process.memoryUsage().rss / 1048576).toFixed(0)} MB, peak ${(peakRss() / 1048576).toFixed(0)} MB`);
  });
}
