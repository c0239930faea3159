/**
 * The latency of verify's fingerprint check as the server runs it: the
 * reduced decode in the main thread, the detector on the worker pool (one
 * thread), through createFingerprinting as the server wires it. Run by
 * bench/fingerprint.ts as a child process of its own, pinned to one CPU like
 * bench/fingerprint-latency.ts, and writes its results as JSON:
 *
 *   tsx bench/fingerprint-latency-server.ts OUT.json [--quick] [--mixed]
 *
 * Why a process of its own: the server's main thread never runs the
 * detector, and the in-thread timings' garbage (the detector's arrays, tens
 * of MB a round) weighed on the pool's calls when both ran in one process:
 * `--mixed` runs two in-thread detections before each round's pool calls,
 * as the rows were once measured, to show the difference (docs/fingerprint.md).
 * Each round also times the reduced decodes alone, the floor of the same
 * machine state.
 */
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { deriveFingerprintKey, embedFingerprint } from '../src/core/fingerprint/index.js';
import { createPixelDecoder } from '../src/adapters/pixels.js';
import { createFingerprinting } from '../src/app/fingerprint.js';
import { BENCH_SECRET, decodeForDetection, detectFile, LATENCY_RUNS, log, pinning, prepareTwelveMp, quantiles, timed, type ServerPathResults } from './fingerprint-latency.js';

const ROOT = join(import.meta.dirname, '..');
const MIXED = process.argv.includes('--mixed');
const OUT = process.argv.slice(2).find((a) => !a.startsWith('--'));

/** The worker's compiled file is what the pool loads: it must be no older than the sources it is built from. */
function staleBuild(): string | undefined {
  const built = join(ROOT, 'dist', 'adapters', 'fingerprint-worker.js');
  let builtAt: number;
  try {
    builtAt = statSync(built).mtimeMs;
  } catch {
    return 'dist/ has no build of the worker (run `npm run build`)';
  }
  const sources = [join(ROOT, 'src', 'adapters', 'fingerprint-worker.ts'), ...readdirSync(join(ROOT, 'src', 'core', 'fingerprint')).map((f) => join(ROOT, 'src', 'core', 'fingerprint', f))];
  const newer = sources.filter((s) => statSync(s).mtimeMs > builtAt);
  return newer.length ? `dist/ is older than ${newer.length} source file(s) of the fingerprint (run \`npm run build\`)` : undefined;
}

export async function measureServerPath(): Promise<ServerPathResults> {
  sharp.concurrency(1);
  const where = pinning();
  log(`latency (server path): running on CPU(s) ${where.cpusAllowed} (${where.how})${MIXED ? ', with in-thread detections between the pool calls (--mixed)' : ''}`);
  const { createWorkerPool } = await import('../src/adapters/worker-pool.js');
  const twelve = await prepareTwelveMp();
  // The secret as the server holds it (version 1); the pool derives the key from (version, secret), so the file is marked with that key.
  const secret = { version: 1, secret: new Uint8Array(BENCH_SECRET) };
  const key = deriveFingerprintKey(BENCH_SECRET, String(secret.version));
  const files = { marked: await twelve.deliver(embedFingerprint(twelve.raster, key).data), unmarked: twelve.unmarked };
  const workers = createWorkerPool({ threads: 1, queue: 4 });
  const verify = createFingerprinting({
    pixels: createPixelDecoder({ maxPixels: 100_000_000, concurrency: 1, queue: 1 }),
    detect: workers.detect,
    embed: workers.embed,
    detecting: () => [secret],
    marking: () => secret,
  });
  const timings: Record<'decodeReduced' | 'decodeReducedMarked' | 'marked' | 'unmarked', number[]> = { decodeReduced: [], decodeReducedMarked: [], marked: [], unmarked: [] };
  const verdicts = { marked: false, unmarked: true };
  log('latency (server path): 12-megapixel JPEG through the worker pool ...');
  try {
    for (let i = -3; i < LATENCY_RUNS; i++) {
      const decodeReduced = await timed(() => decodeForDetection(files.unmarked));
      const decodeReducedMarked = await timed(() => decodeForDetection(files.marked));
      if (MIXED) for (const bytes of [files.marked, files.unmarked]) await detectFile(bytes, [key]);
      const marked = await timed(() => verify.check(files.marked));
      const unmarked = await timed(() => verify.check(files.unmarked));
      if (i < 0) continue; // warm-up
      timings.decodeReduced.push(decodeReduced.ms);
      timings.decodeReducedMarked.push(decodeReducedMarked.ms);
      timings.marked.push(marked.ms);
      timings.unmarked.push(unmarked.ms);
      verdicts.marked = marked.value.present;
      verdicts.unmarked = unmarked.value.present;
    }
  } finally {
    await workers.close();
  }
  return {
    pinning: where,
    runs: LATENCY_RUNS,
    decodeReduced: quantiles(timings.decodeReduced),
    decodeReducedMarked: quantiles(timings.decodeReducedMarked),
    marked: quantiles(timings.marked),
    unmarked: quantiles(timings.unmarked),
    verdicts,
    mixed: MIXED,
  };
}

if (OUT && process.argv[1] && import.meta.filename === process.argv[1]) {
  const stale = staleBuild();
  const results = stale ? { skipped: stale } : await measureServerPath();
  if (stale) log(`latency (server path): skipped: ${stale}`);
  writeFileSync(OUT, JSON.stringify(results, null, 2));
}
