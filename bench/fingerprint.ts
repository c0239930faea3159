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
import { ATTACKS, NULL_ATTACKS } from './fingerprint-attacks.js';
import { ensurePhotos, graphics, type RgbImage } from './fingerprint-images.js';
import { quantile } from './timing.js';
import { renderReport, wilson, type AttackRow, type Results } from './fingerprint-report.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const TMP = join(ROOT, '.bench-tmp');
const LONG_SIDE = 2048;
/** `--quick`: a few images and keys, to try the script; the report then goes to .bench-tmp only. */
const QUICK = process.argv.includes('--quick');
const NULL_KEYS = QUICK ? 2 : 20;
const GRAPHICS = QUICK ? 4 : 20;
const LATENCY_RUNS = QUICK ? 5 : 100;
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
const photoFiles = ensurePhotos(log).slice(0, QUICK ? 6 : undefined);
log(`${photoFiles.length} photos, ${GRAPHICS} graphics drawn in code`);

// ---- quality and robustness -------------------------------------------------------------------
const photos: RgbImage[] = [];
for (const f of photoFiles) photos.push(await loadPhoto(f.path, f.name));
const psnrs: number[] = [];
const embedMs: number[] = [];
const marked: RgbImage[] = [];
for (const photo of photos) {
  const t = performance.now();
  const result = embedFingerprint({ data: photo.data, width: photo.width, height: photo.height, channels: 3 }, key);
  embedMs.push(performance.now() - t);
  psnrs.push(result.psnr);
  marked.push({ ...photo, data: result.data });
}
log(`embedded ${marked.length} photos: PSNR min ${Math.min(...psnrs).toFixed(2)} dB, median ${quantile(psnrs, 0.5).toFixed(2)} dB`);

const attackRows: AttackRow[] = [];
const misses: string[] = [];
for (const attack of ATTACKS) {
  const confidences: number[] = [];
  const detectMs: number[] = [];
  let found = 0;
  for (const image of marked) {
    const bytes = await attack.apply(image);
    const input = await decodeForDetection(bytes);
    const t = performance.now();
    const result = detectFingerprint(input, [key]);
    detectMs.push(performance.now() - t);
    confidences.push(result.confidence);
    if (result.present) found++;
    else misses.push(`${attack.id}: ${image.name} (confidence ${result.confidence.toFixed(3)}, step ${result.sync?.step.toFixed(3)}, sync ${result.sync?.score.toFixed(1)})`);
  }
  const row: AttackRow = {
    id: attack.id,
    description: attack.description,
    target: attack.target,
    n: marked.length,
    detected: found,
    wilson: wilson(found, marked.length),
    meanConfidence: confidences.reduce((a, b) => a + b, 0) / confidences.length,
    p10Confidence: quantile(confidences, 0.1),
    medianDetectMs: quantile(detectMs, 0.5),
  };
  attackRows.push(row);
  log(`${attack.id.padEnd(12)} ${String(found).padStart(3)}/${marked.length}  mean conf ${row.meanConfidence.toFixed(3)}  p10 ${row.p10Confidence.toFixed(3)}  detect ${row.medianDetectMs.toFixed(1)} ms`);
}

// ---- false positives --------------------------------------------------------------------------
const nullKeys: FingerprintKey[] = Array.from({ length: NULL_KEYS }, (_, i) => deriveFingerprintKey(Buffer.from(`null key ${i} for the fingerprint benchmark`), `null-${i}`));
const negatives: Array<RgbImage & { kind: 'photo' | 'graphic' }> = [...photos.map((p) => ({ ...p, kind: 'photo' as const })), ...graphics(GRAPHICS).map((g) => ({ ...g, kind: 'graphic' as const }))];
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
};
const timings: { [name in 'decodeFull' | 'decodeReduced' | 'marked' | 'unmarked' | 'markedCrop' | 'computeMarked' | 'computeUnmarked']: number[] } = { decodeFull: [], decodeReduced: [], marked: [], unmarked: [], markedCrop: [], computeMarked: [], computeUnmarked: [] };
const verdicts: Record<string, boolean> = {};
for (let i = -3; i < LATENCY_RUNS; i++) {
  const keep = (name: keyof typeof timings, ms: number) => {
    if (i >= 0) timings[name].push(ms);
  };
  let t = performance.now();
  await sharp(files.unmarked).raw().toBuffer();
  keep('decodeFull', performance.now() - t);
  t = performance.now();
  await decodeForDetection(files.unmarked);
  keep('decodeReduced', performance.now() - t);
  for (const name of ['marked', 'unmarked', 'markedCrop'] as const) {
    t = performance.now();
    const input = await decodeForDetection(files[name]);
    const t1 = performance.now();
    const result = detectFingerprint(input, [key]);
    const t2 = performance.now();
    keep(name, t2 - t);
    if (name === 'marked') keep('computeMarked', t2 - t1);
    if (name === 'unmarked') keep('computeUnmarked', t2 - t1);
    verdicts[name] = result.present;
  }
}
const loadAverage = os.loadavg();
const latency = Object.fromEntries(Object.entries(timings).map(([name, v]) => [name, { p50: quantile(v, 0.5), p95: quantile(v, 0.95) }])) as Record<keyof typeof timings, { p50: number; p95: number }>;

const results: Results = {
  environment: `Node ${process.version}, sharp ${sharp.versions.sharp} (libvips ${sharp.versions.vips}), ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.cpus().length} cores`,
  photos: photos.length,
  photoSizes: { minMp: Math.min(...photos.map((p) => (p.width * p.height) / 1e6)), maxMp: Math.max(...photos.map((p) => (p.width * p.height) / 1e6)) },
  graphics: GRAPHICS,
  psnr: { min: Math.min(...psnrs), median: quantile(psnrs, 0.5), mean: psnrs.reduce((a, b) => a + b, 0) / psnrs.length },
  embedMsMedianPhotos: quantile(embedMs, 0.5),
  attacks: attackRows,
  misses,
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
  latency: { ...latency, loadAverage, embed12mpMs: quantile(embedBig, 0.5), verdicts, runs: LATENCY_RUNS, fileMb: files.marked.length / 1e6 },
  totalMinutes: (performance.now() - started) / 60000,
};
writeFileSync(join(TMP, 'fingerprint-results.json'), JSON.stringify(results, null, 2));
const report = renderReport(results);
writeFileSync(QUICK ? join(TMP, 'fingerprint.md') : join(ROOT, 'docs', 'fingerprint.md'), report.markdown);
log();
for (const line of report.targets) log(line);
log(`\nwrote ${QUICK ? '.bench-tmp/fingerprint.md' : 'docs/fingerprint.md'} (${results.totalMinutes.toFixed(1)} min)`);

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

