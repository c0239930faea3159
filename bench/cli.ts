/**
 * `npm run bench` (its last part), the command line as a person runs it:
 * - start-up: `optmark --help` and `optmark verify` of a small file, median
 *   of 20 runs each, beside `node -e 0` (targets: at most 150 ms each);
 * - a whole folder: one `optmark protect` of 60 JPEGs of 5 MB (one process,
 *   start-up, reading and writing included) against ExifTool 13.59 in one
 *   `-stay_open True -@ -` process writing the same field into fresh copies
 *   of the same files (its start-up timed apart), wall and CPU seconds.
 *   Each side starts with the files it reads in the page cache and nothing
 *   of the last run left to write back (sync), and writes 60 new files; the
 *   runs alternate (ExifTool, optmark, then optmark, ExifTool, ...), so that
 *   other work on the machine weighs on both alike; median of 7 runs each
 *   (target: at least 2x faster), with the median of the 7 paired ratios
 *   and the load average beside it.
 * A report, not a test: it exits 0 when a target is missed, but prints FAIL.
 * Results also go to .bench-tmp/bench-cli.json.
 */
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { verify } from '../src/index.js';
import { procTimes } from './cpu-usage.js';
import { EXIFTOOL_ARGS } from './exiftool-bench.js';
import { generate } from './images.js';
import { targetLine, type Target } from './report.js';
import { median } from './timing.js';

const ROOT = join(import.meta.dirname, '..');
const TMP = join(ROOT, '.bench-tmp', 'cli');
const BIN = join(ROOT, 'bin', 'optmark.js');
const EXIFTOOL = join(ROOT, 'node_modules', 'exiftool-vendored.pl', 'bin', 'exiftool');
const FILES = 60;
const RUNS = 7;
const log = (line = '') => process.stdout.write(`${line}\n`);

interface Timed {
  readonly wallMs: number;
  readonly cpuMs: number;
}

/** Run a command to its end: wall time, and the CPU time of it and its children (getrusage). */
function timed(command: string, args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<Timed> {
  return new Promise((resolve, reject) => {
    childrenCpuMs(); // what ran before (sync, say) is not this command's
    const started = performance.now();
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: [options.input === undefined ? 'ignore' : 'pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    if (options.input !== undefined) child.stdin!.end(options.input);
    child.on('close', (code) => {
      const wallMs = performance.now() - started;
      if (code !== 0) return reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${stderr}`));
      resolve({ wallMs, cpuMs: childrenCpuMs() });
    });
  });
}

let lastChildrenCpu = 0;
/** CPU milliseconds of the children that ended since the last call (this process's reaped children, from /proc). */
function childrenCpuMs(): number {
  const ms = procTimes('self').children * 1000;
  const delta = ms - lastChildrenCpu;
  lastChildrenCpu = ms;
  return delta;
}

async function medianOf(runs: number, once: () => Promise<Timed>): Promise<Timed> {
  const samples: Timed[] = [];
  for (let i = 0; i < runs; i++) samples.push(await once());
  return { wallMs: median(samples.map((s) => s.wallMs)), cpuMs: median(samples.map((s) => s.cpuMs)) };
}

mkdirSync(TMP, { recursive: true });
childrenCpuMs();
const env = { ...process.env, OPTMARK_DATA_DIR: join(TMP, 'data') };

// Start-up.
const small = join(ROOT, 'test', 'corpus', 'exiftool', 'XMP.jpg');
for (const args of [['-e', '0'], [BIN, '--help'], [BIN, 'verify', small]]) await timed(process.execPath, args, { env }); // warm the page cache and the compile cache
const nodeAlone = await medianOf(20, () => timed(process.execPath, ['-e', '0'], { env }));
const help = await medianOf(20, () => timed(process.execPath, [BIN, '--help'], { env }));
const verifySmall = await medianOf(20, () => timed(process.execPath, [BIN, 'verify', small], { env }));
log(`start-up, median of 20: node -e 0 ${nodeAlone.wallMs.toFixed(1)} ms; optmark --help ${help.wallMs.toFixed(1)} ms; optmark verify (${readFileSync(small).length} bytes) ${verifySmall.wallMs.toFixed(1)} ms`);

// 60 JPEGs of 5 MB, each its own picture.
const source = join(TMP, 'source');
if (!existsAll(source, FILES)) {
  rmSync(source, { recursive: true, force: true });
  mkdirSync(source, { recursive: true });
  log(`generating ${FILES} JPEGs of 5 MB ...`);
  for (let i = 0; i < FILES; i++) writeFileSync(join(source, `photo-${String(i).padStart(2, '0')}.jpg`), (await generate('jpeg', 5 * 1024 * 1024, 100 + i)).bytes);
}
const names = readdirSync(source).sort();

function existsAll(dir: string, count: number): boolean {
  try {
    return readdirSync(dir).filter((f) => f.endsWith('.jpg')).length === count;
  } catch {
    return false;
  }
}

// ExifTool: fresh copies each run (made before the clock starts: they are then in the page cache, written
// back by sync), one -stay_open process, its start-up apart.
const copies = join(TMP, 'exiftool');
const exiftoolStart = await medianOf(RUNS, () => timed('perl', [EXIFTOOL, '-ver']));
const argsFile = names.map((n) => [...EXIFTOOL_ARGS, join(copies, n), '-execute'].join('\n')).join('\n') + '\n-stay_open\nFalse\n';
const exiftoolOnce = async (): Promise<Timed> => {
  rmSync(copies, { recursive: true, force: true });
  mkdirSync(copies);
  for (const n of names) copyFileSync(join(source, n), join(copies, n));
  execFileSync('sync');
  return timed('perl', [EXIFTOOL, '-stay_open', 'True', '-@', '-'], { input: argsFile });
};

// optmark: one process for the whole folder, into an empty folder each run; the sources read into the page
// cache before the clock starts (as ExifTool's copies are).
const out = join(TMP, 'out');
const optmarkOnce = async (): Promise<Timed> => {
  rmSync(out, { recursive: true, force: true });
  for (const n of names) readFileSync(join(source, n));
  execFileSync('sync');
  return timed(process.execPath, [BIN, 'protect', source, '--out', out], { env });
};

// Alternating, the order swapped each round; the first round of each, untimed, warms what is left to warm.
await exiftoolOnce();
await optmarkOnce();
const exiftoolRuns: Timed[] = [];
const optmarkRuns: Timed[] = [];
const loads: number[] = [];
for (let round = 0; round < RUNS; round++) {
  loads.push(os.loadavg()[0]!);
  if (round % 2 === 0) {
    exiftoolRuns.push(await exiftoolOnce());
    optmarkRuns.push(await optmarkOnce());
  } else {
    optmarkRuns.push(await optmarkOnce());
    exiftoolRuns.push(await exiftoolOnce());
  }
}
if (!verify(readFileSync(join(copies, names[0]!))).optedOut) throw new Error('ExifTool did not write the opt-out');
if (!verify(readFileSync(join(out, names[0]!.replace('.jpg', '-optout.jpg')))).optedOut) throw new Error('optmark did not write the opt-out');
const medianRun = (runs: readonly Timed[]): Timed => ({ wallMs: median(runs.map((r) => r.wallMs)), cpuMs: median(runs.map((r) => r.cpuMs)) });
const exiftool = medianRun(exiftoolRuns);
const ours = medianRun(optmarkRuns);
const pairedRatio = median(exiftoolRuns.map((e, i) => e.wallMs / optmarkRuns[i]!.wallMs));
const load = median(loads);

const ratio = exiftool.wallMs / ours.wallMs;
log(`ExifTool ${FILES} x 5 MB in one -stay_open process: ${(exiftool.wallMs / 1000).toFixed(2)} s wall, ${(exiftool.cpuMs / 1000).toFixed(2)} s CPU (its start-up alone ${exiftoolStart.wallMs.toFixed(0)} ms)`);
log(`optmark protect of the folder: ${(ours.wallMs / 1000).toFixed(2)} s wall, ${(ours.cpuMs / 1000).toFixed(2)} s CPU (start-up and disk included)`);
log(`median of ${RUNS} alternating runs each; the ${RUNS} paired ratios' median ${pairedRatio.toFixed(2)}x; load average ${load.toFixed(2)} on ${os.availableParallelism()} CPUs`);
const targets: Target[] = [
  { name: 'optmark --help, median of 20 runs <= 150 ms', pass: help.wallMs <= 150, detail: `${help.wallMs.toFixed(1)} ms = ${(help.wallMs / nodeAlone.wallMs).toFixed(2)}x node -e 0 (${nodeAlone.wallMs.toFixed(1)} ms)` },
  { name: 'optmark verify of a small file, median of 20 runs <= 150 ms', pass: verifySmall.wallMs <= 150, detail: `${verifySmall.wallMs.toFixed(1)} ms = ${(verifySmall.wallMs / nodeAlone.wallMs).toFixed(2)}x node -e 0` },
  { name: `optmark protect of ${FILES} x 5 MB JPEGs >= 2x faster than ExifTool -stay_open`, pass: ratio >= 2, detail: `ExifTool ${(exiftool.wallMs / 1000).toFixed(2)} s / optmark ${(ours.wallMs / 1000).toFixed(2)} s = ${ratio.toFixed(2)}x (need 2.00x)` },
];
for (const t of targets) log(targetLine(t, process.stdout.isTTY));
writeFileSync(
  join(ROOT, '.bench-tmp', 'bench-cli.json'),
  `${JSON.stringify({ date: new Date().toISOString(), environment: { node: process.version, cpu: os.cpus()[0]?.model, cpus: os.cpus().length }, startup: { nodeAlone, help, verifySmall }, folder: { files: FILES, runs: RUNS, exiftool, exiftoolStart, optmark: ours, ratio, pairedRatio, loadAverage: load, exiftoolRuns, optmarkRuns }, targets }, null, 2)}\n`,
);
