/**
 * Structure-aware fuzzing of protect and verify (the property is in
 * property.ts, the mutations in mutators.ts), one `describe` per format,
 * all three in one test file (library.fuzz.test.ts). A fixed seed and a
 * fixed number of runs: every `npm test` checks the same cases, and a
 * failure replays with the seed and path fast-check prints. `npm run fuzz`
 * explores further with random seeds. XMP stays under 96 KiB here (enough
 * to cross the JPEG standard-packet limit); the long run goes to megabytes.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Format } from './containers.js';
import { fuzzCase, type Seed } from './mutators.js';
import { checkInput, checkResidentMemory, MAX_RSS_AFTER_INPUT, type CheckReport } from './property.js';
import { loadSeeds } from './seeds.js';

const SEED = 0x0b7a2c;
/**
 * Inputs per format, chosen for time. The whole fuzz step (`npx vitest run
 * test/fuzz`) must stay under 60 s when the machine's two cores are shared
 * with other work, which roughly doubles its time (measured: 21 s with the
 * machine otherwise idle, 40 to 44 s with a benchmark taking one core), so
 * it is sized for about 20 s on an idle machine. Most of that is not fuzzing: about 8 s pass before
 * the first test file starts (npx, vitest, the suite's global setup, which
 * builds the embedded database template for every test), each test process
 * takes 1.5 to 2.5 s to load the code, and the server takes 3 to 5 s to
 * start. Two files run at once: this one on one core; the server part
 * (http.fuzz.test.ts) and the regression fixtures on the other, in about as
 * long. That leaves about 12 s here.
 *
 * Processor time per input measured in this test process (all its threads),
 * the machine idle to busy: JPEG 2.6 to 3.3 ms, PNG 1.3 to 1.9 ms, WebP 1.5
 * to 2.2 ms; about 1.7, 0.9 and 1.1 ms in a process of its own on an idle
 * machine. About half of it is the two sharp decodes of the pixel comparison
 * (1 to 3 ms each even for a tiny image: libvips reads the whole file and
 * parses its EXIF before the first pixel), an eighth building the input (XMP
 * edits, serialising), the rest protect, verify and the read-back checks.
 * Volume comes from the long run (`npm run fuzz`), for as long as it is given.
 */
export const RUNS: Record<Format, number> = { jpeg: 1_300, png: 2_000, webp: 1_600 };
/** Far above what a run takes on a loaded machine (the fuzz step's bound is 60 s): a hang fails here, not the suite. */
const RUN_TIMEOUT_MS = 120_000;
const LIMITS = { maxXmpBytes: 96 * 1024 };
/** Growth over one format's run that would mean a leak (the run itself needs a few tens of MB). */
const MAX_HEAP_GROWTH = 256 * 1024 * 1024;
const MAX_RSS_GROWTH = 768 * 1024 * 1024;
/** PARSE-3's bound on the process as a whole, at its peak (so on every input's memory, whatever it allocated and freed). */
const MAX_RSS = 1024 * 1024 * 1024;
/** The test process's highest resident size so far. */
const peakRss = () => process.resourceUsage().maxRSS * 1024;
const MB = 1024 * 1024;

let seedsLoading: Promise<Seed[]> | undefined;

/** The fuzz run of one format, with its memory checks; call inside a `describe` of its own. */
export function fuzzFormat(format: Format): void {
  let seeds: Seed[];
  let memoryBefore: NodeJS.MemoryUsage;
  let fuzzMs = 0;
  /** Processor time of the run, all of the process's threads (libvips decodes in its own): the load of the machine changes it less than wall time. */
  let fuzzCpuMs = 0;
  let maxRssAfterInput = 0;
  const reports: CheckReport[] = [];

  beforeAll(async () => {
    seeds = await (seedsLoading ??= loadSeeds());
    memoryBefore = process.memoryUsage();
  });

  it(`${RUNS[format]} mutated files: typed client errors only, within the time bound; protected output opted out, stable, lossless; resident size bounded after each`, { timeout: RUN_TIMEOUT_MS }, async () => {
    let memoryBreached = false;
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    await fc.assert(
      fc.asyncProperty(fuzzCase(seeds, format, LIMITS), async (c) => {
        reports.push(await checkInput(c.bytes, { sign: c.sign, value: c.value }));
        // After a first breach the bound is no longer checked: resident memory does not come back down, so every
        // shrink candidate would breach too and fast-check would report the smallest input, not the one that breached.
        if (memoryBreached) return;
        const rss = process.memoryUsage.rss();
        maxRssAfterInput = Math.max(maxRssAfterInput, rss);
        memoryBreached = rss > MAX_RSS_AFTER_INPUT;
        checkResidentMemory(MAX_RSS_AFTER_INPUT, rss);
      }),
      { seed: SEED, numRuns: RUNS[format] },
    );
    fuzzMs = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    fuzzCpuMs = (cpu.user + cpu.system) / 1000;
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
    // Reported where a run can be compared with the next one: the count, the time it took and how far from the bounds.
    const slowest = Math.max(0, ...reports.map((r) => r.slowestMs));
    const notIdempotent = reports.filter((r) => r.idempotent === false).length;
    const pixels = reports.filter((r) => r.pixelsCompared).length;
    const accepted = reports.filter((r) => r.protect === 'ok').length;
    const seconds = fuzzMs / 1000;
    console.info(
      `fuzz ${format}: ${reports.length} of ${RUNS[format]} inputs (seed ${SEED}) in ${seconds.toFixed(1)} s (${(reports.length / Math.max(seconds, 0.001)).toFixed(0)}/s, ` +
        `processor ${(fuzzCpuMs / 1000).toFixed(1)} s = ${(fuzzCpuMs / Math.max(1, reports.length)).toFixed(2)} ms an input), ${accepted} protected, ` +
        `${pixels} of them compared pixel for pixel (sharp refuses the rest, or they are over 4 megapixels), slowest call ${slowest.toFixed(0)} ms, ` +
        `${notIdempotent} outputs changed when protected again; resident after an input at most ${(maxRssAfterInput / MB).toFixed(0)} MB ` +
        `(bound ${(MAX_RSS_AFTER_INPUT / MB).toFixed(0)}), peak ${(peakRss() / MB).toFixed(0)} MB (bound ${(MAX_RSS / MB).toFixed(0)})`,
    );
  });
}
