/**
 * `npm run bench`: how much protect/verify cost next to one SHA-256 of the
 * same file, and how protect compares with ExifTool writing the same field.
 * A report, not a test: it exits 0 even when a target is missed, but prints
 * FAIL loudly. Results also go to .bench-tmp/bench-results.json.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { extname, join } from 'node:path';
import { protect, verify } from '../src/index.js';
import { systemClock } from '../src/app/ports.js';
import { createProvenance } from '../src/app/provenance.js';
import { SigningKeys } from '../src/adapters/signing-keys.js';
import { EXIFTOOL_ARGS, ExifToolBench } from './exiftool-bench.js';
import { benchImages } from './images.js';
import { table, targetLine, type FileResult, type Target } from './report.js';
import { measureInterleaved } from './timing.js';

const runStarted = performance.now();
const ROOT = join(import.meta.dirname, '..');
const TMP = join(ROOT, '.bench-tmp');
const OUT = join(TMP, 'out');
/** ExifTool writes per file (each on a fresh copy): 5 to 11, more while under 2 s. */
const EXIFTOOL_RUNS = { min: 5, max: 11, minTimeMs: 2000 };

const log = (line = '') => process.stdout.write(`${line}\n`);

log('optmark benchmark: protect/verify vs one SHA-256, and vs ExifTool -stay_open');
log('preparing images (cached in .bench-tmp/images/) ...');
const images = await benchImages(join(TMP, 'images'), log);
mkdirSync(OUT, { recursive: true });

const exiftool = new ExifToolBench(join(TMP, 'exiftool'));
// A key ring of the benchmark's own, as a deployment has in its data directory.
const provenance = createProvenance({ keys: SigningKeys.open(join(TMP, 'keys', 'signing-keys.json')), issuer: () => 'https://bench.example', clock: systemClock });
const results: FileResult[] = [];
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
    const { sha, prot, protHashed, ver, protSig, verSig } = measureInterleaved({
      sha: () => createHash('sha256').update(bytes).digest(),
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

    results.push({
      name: image.name,
      format: image.format,
      bytes: bytes.length,
      width: image.width,
      height: image.height,
      sha256Ms: sha.medianMs,
      protectMs: prot.medianMs,
      protectHashedMs: protHashed.medianMs,
      verifyMs: ver.medianMs,
      protectSignedMs: protSig.medianMs,
      verifySignedMs: verSig.medianMs,
      protectIoMs: protIo.medianMs,
      ioMs: io.medianMs,
      exiftoolMs: et.medianMs,
      runs: { sha256: sha.runs, protect: prot.runs, verify: ver.runs, protectIo: protIo.runs, exiftool: et.runs },
    });
    log(`  measured ${image.name} (${image.width}x${image.height})`);
  }
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
      method: { statistic: 'median', inProcess: 'sha256, protect, verify, protect+io, io interleaved round-robin; warm-up 3 rounds, then >= 15 rounds and >= 1 s per operation', exiftoolRunsPerFile: EXIFTOOL_RUNS, exiftoolArgs: EXIFTOOL_ARGS },
      results: results.map((r) => ({
        ...r,
        protectOverSha256: r.protectHashedMs / r.sha256Ms,
        verifyOverSha256: r.verifyMs / r.sha256Ms,
        speedUpInMemory: r.exiftoolMs / r.protectMs,
        speedUpFileToFile: r.exiftoolMs / r.protectIoMs,
      })),
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
