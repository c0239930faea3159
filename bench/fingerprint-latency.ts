/**
 * The latency part of `npm run bench:fingerprint`, run by bench/fingerprint.ts
 * as a child process pinned to one CPU (`taskset -c 0`: the process, libvips'
 * threads and the worker pool's threads all share that CPU), so "one core"
 * holds for everything that runs, not only for libvips. Writes its results as
 * JSON to the path it is given.
 *
 *   tsx bench/fingerprint-latency.ts OUT.json [--quick]
 *
 * It times decode, then detectFingerprint in this thread, as the CLI runs
 * it, and counts which synchronisation path the detector took. Each round of
 * the 12 MP JPEG timings runs every kind back to back (decode floor,
 * in-thread, compute only), so they are compared on the same machine state:
 * a shared machine's speed drifts over minutes, by half or more. The
 * server's path (the detector on the worker pool) is timed by
 * bench/fingerprint-latency-server.ts in a process of its own, which runs no
 * detector in its main thread, as the server does not.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import sharp from 'sharp';
import { deriveFingerprintKey, detectFingerprint, embedFingerprint, type Raster } from '../src/core/fingerprint/index.js';
import { Correlator } from '../src/core/fingerprint/correlate.js';
import { createPixelDecoder } from '../src/adapters/pixels.js';
import { createFingerprinting, DETECT_DECODE } from '../src/app/fingerprint.js';
import detectTask, { embed as embedTask } from '../src/adapters/fingerprint-worker.js';
import { listPictures } from './fingerprint-images.js';
import { quantile } from './timing.js';

const QUICK = process.argv.includes('--quick');
const OUT = process.argv.slice(2).find((a) => !a.startsWith('--'));
export const LATENCY_RUNS = QUICK ? 5 : 100;
const PNG_LATENCY_RUNS = QUICK ? 3 : 30;
/** Embeddings of the 12 MP picture timed (pixels in memory; the research note's target: 1.5 s). */
const EMBED_RUNS = QUICK ? 2 : 5;
const AS_SHIPPED_RUNS = 3;
export const log = (line = '') => process.stdout.write(`${line}\n`);

/**
 * More periodic correlations than this mean the scale scan ran: the climb
 * from step 1 (a high score there) evaluates at most 14 hypotheses, the
 * scan at least 24 (src/core/fingerprint/sync.ts).
 */
const SCAN_THRESHOLD = 20;

/** The benchmark's production-like key (the same as bench/fingerprint.ts). */
export const BENCH_SECRET = Buffer.from('optmark fingerprint benchmark key, not a secret');
const key = deriveFingerprintKey(BENCH_SECRET, 'bench-1');

export interface Quantiles {
  readonly p50: number;
  readonly p95: number;
}

/** What the kernel reports for a process: the CPUs it may run on, and whether that is one CPU by taskset. */
export interface Pinning {
  readonly cpusAllowed: string;
  readonly pinned: boolean;
  readonly how: string;
}

/** Verify as the server runs it: decode in the main thread, the detector on the worker pool (one thread). */
export interface ServerPathResults {
  readonly pinning: Pinning;
  readonly runs: number;
  /** The floor in the same process and rounds: the reduced decodes alone, unmarked and marked. */
  readonly decodeReduced: Quantiles;
  readonly decodeReducedMarked: Quantiles;
  readonly marked: Quantiles;
  readonly unmarked: Quantiles;
  readonly verdicts: { readonly marked: boolean; readonly unmarked: boolean };
  /** In-thread detections were run between the pool's calls (`--mixed`: how the rows were once measured, kept to show the difference). */
  readonly mixed: boolean;
}

export interface LatencyResults {
  readonly pinning: Pinning;
  /** Decodes of the unmarked file (the camera's JPEG). */
  readonly decodeFull: Quantiles;
  readonly decodeReduced: Quantiles;
  /** The same decodes of the marked file (the product's quality-95 JPEG, 4:2:0 as the camera's). */
  readonly decodeFullMarked: Quantiles;
  readonly decodeReducedMarked: Quantiles;
  /** Sizes of the unmarked and marked 12 MP JPEGs, MB. */
  readonly fileMbUnmarked: number;
  readonly marked: Quantiles;
  readonly unmarked: Quantiles;
  readonly markedCrop: Quantiles;
  readonly computeMarked: Quantiles;
  readonly computeUnmarked: Quantiles;
  readonly pngDecodeFull: Quantiles;
  readonly pngDecodeReduced: Quantiles;
  readonly pngMarked: Quantiles;
  readonly pngUnmarked: Quantiles;
  readonly pngRuns: number;
  readonly pngFileMb: number;
  /** Verify's real path on the server, measured in a process of its own (bench/fingerprint-latency-server.ts). */
  readonly pool: ServerPathResults | { readonly skipped: string };
  /** The same with in-thread detections between the pool's calls (`--mixed`), to show why it runs apart. */
  readonly poolMixed: ServerPathResults | { readonly skipped: string };
  /**
   * Which synchronisation path the detector took, counted from the number of
   * periodic correlations it ran (a few: the uncropped hypothesis stood out
   * and only the short climb from step 1 ran; more than SCAN_THRESHOLD: the
   * scale scan ran), with the step and score it reported.
   */
  readonly syncPaths: ReadonlyArray<{ readonly what: string; readonly correlations: number; readonly fullSearch: boolean; readonly step: number; readonly score: number }>;
  readonly asShipped: {
    readonly photos: number;
    readonly minMp: number;
    readonly maxMp: number;
    readonly detect: Quantiles & { readonly max: number };
    readonly decodeFull: Quantiles & { readonly max: number };
    /** How many of the unmarked photos as shipped ran the whole scale search. */
    readonly fullSearch: number;
  };
  readonly embed12mpMs: number;
  /** The slowest of the EMBED_RUNS embeddings of the 12 MP picture. */
  readonly embed12mpMaxMs: number;
  readonly embedRuns: number;
  /**
   * `optmark protect --fingerprint` on the 12 MP JPEG, as the CLI wires it
   * (everything in this thread): full decode, embedding, the product's
   * encoder, and the self-check's reduced decode and detection; the opt-out
   * metadata written after it is not included (a few milliseconds).
   */
  readonly markFile12mp: { readonly p50: number; readonly max: number; readonly runs: number; readonly found: boolean };
  readonly loadAverage: readonly number[];
  readonly verdicts: Record<string, boolean>;
  readonly runs: number;
  readonly fileMb: number;
}

/** The CPUs this process may run on, as the kernel says (Linux). */
function cpusAllowed(): string {
  try {
    return /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/** Exactly what verify does: the server's hardened decoder, with verify's request (DETECT_DECODE). */
const decoder = createPixelDecoder({ maxPixels: 100_000_000, concurrency: 1, queue: 1 });
export async function decodeForDetection(bytes: Uint8Array): Promise<Raster> {
  const { data, width, height, channels } = await decoder.decode(bytes, DETECT_DECODE);
  return { data, width, height, channels };
}

/** The periodic correlations one call of `run` makes (counted by wrapping the correlator's method; not used while timing). */
function countCorrelations<T>(run: () => T): { value: T; correlations: number } {
  const original = Correlator.prototype.peaks;
  let correlations = 0;
  Correlator.prototype.peaks = function (this: Correlator, ...args: Parameters<Correlator['peaks']>) {
    // Two folds share one FFT: count hypotheses, not calls.
    correlations += args[1] ? 2 : 1;
    return original.apply(this, args);
  };
  try {
    return { value: run(), correlations };
  } finally {
    Correlator.prototype.peaks = original;
  }
}

/** The CPUs this process may run on, and how it came to be one (a parent's taskset, or a machine with one CPU). */
export function pinning(): Pinning {
  const allowed = cpusAllowed();
  const pinned = /^\d+$/.test(allowed);
  const how = !pinned ? 'not pinned' : process.env.OPTMARK_BENCH_PINNED === '1' ? `taskset -c ${allowed}` : `CPU ${allowed} only (one CPU allowed to the process)`;
  return { cpusAllowed: allowed, pinned, how };
}

/** The 12-megapixel raw pixels, as sharp's input options. */
const RAW_12MP = { raw: { width: 4000, height: 3000, channels: 3 as const } };

/** The 12-megapixel JPEG both latency processes time, made the same way in each. */
export interface TwelveMp {
  readonly raster: Raster;
  /** Stands for a camera's JPEG: quality 90. */
  readonly unmarked: Uint8Array;
  /** What the product delivers for marked pixels of it: its own encoder, with the original's quality (90) and chroma subsampling (4:2:0). */
  deliver(pixels: Uint8Array): Promise<Uint8Array>;
}

export async function prepareTwelveMp(): Promise<TwelveMp> {
  const { photos } = listPictures();
  const source = photos.find((f) => f.name === 'Kleiber_by_Lukas_Baubkus') ?? photos[0]!;
  const big = await sharp(readFileSync(source.path)).rotate().removeAlpha().resize(4000, 3000, { fit: 'cover' }).raw().toBuffer();
  const sourceMeta = await sharp(readFileSync(source.path)).metadata();
  log(`latency: the 12 MP JPEG is ${source.name} (${sourceMeta.width} x ${sourceMeta.height}) cut and resized to 4000 x 3000`);
  const unmarked = await sharp(big, RAW_12MP).jpeg({ quality: 90 }).toBuffer();
  const deliver = (pixels: Uint8Array) => decoder.withSlot(unmarked, (held) => held.encodeLike(unmarked, { data: Buffer.from(pixels.buffer, pixels.byteOffset, pixels.byteLength), width: 4000, height: 3000, channels: 3 }));
  return { raster: { data: big, width: 4000, height: 3000, channels: 3 }, unmarked, deliver };
}

/** `protect --fingerprint`'s pixel work on one file, wired as the CLI wires it (src/cli/fingerprint-for-cli.ts), with the benchmark's key as version 1. */
async function timeMarkingFile(bytes: Uint8Array): Promise<LatencyResults['markFile12mp']> {
  const secret = { version: 1, secret: new Uint8Array(BENCH_SECRET) };
  const marking = createFingerprinting({
    pixels: createPixelDecoder({ maxPixels: 100_000_000, concurrency: 1, queue: 1 }),
    detect: async (task) => detectTask(task),
    embed: async (task) => embedTask(task),
    detecting: () => [secret],
    marking: () => secret,
  });
  const times: number[] = [];
  let found = false;
  for (let i = -1; i < EMBED_RUNS; i++) {
    const { value, ms } = await timed(async () => (await marking.mark(bytes)).bytes);
    if (i >= 0) times.push(ms);
    found = (await marking.check(value)).present;
  }
  return { p50: quantile(times, 0.5), max: Math.max(...times), runs: times.length, found };
}

/** Wall-clock time of one call. */
export async function timed<T>(run: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t = performance.now();
  const value = await run();
  return { value, ms: performance.now() - t };
}

export const quantiles = (v: readonly number[]): Quantiles => ({ p50: quantile(v, 0.5), p95: quantile(v, 0.95) });

/** Decode, then the detector in this thread (as the CLI's verify runs it). */
export const detectFile = (bytes: Uint8Array, keys = [key]) => timed(async () => detectFingerprint(await decodeForDetection(bytes), keys));

export async function measureLatency(): Promise<Omit<LatencyResults, 'pool' | 'poolMixed'>> {
  sharp.concurrency(1);
  const where = pinning();
  log(`latency: running on CPU(s) ${where.cpusAllowed} (${where.how})`);
  const { photos } = listPictures();
  const photoFiles = photos.slice(0, QUICK ? 6 : undefined);

  log('latency: preparing the 12-megapixel JPEG ...');
  const twelve = await prepareTwelveMp();
  const bigRaster = twelve.raster;
  const embedBig: number[] = [];
  let bigMarked = embedFingerprint(bigRaster, key).data;
  for (let i = 0; i < EMBED_RUNS; i++) {
    const t = performance.now();
    bigMarked = embedFingerprint(bigRaster, key).data;
    embedBig.push(performance.now() - t);
  }
  const markFile12mp = await timeMarkingFile(twelve.unmarked);
  const files = {
    marked: await twelve.deliver(bigMarked),
    unmarked: twelve.unmarked,
    markedCrop: await sharp(bigMarked, RAW_12MP).extract({ left: 300, top: 240, width: 3400, height: 2520 }).jpeg({ quality: 90 }).toBuffer(),
    pngMarked: await sharp(bigMarked, RAW_12MP).png().toBuffer(),
    pngUnmarked: await sharp(bigRaster.data, RAW_12MP).png().toBuffer(),
  };

  // Which synchronisation path each case takes (untimed pass).
  const syncPaths: Array<LatencyResults['syncPaths'][number]> = [];
  for (const [what, bytes] of [['12 MP JPEG, marked', files.marked], ['12 MP JPEG, unmarked', files.unmarked], ['12 MP JPEG, marked, cropped 7.5 % per side', files.markedCrop], ['12 MP PNG, unmarked', files.pngUnmarked]] as const) {
    const input = await decodeForDetection(bytes);
    const { value, correlations } = countCorrelations(() => detectFingerprint(input, [key]));
    syncPaths.push({ what, correlations, fullSearch: correlations > SCAN_THRESHOLD, step: value.sync?.step ?? Number.NaN, score: value.sync?.score ?? Number.NaN });
  }
  for (const s of syncPaths) log(`sync path: ${s.what}: ${s.correlations} correlation(s), ${s.fullSearch ? 'scale scan' : 'step 1 stood out, short climb only'} (step ${s.step.toFixed(3)}, score ${s.score.toFixed(1)})`);

  type TimingName = 'decodeFull' | 'decodeFullMarked' | 'decodeReducedMarked' | 'decodeReduced' | 'marked' | 'unmarked' | 'markedCrop' | 'computeMarked' | 'computeUnmarked' | 'pngDecodeFull' | 'pngDecodeReduced' | 'pngMarked' | 'pngUnmarked';
  const timings = {} as Record<TimingName, number[]>;
  const keep = (name: TimingName, ms: number) => (timings[name] ??= []).push(ms);
  const verdicts: Record<string, boolean> = {};
  /**
   * The full-resolution decodes (the reference the floor is compared with)
   * run in loops of their own: each leaves a 36 MB buffer for the garbage
   * collector, whose work would otherwise land in the detection timings,
   * although verify never makes such a buffer.
   */
  async function decodeFullTimes(bytes: Uint8Array, runs: number, name: TimingName): Promise<void> {
    for (let i = -1; i < runs; i++) {
      const { ms } = await timed(() => sharp(bytes).raw().toBuffer());
      if (i >= 0) keep(name, ms);
    }
  }
  await decodeFullTimes(files.unmarked, LATENCY_RUNS, 'decodeFull');
  await decodeFullTimes(files.marked, LATENCY_RUNS, 'decodeFullMarked');

  log('latency: 12-megapixel JPEG, in this thread, interleaved ...');
  for (let i = -3; i < LATENCY_RUNS; i++) {
    const decodeReduced = await timed(() => decodeForDetection(files.unmarked));
    const runs = { marked: await detectFile(files.marked), unmarked: await detectFile(files.unmarked), markedCrop: await detectFile(files.markedCrop) };
    // The detector alone, on the decoded copy: the compute part of the figures above.
    const decodeReducedMarked = await timed(() => decodeForDetection(files.marked));
    const reduced = { marked: decodeReducedMarked.value, unmarked: decodeReduced.value };
    const compute = { marked: await timed(async () => detectFingerprint(reduced.marked, [key])), unmarked: await timed(async () => detectFingerprint(reduced.unmarked, [key])) };
    if (i < 0) continue; // warm-up
    keep('decodeReduced', decodeReduced.ms);
    keep('decodeReducedMarked', decodeReducedMarked.ms);
    for (const name of ['marked', 'unmarked', 'markedCrop'] as const) {
      keep(name, runs[name].ms);
      verdicts[name] = runs[name].value.present;
    }
    keep('computeMarked', compute.marked.ms);
    keep('computeUnmarked', compute.unmarked.ms);
  }

  log('latency: 12-megapixel PNG, one core ...');
  await decodeFullTimes(files.pngUnmarked, PNG_LATENCY_RUNS, 'pngDecodeFull');
  for (let i = -1; i < PNG_LATENCY_RUNS; i++) {
    const decodeReduced = await timed(() => decodeForDetection(files.pngUnmarked));
    const runs = { marked: await detectFile(files.pngMarked), unmarked: await detectFile(files.pngUnmarked) };
    if (i < 0) continue;
    keep('pngDecodeReduced', decodeReduced.ms);
    keep('pngMarked', runs.marked.ms);
    keep('pngUnmarked', runs.unmarked.ms);
    verdicts.pngMarked = runs.marked.value.present;
    verdicts.pngUnmarked = runs.unmarked.value.present;
  }

  const loadAverage = os.loadavg();

  // The photos as shipped (unmarked, so each should run the whole scale search): the median of a few runs per file.
  log('latency: the photos as shipped ...');
  const shipped: Array<{ mp: number; decodeFull: number; detect: number }> = [];
  const medianOf = async (run: () => Promise<unknown>) => {
    const times: number[] = [];
    for (let i = 0; i < AS_SHIPPED_RUNS; i++) times.push((await timed(run)).ms);
    return quantile(times, 0.5);
  };
  const shippedBytes = photoFiles.map((f) => readFileSync(f.path));
  // Detections first, full decodes after (their large buffers would weigh on the detections' timings).
  const shippedDetect: number[] = [];
  for (const bytes of shippedBytes) shippedDetect.push(await medianOf(() => detectFile(bytes)));
  let fullSearch = 0;
  for (const bytes of shippedBytes) {
    const input = await decodeForDetection(bytes);
    if (countCorrelations(() => detectFingerprint(input, [key])).correlations > SCAN_THRESHOLD) fullSearch++;
  }
  for (const [i, bytes] of shippedBytes.entries()) {
    const meta = await sharp(bytes).metadata();
    shipped.push({ mp: ((meta.width ?? 0) * (meta.height ?? 0)) / 1e6, decodeFull: await medianOf(() => sharp(bytes).raw().toBuffer()), detect: shippedDetect[i]! });
  }
  const latency = Object.fromEntries(Object.entries(timings).map(([name, v]) => [name, quantiles(v)])) as Record<TimingName, Quantiles>;
  return {
    ...latency,
    pinning: where,
    syncPaths,
    asShipped: {
      photos: shipped.length,
      minMp: Math.min(...shipped.map((x) => x.mp)),
      maxMp: Math.max(...shipped.map((x) => x.mp)),
      detect: { p50: quantile(shipped.map((x) => x.detect), 0.5), p95: quantile(shipped.map((x) => x.detect), 0.95), max: Math.max(...shipped.map((x) => x.detect)) },
      decodeFull: { p50: quantile(shipped.map((x) => x.decodeFull), 0.5), p95: quantile(shipped.map((x) => x.decodeFull), 0.95), max: Math.max(...shipped.map((x) => x.decodeFull)) },
      fullSearch,
    },
    embed12mpMs: quantile(embedBig, 0.5),
    embed12mpMaxMs: Math.max(...embedBig),
    embedRuns: EMBED_RUNS,
    markFile12mp,
    loadAverage,
    verdicts,
    runs: LATENCY_RUNS,
    pngRuns: PNG_LATENCY_RUNS,
    fileMb: files.marked.length / 1e6,
    fileMbUnmarked: files.unmarked.length / 1e6,
    pngFileMb: files.pngMarked.length / 1e6,
  };
}

if (OUT && process.argv[1] && import.meta.filename === process.argv[1]) {
  const results = await measureLatency();
  writeFileSync(OUT, JSON.stringify(results, null, 2));
}
