/**
 * `npm run bench` (its first part): on the same files (about 100 KB, 1, 5
 * and 25 MB of each format), how much protect and verify cost next to one
 * SHA-256 of the file (the floor), how protect compares with ExifTool 13.59
 * writing the same field (in a -stay_open batch, and one process per file),
 * and how verify with the fingerprint detector compares with the fastest
 * sharp decode of the same image (the reduced, shrink-on-load decode the
 * detector uses; the full decode beside it), plus a 12-megapixel JPEG for
 * verify's target. A report, not a test: it exits 0 even when a target is
 * missed, but prints FAIL loudly. Results go to .bench-tmp/bench-results.json,
 * which bench/page.ts turns into docs/benchmarks.md.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { extname, join } from 'node:path';
import sharp from 'sharp';
import { protect, verify } from '../src/index.js';
import { createFingerprinting, DETECT_DECODE, type Fingerprinting } from '../src/app/fingerprint.js';
import { systemClock } from '../src/app/ports.js';
import { createPixelDecoder } from '../src/adapters/pixels.js';
import detectTask, { embed as embedTask } from '../src/adapters/fingerprint-worker.js';
import { createProvenance } from '../src/app/provenance.js';
import { SigningKeys } from '../src/adapters/signing-keys.js';
import { EXIFTOOL_ARGS, ExifToolBench } from './exiftool-bench.js';
import { benchImages } from './images.js';
import { secondTable, table, targetLine, type FileResult, type Target } from './report.js';
import { measureInterleaved, measureInterleavedAsync } from './timing.js';

const runStarted = performance.now();
const ROOT = join(import.meta.dirname, '..');
const TMP = join(ROOT, '.bench-tmp');
const OUT = join(TMP, 'out');
/** ExifTool writes per file (each on a fresh copy): 5 to 11, more while under 2 s. */
const EXIFTOOL_RUNS = { min: 5, max: 11, minTimeMs: 2000 };
/** One ExifTool process per file: 5 per file, each on a fresh copy. */
const EXIFTOOL_PROCESS_RUNS = 5;

const log = (line = '') => process.stdout.write(`${line}\n`);

log('optmark benchmark: protect/verify vs one SHA-256, and vs ExifTool -stay_open');
log('preparing images (cached in .bench-tmp/images/) ...');
const images = await benchImages(join(TMP, 'images'), log);
mkdirSync(OUT, { recursive: true });

const exiftool = new ExifToolBench(join(TMP, 'exiftool'));
// A key ring of the benchmark's own, as a deployment has in its data directory.
const provenance = createProvenance({ keys: SigningKeys.open(join(TMP, 'keys', 'signing-keys.json')), issuer: () => 'https://bench.example', clock: systemClock });
/**
 * Verify's fingerprint check as the command line runs it (the server runs the
 * same detector on its worker pool): the reduced decode, then the detector
 * in this thread, with a key of the benchmark's. The benchmark's files carry
 * no mark, so the detector runs its whole scale search: the slow case.
 */
const pixels = createPixelDecoder({ maxPixels: 100_000_000, concurrency: 1, queue: 1 });
const fingerprintSecret = { version: 1, secret: new Uint8Array(Buffer.from('optmark benchmark fingerprint key, not a secret')) };
const fingerprint: Fingerprinting = createFingerprinting({
  pixels,
  detect: async (task) => detectTask(task),
  embed: async (task) => embedTask(task),
  detecting: () => [fingerprintSecret],
  marking: () => fingerprintSecret,
});
/** The verify comparison: verify alone, with the detector, and the two sharp decodes. */
async function measureVerify(bytes: Uint8Array) {
  const m = await measureInterleavedAsync({
    verify: async () => verify(bytes),
    verifyDetect: async () => {
      const result = verify(bytes);
      return { ...result, fingerprint: await fingerprint.check(bytes) };
    },
    decodeReduced: () => pixels.decode(bytes, DETECT_DECODE),
    decodeFull: () => sharp(bytes).raw().toBuffer(),
  });
  return { verifyMs: m.verify.medianMs, verifyDetectMs: m.verifyDetect.medianMs, decodeReducedMs: m.decodeReduced.medianMs, decodeFullMs: m.decodeFull.medianMs };
}

const results: FileResult[] = [];
type VerifyTimes = Awaited<ReturnType<typeof measureVerify>>;
let twelve: { bytes: number; width: number; height: number; unmarked: VerifyTimes; marked: VerifyTimes } | undefined;
let exiftoolVersion = '';
try {
  exiftoolVersion = await exiftool.version();
  await exiftool.warmUp(images[0]!.path, extname(images[0]!.path).slice(1));
  log(`node ${process.version}, ExifTool ${exiftoolVersion}, ${os.cpus()[0]?.model ?? 'unknown CPU'} x${os.cpus().length}`);
  // The allocator setting npm start uses (docs/operations.md); ExifTool's perl inherits it too.
  log(`GLIBC_TUNABLES=${process.env.GLIBC_TUNABLES ?? '(unset: glibc defaults)'}`);
  log();

  for (const image of images) {
    const { bytes } = image;
    // Sanity first: a protect that did nothing would make any timing meaningless.
    const protectedBytes = protect(bytes).bytes;
    if (!verify(protectedBytes).optedOut) throw new Error(`${image.name}: protect output does not verify as opted out`);

    const outPath = join(OUT, `${image.name}${extname(image.path)}`);
    // In-process work is timed in one round-robin, file I/O in another: the
    // page-cache and allocation churn of file writes would otherwise be
    // charged to whichever in-memory operation runs next.
    const signedBytes = protect(bytes, { signer: provenance.signer }).bytes;
    if (!verify(signedBytes, { provenance }).provenance.valid) throw new Error(`${image.name}: the signed output does not verify`);
    const { sha, copy, prot, protHashed, ver, protSig, verSig } = measureInterleaved({
      sha: () => createHash('sha256').update(bytes).digest(),
      // One new buffer of the file's size, filled: what writing the output costs at least.
      copy: () => Buffer.from(bytes),
      // The marked bytes: what ExifTool's write makes, and the command line's protect.
      prot: () => protect(bytes).bytes,
      // The result as the API reports it: the marked file's SHA-256 included (protect computes it when it is first read).
      protHashed: () => protect(bytes).sha256,
      // verify the protected file: the case where there is an opt-out to parse and report.
      ver: () => verify(protectedBytes),
      // The same with a provenance tag signed on protect and checked on verify.
      protSig: () => protect(bytes, { signer: provenance.signer }).sha256,
      verSig: () => verify(signedBytes, { provenance }),
    });
    const { protIo, io } = measureInterleaved({
      // File to file, as the command line marks (and ExifTool writes): no SHA-256 of the output.
      protIo: () => writeFileSync(outPath, protect(readFileSync(image.path)).bytes),
      // The read + write alone, to show how much of the file-to-file time is plain I/O.
      io: () => writeFileSync(outPath, readFileSync(image.path)),
    });
    const et = await exiftool.measure(image.path, extname(image.path).slice(1), EXIFTOOL_RUNS.min, EXIFTOOL_RUNS.max, EXIFTOOL_RUNS.minTimeMs);
    const etProcess = exiftool.measureProcesses(image.path, extname(image.path).slice(1), EXIFTOOL_PROCESS_RUNS);
    const decoding = await measureVerify(protectedBytes);

    results.push({
      name: image.name,
      format: image.format,
      bytes: bytes.length,
      width: image.width,
      height: image.height,
      sha256Ms: sha.medianMs,
      copyMs: copy.medianMs,
      protectMs: prot.medianMs,
      protectHashedMs: protHashed.medianMs,
      verifyMs: ver.medianMs,
      protectSignedMs: protSig.medianMs,
      verifySignedMs: verSig.medianMs,
      protectIoMs: protIo.medianMs,
      ioMs: io.medianMs,
      exiftoolMs: et.medianMs,
      exiftoolProcessMs: etProcess.medianMs,
      verifyDetectMs: decoding.verifyDetectMs,
      decodeReducedMs: decoding.decodeReducedMs,
      decodeFullMs: decoding.decodeFullMs,
      runs: { sha256: sha.runs, protect: prot.runs, verify: ver.runs, protectIo: protIo.runs, exiftool: et.runs, exiftoolProcess: etProcess.runs },
    });
    log(`  measured ${image.name} (${image.width}x${image.height})`);
  }

  // A 12-megapixel camera-like JPEG (quality 90, 4:2:0, about 3.4 MB):
  // grain softened as a lens and demosaicing soften it, rather than the
  // noise above. Verified unmarked (the detector's whole scale search) and
  // with this benchmark's fingerprint in it (the short path).
  const side = { width: 4000, height: 3000 };
  const grain = await sharp({ create: { ...side, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 30 } } }).raw().toBuffer();
  const scene = await sharp(grain, { raw: { ...side, channels: 3 } }).blur(1.2).linear(1.8, -100).jpeg({ quality: 90 }).toBuffer();
  const unmarked12 = protect(scene).bytes;
  const marked12 = protect((await fingerprint.mark(scene)).bytes).bytes;
  if (!(await fingerprint.check(marked12)).present || (await fingerprint.check(unmarked12)).present) throw new Error('the 12 MP JPEG: the fingerprint is not found where it is, or found where it is not');
  twelve = { bytes: unmarked12.length, ...side, unmarked: await measureVerify(unmarked12), marked: await measureVerify(marked12) };
  log(`  measured jpeg-12mp (${side.width}x${side.height}, ${(unmarked12.length / 1e6).toFixed(1)} MB)`);
} finally {
  await exiftool.close();
  rmSync(OUT, { recursive: true, force: true });
}

log();
log('medians in ms; ratios are to one SHA-256 of the file; "faster" = ExifTool time / our protect time;');
log('protect ms = the marked bytes (as ExifTool writes them); +sha out = with the SHA-256 of the output, as the API answers;');
log('tag +prot / +ver = what signing the provenance tag adds to protect, and checking it adds to verify');
log('(mem = protect on bytes in memory; file = readFileSync + protect + writeFileSync, as ExifTool works on files;');
log(' read+write alone per file is in bench-results.json as ioMs)');
log();
log(table(results));
log();
log('signed protect = protect with the provenance tag signed and the SHA-256 of the output read, as the API runs it;');
log('exiftool batch = -stay_open, per write; exiftool process = one perl exiftool per file; faster = ExifTool / signed protect;');
log('verify = the marked file; +fingerprint = with the fingerprint check (reduced decode + detector, whole scale search: no mark);');
log('/decode = verify with the fingerprint over the reduced (shrink-on-load) decode alone');
log();
log(secondTable(results));
log();
if (twelve) {
  for (const which of ['unmarked', 'marked'] as const) {
    const t = twelve[which];
    log(
      `12 MP JPEG (${twelve.width}x${twelve.height}, ${(twelve.bytes / 1e6).toFixed(1)} MB), ${which}: verify ${t.verifyMs.toFixed(2)} ms, with the fingerprint ${t.verifyDetectMs.toFixed(1)} ms, ` +
        `reduced decode ${t.decodeReducedMs.toFixed(1)} ms (x${(t.verifyDetectMs / t.decodeReducedMs).toFixed(2)}), full decode ${t.decodeFullMs.toFixed(1)} ms`,
    );
  }
  log();
}

// The issue's targets, on the 5 MB JPEG.
const jpeg5 = results.find((r) => r.name === 'jpeg-5mb')!;
const shaRatio = jpeg5.protectHashedMs / jpeg5.sha256Ms;
const speedUpFile = jpeg5.exiftoolMs / jpeg5.protectIoMs;
const speedUpMem = jpeg5.exiftoolMs / jpeg5.protectMs;
const targets: Target[] = [
  {
    // The API's protect: marking, and the SHA-256 of the marked file its answer carries.
    name: 'protect(5 MB JPEG) <= 2x one SHA-256',
    pass: shaRatio <= 2,
    detail: `protect with the SHA-256 of its output ${jpeg5.protectHashedMs.toFixed(2)} ms vs sha256 ${jpeg5.sha256Ms.toFixed(2)} ms = ${shaRatio.toFixed(2)}x (limit 2.00x)`,
  },
  {
    // Judged on protect in process, as the target is stated, doing what
    // ExifTool does (the marked bytes, no hash of them); file to file (our
    // read + protect + write against ExifTool's own file I/O) is shown alongside.
    name: 'protect(5 MB JPEG) >= 3x faster per file than ExifTool -stay_open',
    pass: speedUpMem >= 3,
    detail: `ExifTool ${jpeg5.exiftoolMs.toFixed(2)} ms vs protect ${jpeg5.protectMs.toFixed(2)} ms = ${speedUpMem.toFixed(1)}x faster (need 3.0x); file to file: protect+io ${jpeg5.protectIoMs.toFixed(2)} ms (read+write alone ${jpeg5.ioMs.toFixed(2)} ms) = ${speedUpFile.toFixed(1)}x`,
  },
  {
    // The issue "Scale": the signed protect the server runs, two hashes (the
    // content digest the tag signs, then the output's) on one thread.
    name: 'signed protect (5 MB JPEG) <= 2.1x one SHA-256 on one thread',
    pass: jpeg5.protectSignedMs / jpeg5.sha256Ms <= 2.1,
    detail: `${jpeg5.protectSignedMs.toFixed(2)} ms vs sha256 ${jpeg5.sha256Ms.toFixed(2)} ms = ${(jpeg5.protectSignedMs / jpeg5.sha256Ms).toFixed(2)}x (limit 2.10x; two hashes alone are 2.00x)`,
  },
  {
    // Not reachable on any number of threads: the output carries the tag,
    // the tag signs the content digest, so the output's hash can only start
    // once the content digest is done; two passes in a row (docs/benchmarks.md).
    name: 'signed protect (5 MB JPEG) <= 1.3x one SHA-256 with the two hashes on two threads',
    pass: jpeg5.protectSignedMs / jpeg5.sha256Ms <= 1.3,
    detail: `${(jpeg5.protectSignedMs / jpeg5.sha256Ms).toFixed(2)}x; the hashes depend on each other (the output holds the tag that signs the content digest), so a second thread cannot take one: the floor is 2.00x`,
  },
  {
    name: 'signed protect (5 MB JPEG) >= 4x faster per file than ExifTool -stay_open',
    pass: jpeg5.exiftoolMs / jpeg5.protectSignedMs >= 4,
    detail: `ExifTool ${jpeg5.exiftoolMs.toFixed(2)} ms vs signed protect ${jpeg5.protectSignedMs.toFixed(2)} ms = ${(jpeg5.exiftoolMs / jpeg5.protectSignedMs).toFixed(1)}x (one process per file: ${(jpeg5.exiftoolProcessMs / jpeg5.protectSignedMs).toFixed(0)}x)`,
  },
  ...(twelve
    ? (['marked', 'unmarked'] as const).map((which) => {
        const t = twelve![which];
        return {
          name: `verify (12 MP JPEG, ${which}), fingerprint included, <= 1.5x the reduced sharp decode`,
          pass: t.verifyDetectMs / t.decodeReducedMs <= 1.5,
          detail: `${t.verifyDetectMs.toFixed(1)} ms vs ${t.decodeReducedMs.toFixed(1)} ms = ${(t.verifyDetectMs / t.decodeReducedMs).toFixed(2)}x (full decode ${t.decodeFullMs.toFixed(1)} ms)`,
        };
      })
    : []),
  ...(['protect', 'verify'] as const).map((op) => {
    const added = op === 'protect' ? jpeg5.protectSignedMs - jpeg5.protectHashedMs : jpeg5.verifySignedMs - jpeg5.verifyMs;
    const budget = 1 + jpeg5.sha256Ms;
    return {
      name: `the provenance tag adds to ${op} (5 MB JPEG) under 1 ms plus one SHA-256`,
      pass: added <= budget,
      detail: `+${added.toFixed(2)} ms (budget ${budget.toFixed(2)} ms = 1 ms + sha256 ${jpeg5.sha256Ms.toFixed(2)} ms)`,
    };
  }),
];
for (const t of targets) log(targetLine(t, process.stdout.isTTY));

const totalSeconds = (performance.now() - runStarted) / 1000;
const resultsPath = join(TMP, 'bench-results.json');
writeFileSync(
  resultsPath,
  `${JSON.stringify(
    {
      date: new Date().toISOString(),
      environment: { node: process.version, exiftool: exiftoolVersion, glibcTunables: process.env.GLIBC_TUNABLES ?? null, cpu: os.cpus()[0]?.model, cpus: os.cpus().length, platform: `${os.platform()} ${os.release()}` },
      method: { statistic: 'median', inProcess: 'sha256, protect, verify, protect+io, io interleaved round-robin; warm-up 3 rounds, then >= 15 rounds and >= 1 s per operation', exiftoolRunsPerFile: EXIFTOOL_RUNS, exiftoolProcessRunsPerFile: EXIFTOOL_PROCESS_RUNS, exiftoolArgs: EXIFTOOL_ARGS, fingerprint: 'verify of the marked file, then the fingerprint check: reduced decode (sharp, shrink-on-load) and the detector in this thread, no mark present (whole scale search)' },
      results: results.map((r) => ({
        ...r,
        protectOverSha256: r.protectHashedMs / r.sha256Ms,
        verifyOverSha256: r.verifyMs / r.sha256Ms,
        speedUpInMemory: r.exiftoolMs / r.protectMs,
        speedUpFileToFile: r.exiftoolMs / r.protectIoMs,
      })),
      twelveMegapixel: twelve,
      versions: { sharp: sharp.versions.sharp, libvips: sharp.versions.vips },
      targets,
      totalSeconds,
    },
    null,
    2,
  )}\n`,
);
log();
log(`results written to ${resultsPath}`);
log(`total run time ${totalSeconds.toFixed(1)} s`);
