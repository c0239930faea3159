/**
 * `npm run bench:page` (and the last step of `npm run bench`): writes
 * docs/benchmarks.md from the results the benchmarks left in .bench-tmp/ —
 * the machine, the versions, the date, every figure with the command that
 * reproduces it, and each target with PASS or MISSED and what bounds it.
 * It measures nothing itself; a part whose results are missing says so.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import type { FileResult, Target } from './report.js';

const ROOT = join(import.meta.dirname, '..');
const TMP = join(ROOT, '.bench-tmp');
const PAGE = join(ROOT, 'docs', 'benchmarks.md');

/* The shapes of the result files, as far as this page reads them. */
interface VerifyTimes {
  verifyMs: number;
  verifyDetectMs: number;
  decodeReducedMs: number;
  decodeFullMs: number;
}
interface InProcessResults {
  date: string;
  environment: { node: string; exiftool: string; glibcTunables: string | null };
  results: FileResult[];
  twelveMegapixel?: { bytes: number; width: number; height: number; unmarked: VerifyTimes; marked: VerifyTimes };
  versions?: { sharp: string; libvips: string };
  targets: Target[];
}
interface Load {
  connections: number;
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
}
interface HttpResults {
  date: string;
  environment: { loadTool: string; notes: string[] };
  runs: Array<Load & { op: string; image: string; uploadBytes: number; inProcess: { medianMs: number }; cpu?: { serverCores: number; clientCores: number; otherCores: number; serverCpuMsPerRequest: number } }>;
  serverMemory: { afterStart?: { rssMb: number }; afterRuns?: { peakRssMb: number } };
  target: Target;
}
interface ScaleResults {
  date: string;
  environment: { postgres: string; nginx: string; loadTool: string; cpus: number };
  method: { image: { bytes: number }; durationSeconds: number; judgedAt: number };
  parallelism: { alonePerCpuSecond: number; twoPerCpuSecond: number; efficiency: number; rate: number };
  idleCores?: Record<string, number>;
  setUps: Array<{ id: string; label: string }>;
  rows: Array<{ setUp: string; connections: number; result: Load; seconds: number; cpu: { server: number; postgres: number; nginx: number; wrk: number; machine: number }; callsPerServerCpuSecond: number; msPerCallByThread: Record<string, number> }>;
  targets: Target[];
}
interface RssResults {
  date: string;
  startMb: number;
  phases: Array<{ format: string; op: string; bytes: number; width: number; height: number; peakMb: number; rssMb: number }>;
  peakMb: number;
  /** The target: below this many MB per process. */
  limitMb: number;
  target: Target;
}
interface Timed {
  wallMs: number;
  cpuMs: number;
}
interface CliResults {
  date: string;
  startup: { nodeAlone: Timed; help: Timed; verifySmall: Timed };
  folder: { files: number; exiftool: Timed; exiftoolStart: Timed; optmark: Timed; ratio: number };
  targets: Target[];
}

function read<T>(name: string): T | undefined {
  const path = join(TMP, name);
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as T) : undefined;
}

const f = (v: number, digits = 1) => (Number.isFinite(v) ? v.toFixed(digits) : '–');
const ms = (v: number) => f(v, v < 10 ? 2 : 1);
const x = (v: number) => `${f(v, 2)}×`;
const size = (bytes: number) => (bytes >= 1e6 ? `${f(bytes / 1e6, 1)} MB` : `${f(bytes / 1e3, 0)} KB`);
const row = (cells: ReadonlyArray<string | number>) => `| ${cells.join(' | ')} |`;
const head = (cells: readonly string[]) => [row(cells), row(cells.map(() => '---'))];
const verdict = (t: Target) => `${t.pass ? '**met**' : '**missed**'}: ${t.name} — ${t.detail}`;

function tool(command: string, args: string[], pattern: RegExp): string {
  const r = spawnSync(command, args, { encoding: 'utf8' });
  return pattern.exec(`${r.stdout ?? ''}${r.stderr ?? ''}`)?.[1] ?? 'not installed';
}

function machine(): string[] {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  let debian = '';
  try {
    debian = readFileSync('/etc/debian_version', 'utf8').trim();
  } catch {
    // not Debian
  }
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    // not a git checkout
  }
  return [
    `- Machine: ${cpu}, ${os.cpus().length} cores, ${f(os.totalmem() / 2 ** 30, 0)} GiB, ${os.platform()} ${os.release()}${debian ? `, Debian ${debian}` : ''}`,
    `- optmark ${pkg.version} (commit ${commit}), Node.js ${process.version}`,
    `- Tools: ExifTool ${tool('perl', [join(ROOT, 'node_modules', 'exiftool-vendored.pl', 'bin', 'exiftool'), '-ver'], /^(\S+)/)}, wrk ${tool('wrk', ['--version'], /wrk (\S+)/)}, nginx ${tool('nginx', ['-v'], /nginx\/(\S+)/)}`,
  ];
}

function inProcessSection(r: InProcessResults | undefined): string[] {
  if (!r) return ['_Not run: `npm run bench:files`._'];
  const out: string[] = [];
  out.push(
    `Measured ${r.date.slice(0, 10)} with \`npm run bench:files\` (Node.js ${r.environment.node}, ExifTool ${r.environment.exiftool}${r.versions ? `, sharp ${r.versions.sharp} on libvips ${r.versions.libvips}` : ''}).`,
    'The files are made in code (bench/images.ts): busy pixels with an editor\'s EXIF, ICC profile and XMP, sized to about 100 KB, 1, 5 and 25 MB per format. Medians; operations interleaved round-robin so their ratios share the same machine state.',
    '',
    '### Marking: protect against one SHA-256 and against ExifTool',
    '',
    '"Signed protect" is what `POST /api/v1/protect` runs: the value written, the provenance tag signed over the content digest, and the SHA-256 of the output its answer carries. The floor is one SHA-256 pass over the same bytes. ExifTool writes the same field (`-XMP-plus:DataMining`), in a `-stay_open` batch (Perl started once) and as one process per file.',
    '',
    ...head(['file', 'size', 'SHA-256 ms', 'protect ms', 'signed protect ms', 'signed / SHA-256', 'ExifTool batch ms', 'faster', 'ExifTool per process ms', 'faster']),
    ...r.results.map((e) =>
      row([e.name, size(e.bytes), ms(e.sha256Ms), ms(e.protectMs), ms(e.protectSignedMs), x(e.protectSignedMs / e.sha256Ms), ms(e.exiftoolMs), x(e.exiftoolMs / e.protectSignedMs), ms(e.exiftoolProcessMs), x(e.exiftoolProcessMs / e.protectSignedMs)]),
    ),
    '',
    '"protect" alone is the marked bytes without any hash (what the command line writes to disk, and what ExifTool makes).',
    '',
    '### Verifying: verify against the decode of the same image',
    '',
    'verify reads the metadata (and checks the tag); with the fingerprint it also decodes the pixels at the analysis size (shrink-on-load, the fastest sharp decode of the file) and runs the detector. These files carry no mark, so the detector runs its whole scale search: the slow case.',
    '',
    ...head(['file', 'size', 'verify ms', 'with fingerprint ms', 'reduced decode ms', 'with fingerprint / reduced decode', 'full decode ms']),
    ...r.results.map((e) => row([e.name, size(e.bytes), ms(e.verifyMs), ms(e.verifyDetectMs), ms(e.decodeReducedMs), x(e.verifyDetectMs / e.decodeReducedMs), ms(e.decodeFullMs)])),
  );
  const t = r.twelveMegapixel;
  if (t) {
    for (const which of ['unmarked', 'marked'] as const) {
      const v = t[which];
      out.push(row([`jpeg-12mp, ${which} (${t.width}×${t.height}, camera-like)`, size(t.bytes), ms(v.verifyMs), ms(v.verifyDetectMs), ms(v.decodeReducedMs), x(v.verifyDetectMs / v.decodeReducedMs), ms(v.decodeFullMs)]));
    }
    out.push('', 'The 12-megapixel JPEG is verified twice: without a mark (the detector searches every scale) and with this benchmark\'s fingerprint in it (the mark stands out at the first scale and only a short climb runs). The detector runs in this thread, as `optmark verify` runs it; the server runs it on its worker pool, beside the event loop.');
  }
  return out;
}

function httpSection(r: HttpResults | undefined): string[] {
  if (!r) return ['_Not run: `npm run bench:http`._'];
  return [
    `Measured ${r.date.slice(0, 10)} with \`npm run bench:http\`: \`optmark serve\` as \`npm start\` runs it (one process, the embedded database), ${r.environment.loadTool === 'wrk' ? "Debian's wrk" : r.environment.loadTool} posting the same multipart body over and over, 8 s per row after a warm-up. Admission limits raised so that throughput is measured, not shedding (at the defaults, calls past 32 in flight per process, or 8 per key, are refused at once with 503 \`server_busy\` or 429). verify posts the protected file.`,
    '',
    ...head(['call', 'file', 'connections', 'calls/s', 'p50 ms', 'p99 ms', 'server CPU ms per call', 'in process ms', 'cores: server / client / other']),
    ...r.runs.map((e) =>
      row([e.op, e.image, e.connections, f(e.rps, 0), ms(e.p50Ms), ms(e.p99Ms), e.cpu ? ms(e.cpu.serverCpuMsPerRequest) : '–', ms(e.inProcess.medianMs), e.cpu ? `${f(e.cpu.serverCores, 2)} / ${f(e.cpu.clientCores, 2)} / ${f(e.cpu.otherCores, 2)}` : '–']),
    ),
    '',
    `Server memory: ${f(r.serverMemory.afterStart?.rssMb ?? Number.NaN, 0)} MB after start, peak ${f(r.serverMemory.afterRuns?.peakRssMb ?? Number.NaN, 0)} MB over these runs, reached with 64 calls of 5 MB in flight at once: each holds its upload, the marked file and its base64 answer. At the default admission no more than 32 calls are in flight per process; the memory under the largest uploads is measured below.`,
  ];
}

function scaleSection(r: ScaleResults | undefined): string[] {
  if (!r) return ['_Not run: `npm run bench:scale`._'];
  const label = new Map(r.setUps.map((s) => [s.id, s.label]));
  const p = r.parallelism;
  return [
    `Measured ${r.date.slice(0, 10)} with \`npm run bench:scale\`: POST /api/v1/protect of a ${size(r.method.image.bytes)} JPEG on PostgreSQL ${r.environment.postgres.split(' ')[0]}, wrk straight at the server or through nginx ${r.environment.nginx} (docs/operations.md's configuration, request buffering on), ${r.method.durationSeconds} s per row. CPU per party from /proc: optmark (the primary and its workers, or the instances, summed), PostgreSQL's backends, nginx, wrk, and the whole machine.`,
    '',
    `**What this machine gives two busy processes**, measured in the same run: one CPU-bound loop (SHA-256 of 1 MiB) alone does ${f(p.alonePerCpuSecond, 0)} MiB per CPU-second; two at once do ${f(p.twoPerCpuSecond, 0)} each (efficiency ${x(p.efficiency)}) and ${x(p.rate)} the work per second together. No server scales past that here.`,
    '',
    ...head(['set-up', 'connections', 'calls/s', 'p50 ms', 'p99 ms', 'calls per optmark CPU-s', 'cores: optmark', 'PostgreSQL', 'nginx', 'wrk', 'whole machine']),
    ...r.rows.map((e) =>
      row([label.get(e.setUp) ?? e.setUp, e.connections, f(e.result.rps, 0), ms(e.result.p50Ms), ms(e.result.p99Ms), f(e.callsPerServerCpuSecond, 0), f(e.cpu.server / e.seconds, 2), f(e.cpu.postgres / e.seconds, 2), f(e.cpu.nginx / e.seconds, 2), f(e.cpu.wrk / e.seconds, 2), f(e.cpu.machine / e.seconds, 2)]),
    ),
    '',
    `Where optmark's CPU goes, per call, by thread (all its processes summed, from /proc; "main thread" is each process's event loop, "V8Worker" V8's garbage-collection and compiler helpers, "libuv-worker" Node's thread pool, "WorkerThread" the fingerprint and metadata pools), and PostgreSQL's CPU per call:`,
    '',
    ...threadTable(r),
  ];
}

function threadTable(r: ScaleResults): string[] {
  const label = new Map(r.setUps.map((s) => [s.id, s.label]));
  const threads = [...new Set(r.rows.flatMap((e) => Object.keys(e.msPerCallByThread ?? {})))];
  const byTotal = (name: string) => -r.rows.reduce((sum, e) => sum + (e.msPerCallByThread?.[name] ?? 0), 0);
  threads.sort((a, b) => byTotal(a) - byTotal(b));
  return [
    ...head(['set-up', 'connections', ...threads.map((t) => `${t} ms`), 'optmark ms', 'PostgreSQL ms']),
    ...r.rows.map((e) =>
      row([label.get(e.setUp) ?? e.setUp, e.connections, ...threads.map((t) => ms(e.msPerCallByThread?.[t] ?? 0)), ms((1000 * e.cpu.server) / e.result.requests), ms((1000 * e.cpu.postgres) / e.result.requests)]),
    ),
  ];
}

function rssSection(r: RssResults | undefined): string[] {
  if (!r) return ['_Not run: `npm run bench:rss`._'];
  return [
    `Measured ${r.date.slice(0, 10)} with \`npm run bench:rss\`: one \`optmark serve\` as \`npm start\` runs it (the embedded database in the same process), 8 calls at once, three rounds per row, the process's peak resident memory (VmHWM) read after each. ${f(r.startMb, 0)} MB after start.`,
    '',
    ...head(['call', 'format', 'upload', 'pixels', 'peak RSS so far MB', 'RSS after MB']),
    ...r.phases.map((e) => row([e.op, e.format, size(e.bytes), `${e.width}×${e.height}`, f(e.peakMb, 0), f(e.rssMb, 0)])),
  ];
}

function cliSection(r: CliResults | undefined): string[] {
  if (!r) return ['_Not run: `npm run bench:cli`._'];
  const { startup, folder } = r;
  return [
    `Measured ${r.date.slice(0, 10)} with \`npm run bench:cli\`: whole processes, as a person runs them.`,
    '',
    ...head(['what', 'wall', 'CPU']),
    row(['`node -e 0` (the floor)', `${ms(startup.nodeAlone.wallMs)} ms`, `${ms(startup.nodeAlone.cpuMs)} ms`]),
    row(['`optmark --help`, median of 20', `${ms(startup.help.wallMs)} ms`, `${ms(startup.help.cpuMs)} ms`]),
    row(['`optmark verify` of a 50 KB JPEG, median of 20', `${ms(startup.verifySmall.wallMs)} ms`, `${ms(startup.verifySmall.cpuMs)} ms`]),
    row([`ExifTool \`-stay_open\`, ${folder.files} × 5 MB JPEGs (fresh copies)`, `${f(folder.exiftool.wallMs / 1000, 2)} s`, `${f(folder.exiftool.cpuMs / 1000, 2)} s`]),
    row(['ExifTool start-up alone (`-ver`)', `${ms(folder.exiftoolStart.wallMs)} ms`, `${ms(folder.exiftoolStart.cpuMs)} ms`]),
    row([`\`optmark protect\` of the same ${folder.files} files, one process`, `${f(folder.optmark.wallMs / 1000, 2)} s`, `${f(folder.optmark.cpuMs / 1000, 2)} s`]),
    '',
    `optmark against ExifTool on the folder: ${x(folder.ratio)} faster (wall).`,
  ];
}

/** Why a missed target is missed: the bound, in numbers from the same run. */
function bounds(files: InProcessResults | undefined, scale: ScaleResults | undefined, cli: CliResults | undefined): string[] {
  const out: string[] = [];
  if (cli && cli.folder.ratio < 2) {
    const sha = files?.results.find((e) => e.name === 'jpeg-5mb')?.sha256Ms;
    out.push(
      `- **The command line on a folder.** \`optmark protect\` of ${cli.folder.files} files of 5 MB took ${f(cli.folder.optmark.wallMs, 0)} ms (${f(cli.folder.optmark.cpuMs, 0)} ms of CPU) against ExifTool's ${f(cli.folder.exiftool.wallMs, 0)} ms (${f(cli.folder.exiftool.cpuMs, 0)} ms of CPU): ${x(cli.folder.ratio)}, where 2× needs ${f(cli.folder.exiftool.wallMs / 2, 0)} ms. The signed copy needs one SHA-256 pass over every input (the content digest${sha ? `, ${f((cli.folder.files * sha) / 1000, 2)} s for these files by the figures above` : ''}) which ExifTool does not make, Node's start, and the kernel's time to write 300 MB of new files; [docs/client.md](client.md#speed) breaks it down.`,
    );
  }
  const jpeg5 = files?.results.find((e) => e.name === 'jpeg-5mb');
  const jpeg100 = files?.results.find((e) => e.name === 'jpeg-100kb');
  if (jpeg5 && (jpeg5.protectSignedMs / jpeg5.sha256Ms > 1.3 || jpeg5.exiftoolMs / jpeg5.protectSignedMs < 4)) {
    const signed = jpeg5.protectSignedMs / jpeg5.sha256Ms;
    out.push(
      `- **Signed protect against one SHA-256.** The provenance tag signs the content digest (one SHA-256 pass over the file without its XMP), and the tag is written into the output, whose SHA-256 the answer carries: the second hash cannot start before the first has ended, so two passes run one after the other whatever the number of threads, and ${x(2)} is the floor. The ${x(1.3)} target with the hashes on two threads assumed two independent passes; it cannot be met without changing what the tag signs (docs/provenance.md). On the 5 MB JPEG: ${ms(jpeg5.protectSignedMs)} ms = ${x(signed)} one SHA-256 (${ms(jpeg5.sha256Ms)} ms); the two passes take ${ms(2 * jpeg5.sha256Ms)} ms, the rest (${ms(jpeg5.protectSignedMs - 2 * jpeg5.sha256Ms)} ms, ${x((jpeg5.protectSignedMs - 2 * jpeg5.sha256Ms) / jpeg5.sha256Ms)} of one SHA-256) is writing the output (a copy of the file into a new buffer alone takes ${ms(jpeg5.copyMs)} ms here), reading and writing the XMP (the editor's few kilobytes of it cost about what protect of the 100 KB JPEG costs whole: ${ms(jpeg100?.protectMs ?? Number.NaN)} ms), and the Ed25519 signature (about 0.05 ms). Within ${x(2.1)} that rest would have to fit in ${ms(0.1 * jpeg5.sha256Ms)} ms, less than the copy and the XMP together.`,
      `- **Against ExifTool.** ExifTool's batch writes the 5 MB JPEG in ${ms(jpeg5.exiftoolMs)} ms, so ${x(4)} faster means ${ms(jpeg5.exiftoolMs / 4)} ms, and the two SHA-256 passes the signed protect must make alone take ${ms(2 * jpeg5.sha256Ms)} ms: ${jpeg5.exiftoolMs / 4 < 2 * jpeg5.sha256Ms ? 'out of reach on this machine whatever else is done' : 'within reach only if everything else costs almost nothing'}. Measured: ${ms(jpeg5.protectSignedMs)} ms (${x(jpeg5.exiftoolMs / jpeg5.protectSignedMs)}); ExifTool's own job (the field written, no hash, no signature) takes us ${ms(jpeg5.protectMs)} ms (${x(jpeg5.exiftoolMs / jpeg5.protectMs)}), and one ExifTool process per file ${ms(jpeg5.exiftoolProcessMs)} ms (${x(jpeg5.exiftoolProcessMs / jpeg5.protectSignedMs)} slower than the signed protect).`,
    );
  }
  if (scale) {
    const at = (id: string, connections = scale.method.judgedAt) => scale.rows.find((e) => e.setUp === id && e.connections === connections);
    const one = at('direct-1');
    const all = at('direct-all');
    const oneC1 = at('direct-1', 1);
    const allC1 = at('direct-all', 1);
    const behind1 = at('nginx-1');
    const behind3 = at('nginx-3');
    const behind1C1 = at('nginx-1', 1);
    const behind3C1 = at('nginx-3', 1);
    const perCall = (e: ScaleResults['rows'][number], what: keyof ScaleResults['rows'][number]['cpu']) => (1000 * e.cpu[what]) / e.result.requests;
    const optmarkMs = (e: ScaleResults['rows'][number]) => perCall(e, 'server');
    const cores = scale.environment.cpus;
    if (one && all && oneC1 && allC1 && (all.result.rps / one.result.rps < 1.3 || all.callsPerServerCpuSecond / one.callsPerServerCpuSecond < 0.85)) {
      const machineMs = perCall(one, 'machine');
      const ceiling = (1000 * cores) / machineMs;
      out.push(
        `- **Workers, the rate.** With one worker at ${scale.method.judgedAt} connections the machine spends ${ms(machineMs)} ms of CPU per call in all (optmark ${ms(optmarkMs(one))}, PostgreSQL ${ms(perCall(one, 'postgres'))}, wrk ${ms(perCall(one, 'wrk'))}) and is ${f(one.cpu.machine / one.seconds, 2)} of ${cores} cores busy. At that cost ${cores} cores give at most ${f(ceiling, 0)} calls/s, ${x(ceiling / one.result.rps)} the one worker's ${f(one.result.rps, 0)}: ${ceiling / one.result.rps < 1.3 ? `1.3× cannot be reached here, whatever the workers do, because the database and the load generator share the two cores; on a machine with cores to spare beyond them it can` : 'the rest of the gap is the efficiency below'}.`,
        `- **Workers, the efficiency.** A worker's own upkeep is not where the CPU goes: ${scale.idleCores?.['direct-all'] === undefined ? '(idle CPU not measured)' : `with no calls at all, the ${cores} workers use ${f(scale.idleCores['direct-all'], 3)} of a core together`}, and unloaded (1 connection) a call costs optmark ${ms(optmarkMs(oneC1))} ms with one worker and ${ms(optmarkMs(allC1))} ms with ${cores}. At ${scale.method.judgedAt} connections, with ${cores} workers the machine is saturated (${f(all.cpu.machine / all.seconds, 2)} of ${cores} cores), and every party pays more per call: optmark ${ms(optmarkMs(one))} → ${ms(optmarkMs(all))} ms (its event loops ${ms(one.msPerCallByThread['main thread'] ?? Number.NaN)} → ${ms(all.msPerCallByThread['main thread'] ?? Number.NaN)}, V8's helper threads ${ms(one.msPerCallByThread.V8Worker ?? Number.NaN)} → ${ms(all.msPerCallByThread.V8Worker ?? Number.NaN)}), and PostgreSQL, which runs none of our code, ${ms(perCall(one, 'postgres'))} → ${ms(perCall(all, 'postgres'))} ms. More runnable threads than cores means preemption and cold caches for all of them; with nothing else running, the same machine keeps two busy processes at ${x(scale.parallelism.efficiency)} of one's work per CPU-second (the SHA-256 loop above). One worker also serves more calls per wake-up of its event loop than each of two does, which lowers its cost per call as its load grows (${ms(optmarkMs(oneC1))} ms at 1 connection, ${ms(optmarkMs(one))} ms at ${scale.method.judgedAt}).`,
      );
    }
    if (behind1 && behind3 && behind1C1 && behind3C1 && behind3.callsPerServerCpuSecond / behind1.callsPerServerCpuSecond < 0.8) {
      out.push(
        `- **Three instances behind nginx.** Each instance sees a third of the calls: its JIT warms up on a third of them and each of three heaps is collected on its own. Per call, unloaded: ${ms(optmarkMs(behind1C1))} ms for one instance, ${ms(optmarkMs(behind3C1))} ms for three (V8's helper threads ${ms(behind1C1.msPerCallByThread.V8Worker ?? Number.NaN)} → ${ms(behind3C1.msPerCallByThread.V8Worker ?? Number.NaN)} ms); at ${scale.method.judgedAt} connections ${ms(optmarkMs(behind1))} → ${ms(optmarkMs(behind3))} ms, on a machine then saturated (${f(behind3.cpu.machine / behind3.seconds, 2)} of ${cores} cores, nginx ${f(behind3.cpu.nginx / behind3.seconds, 2)} of them). Three instances on two cores are for availability (faults: one killed, a rolling restart), not speed; each belongs on a machine of its own.`,
      );
    }
  }
  return out;
}

/** Why the memory target is missed, when it is: where the peak comes from, in the run's own figures. */
function rssBound(r: RssResults | undefined): string[] {
  if (!r || r.target.pass) return [];
  let before = r.startMb;
  let worst = { phase: r.phases[0]!, added: 0 };
  for (const phase of r.phases) {
    if (phase.peakMb - before > worst.added) worst = { phase, added: phase.peakMb - before };
    before = Math.max(before, phase.peakMb);
  }
  return [
    `- **Memory.** The peak, ${f(r.peakMb, 0)} MB, is ${f(r.peakMb - r.limitMb, 0)} MB over the limit. Of it, ${f(r.startMb, 0)} MB is the server before any call (the embedded database's WebAssembly heap among it), and the largest step came with ${worst.phase.op} of ${worst.phase.format} (${f(worst.added, 0)} MB over the peak before it, ${f(worst.added / 8, 0)} MB a call). Between phases the resident size stays near its peak (${r.phases.map((p) => f(p.rssMb, 0)).join(', ')} MB after each): the allocator keeps freed memory for the next calls (the setting \`npm start\` uses, docs/operations.md), so each phase starts from the last one's high-water mark rather than from the start.`,
  ];
}

function main(): void {
  const files = read<InProcessResults>('bench-results.json');
  const http = read<HttpResults>('bench-http.json');
  const scale = read<ScaleResults>('bench-scale.json');
  const rss = read<RssResults>('bench-rss.json');
  const cli = read<CliResults>('bench-cli.json');
  const targets: Target[] = [...(files?.targets ?? []), ...(http ? [http.target] : []), ...(scale?.targets ?? []), ...(rss ? [rss.target] : []), ...(cli?.targets ?? [])];
  const missed = targets.filter((t) => !t.pass);
  const sections: ReadonlyArray<readonly [string, readonly string[]]> = [
    ['Files in process', inProcessSection(files)],
    ['HTTP, one process', httpSection(http)],
    ['HTTP, all cores and several instances', scaleSection(scale)],
    ['Memory under 8 concurrent 25 MB uploads', rssSection(rss)],
    ['The command line', cliSection(cli)],
  ];
  const lines = [
    '# Benchmarks',
    '',
    '<!-- Written by `npm run bench` (bench/page.ts) from the results of its parts; edit the generator, not this file. -->',
    '',
    `What one machine does with optmark, measured in one run of \`npm run bench\` (${new Date().toISOString().slice(0, 10)}). Every figure comes with the command that reproduces it; each part also runs alone (\`npm run bench:files\`, \`bench:http\`, \`bench:scale\`, \`bench:rss\`, \`bench:cli\`), and \`npm run bench:page\` rewrites this page from the results in \`.bench-tmp/\`. Milliseconds depend on the machine and on what else runs on it; the ratios, each against a baseline measured in the same run, travel better.`,
    '',
    ...machine(),
    '',
    '## Targets',
    '',
    ...targets.map((t) => `- ${verdict(t)}`),
    '',
    ...(missed.length > 0 ? ['### What bounds the missed targets', '', ...bounds(files, scale, cli), ...rssBound(rss), ''] : []),
    ...sections.flatMap(([title, body]) => [`## ${title}`, '', ...body, '']),
  ];
  writeFileSync(PAGE, lines.join('\n'));
  process.stdout.write(`wrote ${PAGE} (${targets.length} targets, ${missed.length} missed)\n`);
}

main();
