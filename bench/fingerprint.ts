/**
 * `npm run bench:fingerprint`: the in-pixel fingerprint measured as the
 * research note's protocol asks (section 5): quality (PSNR), detection
 * after common transformations, false positives over thousands of null
 * trials with the binomial calibration check, and detection latency on a
 * 12-megapixel JPEG on one core. Writes docs/fingerprint.md and
 * .bench-tmp/fingerprint-results.json. A report, not a test: exits 0 when a
 * target is missed, and says so.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { binomialUpperTail } from '../src/core/fingerprint/binomial.js';
import { CANVAS_SIDE, deriveFingerprintKey, detectFingerprint, embedFingerprint, type FingerprintKey, type Raster } from '../src/core/fingerprint/index.js';
import { createPixelDecoder } from '../src/adapters/pixels.js';
import { ATTACKS, NULL_ATTACKS, type Attack } from './fingerprint-attacks.js';
import { browserAttacks } from './fingerprint-browser.js';
import { drawnGraphics, ensurePictures, type PhotoFile, type RgbImage } from './fingerprint-images.js';
import { quantile } from './timing.js';
import { renderReport, wilson, type AttackRow, type Results } from './fingerprint-report.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const TMP = join(ROOT, '.bench-tmp');
const LONG_SIDE = 2048;
/** `--quick`: a few images and keys, to try the script; the report then goes to .bench-tmp only. */
const QUICK = process.argv.includes('--quick');
const NULL_KEYS = QUICK ? 2 : 20;
const DRAWN_GRAPHICS = QUICK ? 4 : 20;
const LATENCY_RUNS = QUICK ? 5 : 100;
const PNG_LATENCY_RUNS = QUICK ? 3 : 30;
const AS_SHIPPED_RUNS = 3;
const log = (line = '') => process.stdout.write(`${line}\n`);
const started = performance.now();

// The production-like key: a fixed benchmark secret, version 1.
const key = deriveFingerprintKey(Buffer.from('optmark fingerprint benchmark key, not a secret'), 'bench-1');

/**
 * Exactly what verify does (src/app/fingerprint.ts): the server's hardened
 * decoder, straight to the analysis size (JPEG shrinks while decoding),
 * turned as displayed, luminance only.
 */
const decoder = createPixelDecoder({ maxPixels: 100_000_000, concurrency: 1, queue: 1 });
async function decodeForDetection(bytes: Uint8Array): Promise<Raster> {
  const { data, width, height, channels } = await decoder.decode(bytes, { grey: true, minSide: CANVAS_SIDE, orient: true });
  return { data, width, height, channels };
}

async function loadPhoto(path: string, name: string): Promise<RgbImage> {
  const { data, info } = await sharp(readFileSync(path)).rotate().removeAlpha().toColourspace('srgb').resize(LONG_SIDE, LONG_SIDE, { fit: 'inside', withoutEnlargement: true }).raw().toBuffer({ resolveWithObject: true });
  return { name, data, width: info.width, height: info.height };
}

log(`optmark fingerprint benchmark — node ${process.version}, sharp ${sharp.versions.sharp} / libvips ${sharp.versions.vips}, ${os.cpus()[0]?.model ?? 'CPU'} x${os.cpus().length}`);
mkdirSync(TMP, { recursive: true });
const pictures = ensurePictures(log);
const photoFiles = pictures.photos.slice(0, QUICK ? 6 : undefined);
const graphicFiles = pictures.graphics.slice(0, QUICK ? 4 : undefined);
log(`${photoFiles.length} photos and ${graphicFiles.length} graphics from Debian packages, ${DRAWN_GRAPHICS} graphics drawn in code`);
const browser = await browserAttacks(log);
if (!browser) log('no Chromium: the browser screenshot rows are left out');
const attacks: readonly Attack[] = [...ATTACKS, ...(browser?.attacks ?? [])];

// ---- quality and robustness -------------------------------------------------------------------
const loadAll = async (files: readonly PhotoFile[]) => Promise.all(files.map((f) => loadPhoto(f.path, f.name)));
const photos = await loadAll(photoFiles);
const packagedGraphics = await loadAll(graphicFiles);

function markAll(images: readonly RgbImage[]): { marked: RgbImage[]; psnrs: number[]; embedMs: number[] } {
  const out = { marked: [] as RgbImage[], psnrs: [] as number[], embedMs: [] as number[] };
  for (const image of images) {
    const t = performance.now();
    const result = embedFingerprint({ data: image.data, width: image.width, height: image.height, channels: 3 }, key);
    out.embedMs.push(performance.now() - t);
    out.psnrs.push(result.psnr);
    out.marked.push({ ...image, data: result.data });
  }
  return out;
}
const { marked, psnrs, embedMs } = markAll(photos);
log(`embedded ${marked.length} photos: PSNR min ${Math.min(...psnrs).toFixed(2)} dB, median ${quantile(psnrs, 0.5).toFixed(2)} dB`);
const markedGraphics = markAll(packagedGraphics);
log(`embedded ${markedGraphics.marked.length} graphics: PSNR min ${Math.min(...markedGraphics.psnrs).toFixed(2)} dB`);

/** Each attack on each marked picture, detected with the production-like key; misses are listed into `misses`. */
async function detectionRows(images: readonly RgbImage[], misses: string[]): Promise<AttackRow[]> {
  const rows: AttackRow[] = [];
  for (const attack of attacks) {
    const confidences: number[] = [];
    const blocks: number[] = [];
    const detectMs: number[] = [];
    let found = 0;
    for (const image of images) {
      const bytes = await attack.apply(image);
      const input = await decodeForDetection(bytes);
      const t = performance.now();
      const result = detectFingerprint(input, [key]);
      detectMs.push(performance.now() - t);
      confidences.push(result.confidence);
      blocks.push(result.blocks);
      if (result.present) found++;
      else misses.push(`${attack.id}: ${image.name} (confidence ${result.confidence.toFixed(3)} of ${result.blocks} blocks, step ${result.sync?.step.toFixed(3)}, sync ${result.sync?.score.toFixed(1)})`);
    }
    const row: AttackRow = {
      id: attack.id,
      description: attack.description,
      target: attack.target,
      n: images.length,
      detected: found,
      wilson: wilson(found, images.length),
      meanConfidence: confidences.reduce((a, b) => a + b, 0) / confidences.length,
      p10Confidence: quantile(confidences, 0.1),
      meanBlocks: blocks.reduce((a, b) => a + b, 0) / blocks.length,
      medianDetectMs: quantile(detectMs, 0.5),
    };
    rows.push(row);
    log(`${attack.id.padEnd(12)} ${String(found).padStart(3)}/${images.length}  mean conf ${row.meanConfidence.toFixed(3)}  p10 ${row.p10Confidence.toFixed(3)}  blocks ${row.meanBlocks.toFixed(0)}  detect ${row.medianDetectMs.toFixed(1)} ms`);
  }
  return rows;
}
const misses: string[] = [];
const attackRows = await detectionRows(marked, misses);
log('graphics (low capacity, reported):');
const graphicMisses: string[] = [];
const graphicRows = await detectionRows(markedGraphics.marked, graphicMisses);
await browser?.close();

// ---- false positives --------------------------------------------------------------------------
const nullKeys: FingerprintKey[] = Array.from({ length: NULL_KEYS }, (_, i) => deriveFingerprintKey(Buffer.from(`null key ${i} for the fingerprint benchmark`), `null-${i}`));
const negatives: readonly RgbImage[] = [...photos, ...packagedGraphics, ...drawnGraphics(DRAWN_GRAPHICS)];
/** Matches of the trials where all 128 blocks voted. */
const all128: number[] = [];
/**
 * For the calibration test, one transformation per (image, key): the same
 * image under ten transformations with one key gives correlated counts,
 * while different keys on one image are independent under the null model.
 */
const independentMatches: number[] = [];
let falsePositives = 0;
let trials = 0;
let smallestP = 1;
const confidences128: number[] = [];
const fewerBlocks = { trials: 0, minBlocks: Number.POSITIVE_INFINITY };
const falseAlarms: string[] = [];
for (const [imageIndex, image] of negatives.entries()) {
  for (const [attackIndex, attack] of NULL_ATTACKS.entries()) {
    const input = await decodeForDetection(await attack.apply(image));
    for (const [keyIndex, k] of nullKeys.entries()) {
      const result = detectFingerprint(input, [k]);
      trials++;
      const matches = Math.round(result.confidence * result.blocks);
      if (result.blocks > 0) smallestP = Math.min(smallestP, binomialUpperTail(result.blocks, matches));
      if (result.blocks === 128) {
        all128.push(matches);
        if ((imageIndex + keyIndex) % NULL_ATTACKS.length === attackIndex) independentMatches.push(matches);
        confidences128.push(result.confidence);
      } else {
        fewerBlocks.trials++;
        fewerBlocks.minBlocks = Math.min(fewerBlocks.minBlocks, result.blocks);
      }
      if (result.present) {
        falsePositives++;
        falseAlarms.push(`${image.name} ${attack.id} ${k.version}`);
      }
    }
  }
  log(`null: ${image.name.padEnd(40)} trials so far ${trials}, false positives ${falsePositives}`);
}
const calibration = { ...binomialCalibration(independentMatches, 128), all: binomialCalibration(all128, 128) };

// ---- latency ----------------------------------------------------------------------------------
log('latency: 12-megapixel JPEG, one core ...');
sharp.concurrency(1);
const source = photoFiles.find((f) => f.name === 'Kleiber_by_Lukas_Baubkus') ?? photoFiles[0]!;
const big = await sharp(readFileSync(source.path)).rotate().removeAlpha().resize(4000, 3000, { fit: 'cover' }).raw().toBuffer({ resolveWithObject: true });
const bigRaster = { data: big.data, width: 4000, height: 3000, channels: 3 };
const embedBig: number[] = [];
let bigMarked = embedFingerprint(bigRaster, key).data;
for (let i = 0; i < 3; i++) {
  const t = performance.now();
  bigMarked = embedFingerprint(bigRaster, key).data;
  embedBig.push(performance.now() - t);
}
const raw = { raw: { width: 4000, height: 3000, channels: 3 as const } };
const files = {
  marked: await sharp(bigMarked, raw).jpeg({ quality: 90 }).toBuffer(),
  unmarked: await sharp(big.data, raw).jpeg({ quality: 90 }).toBuffer(),
  markedCrop: await sharp(bigMarked, raw).extract({ left: 300, top: 240, width: 3400, height: 2520 }).jpeg({ quality: 90 }).toBuffer(),
  pngMarked: await sharp(bigMarked, raw).png().toBuffer(),
  pngUnmarked: await sharp(big.data, raw).png().toBuffer(),
};

/** Wall-clock time of one call. */
async function timed<T>(run: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t = performance.now();
  const value = await run();
  return { value, ms: performance.now() - t };
}
const detectFile = (bytes: Uint8Array) => timed(async () => detectFingerprint(await decodeForDetection(bytes), [key]));

type TimingName = 'decodeFull' | 'decodeReduced' | 'marked' | 'unmarked' | 'markedCrop' | 'computeMarked' | 'computeUnmarked' | 'pngDecodeFull' | 'pngDecodeReduced' | 'pngMarked' | 'pngUnmarked';
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
for (let i = -3; i < LATENCY_RUNS; i++) {
  const decodeReduced = await timed(() => decodeForDetection(files.unmarked));
  const runs = { marked: await detectFile(files.marked), unmarked: await detectFile(files.unmarked), markedCrop: await detectFile(files.markedCrop) };
  // The detector alone, on the decoded copy: the compute part of the figures above.
  const reduced = { marked: await decodeForDetection(files.marked), unmarked: decodeReduced.value };
  const compute = { marked: await timed(async () => detectFingerprint(reduced.marked, [key])), unmarked: await timed(async () => detectFingerprint(reduced.unmarked, [key])) };
  if (i < 0) continue; // warm-up
  keep('decodeReduced', decodeReduced.ms);
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
const latency = Object.fromEntries(Object.entries(timings).map(([name, v]) => [name, { p50: quantile(v, 0.5), p95: quantile(v, 0.95) }])) as Record<TimingName, { p50: number; p95: number }>;

// The photos as shipped (unmarked, so each runs the whole scale search): the median of a few runs per file.
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
for (const [i, bytes] of shippedBytes.entries()) {
  const meta = await sharp(bytes).metadata();
  shipped.push({ mp: ((meta.width ?? 0) * (meta.height ?? 0)) / 1e6, decodeFull: await medianOf(() => sharp(bytes).raw().toBuffer()), detect: shippedDetect[i]! });
}
const asShipped = {
  photos: shipped.length,
  minMp: Math.min(...shipped.map((x) => x.mp)),
  maxMp: Math.max(...shipped.map((x) => x.mp)),
  detect: { p50: quantile(shipped.map((x) => x.detect), 0.5), p95: quantile(shipped.map((x) => x.detect), 0.95), max: Math.max(...shipped.map((x) => x.detect)) },
  decodeFull: { p50: quantile(shipped.map((x) => x.decodeFull), 0.5), p95: quantile(shipped.map((x) => x.decodeFull), 0.95), max: Math.max(...shipped.map((x) => x.decodeFull)) },
};

const results: Results = {
  environment: `Node ${process.version}, sharp ${sharp.versions.sharp} (libvips ${sharp.versions.vips}), ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.cpus().length} cores`,
  photos: photos.length,
  photoSizes: { minMp: Math.min(...photos.map((p) => (p.width * p.height) / 1e6)), maxMp: Math.max(...photos.map((p) => (p.width * p.height) / 1e6)) },
  graphics: { packaged: packagedGraphics.length, drawn: DRAWN_GRAPHICS },
  browser: browser !== undefined,
  psnr: summary(psnrs),
  psnrGraphics: summary(markedGraphics.psnrs),
  embedMsMedianPhotos: quantile(embedMs, 0.5),
  attacks: attackRows,
  misses,
  graphicAttacks: graphicRows,
  graphicMisses,
  nulls: {
    trials,
    keys: NULL_KEYS,
    attacks: NULL_ATTACKS.map((a) => a.id),
    images: negatives.length,
    falsePositives,
    falseAlarms,
    smallestP,
    fewerBlocks: { trials: fewerBlocks.trials, minBlocks: fewerBlocks.trials ? fewerBlocks.minBlocks : 128 },
    confidence128: { mean: confidences128.reduce((a, b) => a + b, 0) / confidences128.length, max: Math.max(...confidences128) },
    calibration,
  },
  latency: { ...latency, loadAverage, embed12mpMs: quantile(embedBig, 0.5), verdicts, runs: LATENCY_RUNS, pngRuns: PNG_LATENCY_RUNS, fileMb: files.marked.length / 1e6, pngFileMb: files.pngMarked.length / 1e6, asShipped },
  totalMinutes: (performance.now() - started) / 60000,
};
writeFileSync(join(TMP, 'fingerprint-results.json'), JSON.stringify(results, null, 2));
const report = renderReport(results);
writeFileSync(QUICK ? join(TMP, 'fingerprint.md') : join(ROOT, 'docs', 'fingerprint.md'), report.markdown);
log();
for (const line of report.targets) log(line);
log(`\nwrote ${QUICK ? '.bench-tmp/fingerprint.md' : 'docs/fingerprint.md'} (${results.totalMinutes.toFixed(1)} min)`);

function summary(values: readonly number[]) {
  return { min: Math.min(...values), median: quantile(values, 0.5), mean: values.reduce((a, b) => a + b, 0) / values.length };
}

/**
 * Matches over null trials against Binomial(n, 1/2): mean, sd, and the
 * Kolmogorov-Smirnov distance with its asymptotic p-value (conservative
 * for a discrete law).
 */
function binomialCalibration(matches: readonly number[], n: number) {
  const count = matches.length;
  const mean = matches.reduce((a, b) => a + b, 0) / count;
  const sd = Math.sqrt(matches.reduce((a, b) => a + (b - mean) ** 2, 0) / (count - 1));
  const histogram = new Array<number>(n + 1).fill(0);
  for (const m of matches) histogram[m]!++;
  let empirical = 0;
  let distance = 0;
  for (let k = 0; k <= n; k++) {
    empirical += histogram[k]! / count;
    const theoretical = 1 - binomialUpperTail(n, k + 1);
    distance = Math.max(distance, Math.abs(empirical - theoretical));
  }
  const lambda = (Math.sqrt(count) + 0.12 + 0.11 / Math.sqrt(count)) * distance;
  let p = 0;
  for (let j = 1; j <= 100; j++) p += 2 * (-1) ** (j - 1) * Math.exp(-2 * j * j * lambda * lambda);
  return { trials: count, mean, sd, expectedMean: n / 2, expectedSd: Math.sqrt(n) / 2, ksDistance: distance, ksP: Math.min(1, Math.max(0, p)), max: Math.max(...matches) };
}

