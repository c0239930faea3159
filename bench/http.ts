/**
 * `npm run bench:http` (and the second half of `npm run bench`): the HTTP API
 * under load. The real server runs in a child process (`node bin/optmark.js
 * serve`, fresh embedded database, warn-level logs); wrk posts a prebuilt
 * multipart body to /api/v1/protect and /api/v1/verify with a ~100 KB and a
 * ~5 MB JPEG at 1, 4 and 16 connections. Next to each result: the in-process
 * cost of the same call, and the HTTP overhead at one connection.
 *
 * A report, not a test: a missed target prints FAIL loudly but exits 0 (as
 * bench/run.ts does); a non-2xx response or a socket error exits 1, since it
 * makes the numbers meaningless. When the target is missed (or with
 * BENCH_HTTP_PROFILE=always) a second server runs with --cpu-prof during a
 * protect run at 4 connections and the top self-time functions are printed.
 * Results go to .bench-tmp/bench-http.json.
 *
 * Settings (environment): BENCH_HTTP_DURATION seconds per run (default 8),
 * BENCH_HTTP_WARMUP seconds (default 2), BENCH_HTTP_PROFILE auto|always|never,
 * BENCH_HTTP_CLIENT=autocannon to force the fallback load generator.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { createProvenance, protect, SigningKeys, verify, type Provenance } from '../src/index.js';
import { cpuSnapshot, cpuUse, type CpuUse } from './cpu-usage.js';
import { formatProfile, summariseProfile, type ProfileSummary } from './cpuprofile.js';
import { httpImages, type HttpImage } from './http-images.js';
import { chooseLoadTool, killAllLoad, runLoad, type LoadResult, type LoadTool } from './http-load.js';
import { ensureBuilt, ensureTemplate, killAllServers, startBenchServer, type BenchServer, type Memory } from './http-server.js';
import { targetLine, type Target } from './report.js';
import { measureInterleaved } from './timing.js';

const runStarted = performance.now();
const ROOT = join(import.meta.dirname, '..');
const TMP = join(ROOT, '.bench-tmp');
const WORK = join(TMP, 'http');
const RESULTS = join(TMP, 'bench-http.json');

const DURATION_S = Number(process.env.BENCH_HTTP_DURATION ?? 8);
const WARMUP_S = Number(process.env.BENCH_HTTP_WARMUP ?? 2);
const PROFILE = process.env.BENCH_HTTP_PROFILE ?? 'auto';
const CONCURRENCY = [1, 4, 16, 64] as const;
const OPS = ['protect', 'verify'] as const;
type Op = (typeof OPS)[number];
/** A request slower than this is a wrk timeout error (a 5 MB protect at 16 connections takes a while). */
const REQUEST_TIMEOUT_S = 30;
const TARGET = { op: 'protect' as Op, image: 'jpeg-100kb', connections: 4, rps: 500 };
const BOUNDARY = '----optmark-bench-3f9c2e71d5a8';
const FILENAME = 'bench.jpg';
/**
 * One key ring for the server and this process, so that the in-process
 * numbers include signing and checking the provenance tag, as the routes do.
 */
const SIGNING_KEYS = join(WORK, 'signing-keys.json');
const SERVER_ENV = {
  OPTMARK_SIGNING_KEYS: SIGNING_KEYS,
  OPTMARK_LOG_LEVEL: 'warn',
  OPTMARK_PROTECT_LIMIT: '100000000',
  OPTMARK_VERIFY_LIMIT: '100000000',
  // One key drives up to 64 connections, past the default admission (32 calls
  // in flight per process, 8 per key): measure throughput, not admission.
  OPTMARK_MAX_IN_FLIGHT: '128',
  OPTMARK_MAX_IN_FLIGHT_PER_KEY: '128',
  // verify decodes pixels (the fingerprint): at c=16 and more, more calls wait
  // for a decode than the default queue of 8 lets wait, and the server sheds
  // them with 503 server_busy, as it should; here throughput is measured, not shedding.
  OPTMARK_DECODE_QUEUE: '128',
  OPTMARK_FINGERPRINT_QUEUE: '128',
};

const log = (line = '') => process.stdout.write(`${line}\n`);
const loud = (text: string) => (process.stdout.isTTY ? `\x1b[1;31m${text}\x1b[0m` : text);

interface InProcess {
  readonly medianMs: number;
  readonly runs: number;
  /** 1000 / median: the calls per second one core manages on the work alone. */
  readonly opsPerSecond: number;
}

interface Case {
  readonly image: HttpImage;
  readonly op: Op;
  /** The bytes posted: the original for protect, the protected file for verify (there is an opt-out to find). */
  readonly upload: Buffer;
  readonly bodyPath: string;
  readonly inProcess: InProcess;
}

interface RunRow {
  readonly op: Op;
  readonly image: string;
  readonly uploadBytes: number;
  readonly result: LoadResult;
  readonly inProcess: InProcess;
  /** HTTP time per request at one connection (1000 / req/s) over the in-process median; c=1 rows only. */
  readonly httpOverIn: number | undefined;
  /** CPU use over the run by the server, the client and everything else (Linux only). */
  readonly cpu: CpuUse | undefined;
}

function multipartBody(bytes: Buffer): Buffer {
  const head = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="${FILENAME}"\r\nContent-Type: image/jpeg\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  if (bytes.includes(`--${BOUNDARY}`)) throw new Error('the image contains the multipart boundary');
  return Buffer.concat([head, bytes, tail]);
}

/** One request with the exact body the load generator sends. */
function post(server: BenchServer, key: string, op: Op, body: Buffer): Promise<Response> {
  return fetch(`${server.url}/api/v1/${op}`, {
    method: 'POST',
    headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, authorization: `Bearer ${key}` },
    body,
  });
}

let keyRing: Provenance | undefined;
/** Signing and checking with the benchmark's key ring (created fresh on first use). */
function provenance(): Provenance {
  keyRing ??= createProvenance({ keys: SigningKeys.open(SIGNING_KEYS), issuer: () => 'http://127.0.0.1', clock: { now: () => new Date() } });
  return keyRing;
}

/** One request checked for content, before any load. */
async function sanityCheck(server: BenchServer, key: string, c: Case, body: Buffer): Promise<void> {
  const response = await post(server, key, c.op, body);
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${c.op} ${c.image.name}: HTTP ${response.status}: ${text.slice(0, 500)}`);
  const json = JSON.parse(text) as { imageBase64?: string; sha256?: string; optedOut?: boolean; provenance?: { valid?: boolean } };
  if (c.op === 'protect') {
    // The tag's signing time differs from an in-process run, so the bytes cannot be compared.
    // Instead: our key's tag is valid on the server's output, and protect() in process finds
    // nothing left to do on it (same value, valid tag), which holds only if the file is what it would write.
    const got = Buffer.from(json.imageBase64 ?? '', 'base64');
    const again = protect(got, { filename: FILENAME, signer: provenance().signer });
    if (json.sha256 !== again.sha256 || again.changed || !verify(got, { provenance: provenance() }).provenance.valid) {
      throw new Error(`protect ${c.image.name}: the server's output is not what protect() in process would write`);
    }
  } else if (json.optedOut !== true || json.provenance?.valid !== true) {
    throw new Error(`verify ${c.image.name}: the server does not see the opt-out and a valid tag: ${text.slice(0, 300)}`);
  }
}

/** Any non-2xx or socket error voids the numbers: stop, with one sample response and the server's log. */
async function checkClean(r: LoadResult, what: string, server: BenchServer, probe: () => Promise<Response>): Promise<void> {
  if (r.non2xx === 0 && r.socketErrors === 0) return;
  let sample: string;
  try {
    const response = await probe();
    sample = `HTTP ${response.status} ${(await response.text()).slice(0, 300)}`;
  } catch (error) {
    sample = `request failed: ${(error as Error).message}`;
  }
  throw new Error(
    `${what}: ${r.non2xx} non-2xx responses and ${r.socketErrors} socket errors out of ${r.requests} requests; the numbers are void.\n` +
      `one more request now gets: ${sample}\nserver log (${server.logPath}):\n${server.logTail()}`,
  );
}

async function issueKey(server: BenchServer): Promise<string> {
  await server.cli(['accounts', 'create', '--name', 'bench', '--plan', 'pro', '--json']);
  const issued = await server.cli(['keys', 'issue', '--account', 'bench', '--json']);
  if (typeof issued.key !== 'string') throw new Error(`keys issue printed no key: ${JSON.stringify(issued)}`);
  return issued.key;
}

const fmt = (v: number, digits = 1) => (Number.isFinite(v) ? v.toFixed(digits) : '-');
const msCell = (v: number) => fmt(v, v < 10 ? 2 : 1);

function table(rows: readonly RunRow[]): string {
  const header = ['op', 'file', 'conc', 'thr', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'sock err', 'in-proc ms', 'in-proc op/s', 'http/in-proc @c1', 'req/s÷op/s', 'srv cpu ms/req', 'cores srv/client/other'];
  const cells = rows.map((r) => [
    r.op,
    r.image,
    String(r.result.connections),
    String(r.result.threads),
    fmt(r.result.rps),
    msCell(r.result.p50Ms),
    msCell(r.result.p99Ms),
    String(r.result.non2xx),
    String(r.result.socketErrors),
    msCell(r.inProcess.medianMs),
    fmt(r.inProcess.opsPerSecond, 0),
    r.httpOverIn === undefined ? '' : `${r.httpOverIn.toFixed(2)}x`,
    `${fmt(r.result.rps / r.inProcess.opsPerSecond, 2)}`,
    r.cpu ? msCell((1000 * r.cpu.serverSeconds) / r.result.requests) : '-',
    r.cpu ? `${fmt(r.cpu.serverCores, 2)}/${fmt(r.cpu.clientCores, 2)}/${fmt(r.cpu.otherCores, 2)}` : '-',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]!.length)));
  const line = (row: readonly string[]) => row.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)].join('\n');
}

interface ProfileReport {
  readonly path: string;
  readonly run: LoadResult;
  readonly summary: ProfileSummary;
}

/** A second server with --cpu-prof, the target's run (after a warm-up), and the profile summarised over that run. */
async function profileRun(tool: LoadTool, template: string, c: Case): Promise<ProfileReport> {
  const dir = join(WORK, 'profile');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const server = await startBenchServer({
    root: ROOT,
    template,
    dataDir: join(WORK, 'data-profile'),
    logPath: join(WORK, 'server-profile.log'),
    env: SERVER_ENV,
    nodeArgs: ['--cpu-prof', '--cpu-prof-dir', dir, '--cpu-prof-name', 'server.cpuprofile'],
  });
  let run: LoadResult;
  let window: { startUs: number; endUs: number };
  try {
    const key = await issueKey(server);
    const base = { url: `${server.url}/api/v1/${c.op}`, bodyPath: c.bodyPath, boundary: BOUNDARY, key, timeoutS: REQUEST_TIMEOUT_S, connections: TARGET.connections };
    const probe = () => post(server, key, c.op, readFileSync(c.bodyPath));
    await checkClean(await runLoad(tool, { ...base, durationS: WARMUP_S }, WORK), 'profile warm-up', server, probe);
    const startUs = Number(process.hrtime.bigint() / 1000n);
    run = await runLoad(tool, { ...base, durationS: DURATION_S }, WORK);
    window = { startUs, endUs: Number(process.hrtime.bigint() / 1000n) };
    await checkClean(run, 'profiled run', server, probe);
  } finally {
    await server.stop(); // the profile is written as the process exits
    rmSync(server.dataDir, { recursive: true, force: true });
  }
  const path = join(dir, 'server.cpuprofile');
  if (!existsSync(path)) throw new Error(`the server exited without writing ${path}`);
  return { path, run, summary: summariseProfile(path, ROOT, window) };
}

async function main(): Promise<number> {
  const loadAtStart = os.loadavg();
  log('optmark HTTP benchmark: the real server in a child process under load (wrk), next to protect/verify in process');
  ensureBuilt(ROOT, log);
  mkdirSync(WORK, { recursive: true });
  const { tool, notes } = await chooseLoadTool(log);
  for (const note of notes) log(note.startsWith('FALLBACK') ? loud(note) : note);

  log('preparing images (cached in .bench-tmp/http/) ...');
  const images = await httpImages(WORK, log);
  const template = ensureTemplate(ROOT, WORK, log);

  // In process first, with the server not yet running: the same calls the routes make.
  rmSync(SIGNING_KEYS, { force: true });
  const { signer } = provenance();
  const cases: Case[] = [];
  for (const image of images) {
    const protectedBytes = Buffer.from(protect(image.bytes, { filename: FILENAME, signer }).bytes);
    const checked = verify(protectedBytes, { provenance: provenance() });
    if (!checked.optedOut || !checked.provenance.valid) throw new Error(`${image.name}: protect output does not verify as opted out with a valid tag`);
    const m = measureInterleaved({
      protect: () => protect(image.bytes, { filename: FILENAME, signer }),
      verify: () => verify(protectedBytes, { provenance: provenance() }),
    });
    for (const op of OPS) {
      const upload = op === 'protect' ? image.bytes : protectedBytes;
      const bodyPath = join(WORK, `body-${image.name}-${op}.bin`);
      writeFileSync(bodyPath, multipartBody(upload));
      cases.push({ image, op, upload, bodyPath, inProcess: { medianMs: m[op].medianMs, runs: m[op].runs, opsPerSecond: 1000 / m[op].medianMs } });
    }
  }
  const cpus = os.cpus();
  log(
    `node ${process.version}, ${tool}, ${cpus[0]?.model ?? 'unknown CPU'} x${cpus.length}, ` +
      `load average at start ${loadAtStart.map((v) => v.toFixed(2)).join(' ')}`,
  );
  log(`images: ${images.map((i) => `${i.name} ${i.width}x${i.height} ${(i.bytes.length / 1024).toFixed(0)} KB`).join(', ')}`);
  log(`runs: ${WARMUP_S} s warm-up at c=4 per op and file, then ${DURATION_S} s at c=${CONCURRENCY.join(', ')} (${tool === 'wrk' ? 'wrk threads = min(2, c)' : 'autocannon in this process'})`);

  const server = await startBenchServer({ root: ROOT, template, dataDir: join(WORK, 'data'), logPath: join(WORK, 'server.log'), env: SERVER_ENV });
  const rows: RunRow[] = [];
  let bootMemory: Memory | undefined;
  let endMemory: Memory | undefined;
  const usageCheck: Record<Op, { completed: number; inFlightBound: number; used: number }> = {
    protect: { completed: 0, inFlightBound: 0, used: 0 },
    verify: { completed: 0, inFlightBound: 0, used: 0 },
  };
  try {
    bootMemory = server.memory();
    log(`server pid ${server.pid} at ${server.url}, RSS after start ${fmt(bootMemory?.rssMb ?? Number.NaN, 0)} MB`);
    const key = await issueKey(server);
    log('API key issued with: optmark accounts create --name bench --plan pro; optmark keys issue --account bench (through the admin socket)');
    log();
    for (const c of cases) {
      const body = multipartBody(c.upload);
      await sanityCheck(server, key, c, body);
      usageCheck[c.op].completed += 1;
      const base = { url: `${server.url}/api/v1/${c.op}`, bodyPath: c.bodyPath, boundary: BOUNDARY, key, timeoutS: REQUEST_TIMEOUT_S };
      const warm = await runLoad(tool, { ...base, connections: 4, durationS: WARMUP_S }, WORK);
      const probe = () => post(server, key, c.op, body);
      await checkClean(warm, `${c.op} ${c.image.name} warm-up`, server, probe);
      usageCheck[c.op].completed += warm.requests;
      usageCheck[c.op].inFlightBound += warm.connections;
      for (const connections of CONCURRENCY) {
        const before = cpuSnapshot(server.pid);
        const result = await runLoad(tool, { ...base, connections, durationS: DURATION_S }, WORK);
        const cpu = cpuUse(before, cpuSnapshot(server.pid));
        await checkClean(result, `${c.op} ${c.image.name} c=${connections}`, server, probe);
        usageCheck[c.op].completed += result.requests;
        usageCheck[c.op].inFlightBound += result.connections;
        const httpOverIn = connections === 1 ? 1000 / result.rps / c.inProcess.medianMs : undefined;
        rows.push({ op: c.op, image: c.image.name, uploadBytes: c.upload.length, result, inProcess: c.inProcess, httpOverIn, cpu });
        log(`  ${c.op} ${c.image.name} c=${connections}: ${fmt(result.rps)} req/s, p50 ${msCell(result.p50Ms)} ms, p99 ${msCell(result.p99Ms)} ms`);
      }
    }
    endMemory = server.memory();
    // Cross-check of the status counts: the server counts only 200 responses (others are refunded),
    // so every response wrk completed must be in the usage, plus at most the requests in flight when each run stopped.
    const usage = (await server.cli(['usage', '--account', 'bench', '--json'])) as Record<Op, { used: number }>;
    for (const op of OPS) {
      const u = usageCheck[op];
      u.used = usage[op].used;
      if (u.used < u.completed || u.used > u.completed + u.inFlightBound) {
        throw new Error(`${op}: the server counted ${u.used} successful calls, but ${tool} completed ${u.completed} (+ at most ${u.inFlightBound} in flight): some responses were not 200`);
      }
    }
  } finally {
    await server.stop();
    rmSync(server.dataDir, { recursive: true, force: true });
  }

  log();
  log(`load tool ${tool}; in-process = median of protect(bytes)/verify(bytes) in this process; op/s = 1000 / median (one core);`);
  log('http/in-proc @c1 = HTTP time per request at one connection (1000 / req/s) over the in-process median;');
  log('req/s÷op/s = the share of one core\'s pure-work rate the server delivers; srv cpu ms/req = server process CPU (all threads) per request;');
  log('cores = average cores used during the run by the server, the client (wrk + this process) and all other processes. verify posts the protected file.');
  log();
  log(table(rows));
  log();
  log(
    `server RSS: ${fmt(bootMemory?.rssMb ?? Number.NaN, 0)} MB after start, ${fmt(endMemory?.rssMb ?? Number.NaN, 0)} MB after the runs (peak ${fmt(endMemory?.peakRssMb ?? Number.NaN, 0)} MB)`,
  );
  log(`status cross-check (server usage count vs ${tool}): ${OPS.map((op) => `${op} ${usageCheck[op].used} counted, ${usageCheck[op].completed} completed`).join('; ')}: OK, all responses 200`);

  const busiest = Math.max(...rows.map((r) => r.cpu?.otherCores ?? 0));
  if (busiest > 0.25) {
    log(loud(`note: other processes used up to ${busiest.toFixed(2)} of the ${cpus.length} cores during some runs (see the last column): those rows are lower than on an idle machine`));
  }
  const targetRow = rows.find((r) => r.op === TARGET.op && r.image === TARGET.image && r.result.connections === TARGET.connections)!;
  const target: Target = {
    name: `protect(100 KB JPEG) over HTTP at concurrency ${TARGET.connections} >= ${TARGET.rps} req/s on this ${cpus.length}-core machine`,
    pass: targetRow.result.rps >= TARGET.rps,
    detail:
      `${fmt(targetRow.result.rps)} req/s (need ${TARGET.rps}); p50 ${msCell(targetRow.result.p50Ms)} ms, p99 ${msCell(targetRow.result.p99Ms)} ms; ` +
      `in process ${msCell(targetRow.inProcess.medianMs)} ms = ${fmt(targetRow.inProcess.opsPerSecond, 0)} op/s on one core` +
      (targetRow.cpu ? `; server ${msCell((1000 * targetRow.cpu.serverSeconds) / targetRow.result.requests)} ms CPU per request, other processes ${fmt(targetRow.cpu.otherCores, 2)} cores` : ''),
  };
  log(targetLine(target, process.stdout.isTTY));

  let profile: ProfileReport | undefined;
  if (PROFILE === 'always' || (PROFILE === 'auto' && !target.pass)) {
    log();
    log(`profiling: a second server with --cpu-prof, ${WARMUP_S} s warm-up, then ${DURATION_S} s of protect ${TARGET.image} at c=${TARGET.connections} ...`);
    const c = cases.find((x) => x.op === TARGET.op && x.image.name === TARGET.image)!;
    profile = await profileRun(tool, template, c);
    log(`profiled run: ${fmt(profile.run.rps)} req/s (the profiler costs some), profile in ${profile.path}`);
    const s = profile.summary;
    const perRequest = (ms: number) => ms / profile!.run.requests;
    const pglite = s.packagesInclusive.find((r) => r.name === '@electric-sql/pglite');
    const inProc = c.inProcess.medianMs;
    log(
      `main-thread CPU per request: ${msCell(perRequest(s.busyMs))} ms (busy ${fmt((100 * s.busyMs) / s.totalMs, 0)}% of the run), against ${msCell(inProc)} ms for protect() in process; ` +
        `PGlite (the quota reserve + commit queries) ${msCell(perRequest(pglite?.ms ?? 0))} ms of it`,
    );
    log();
    log(formatProfile(s));
  }

  const totalSeconds = (performance.now() - runStarted) / 1000;
  writeFileSync(
    RESULTS,
    `${JSON.stringify(
      {
        date: new Date().toISOString(),
        environment: { node: process.version, cpu: cpus[0]?.model, cpus: cpus.length, platform: `${os.platform()} ${os.release()}`, loadAverageAtStart: loadAtStart, loadTool: tool, notes },
        method: {
          server: 'node bin/optmark.js serve in a child process, fresh PGlite data dir, OPTMARK_LOG_LEVEL=warn',
          serverEnv: SERVER_ENV,
          warmupSeconds: WARMUP_S,
          durationSeconds: DURATION_S,
          concurrency: CONCURRENCY,
          threads: 'min(2, connections)',
          requestTimeoutSeconds: REQUEST_TIMEOUT_S,
          body: 'one multipart part "image" (filename bench.jpg); verify posts the protected file',
          inProcess: 'median of protect(bytes, {filename}) / verify(protected) interleaved in the benchmark process, warm-up 3, >= 15 runs and >= 1 s per op',
        },
        images: images.map((i) => ({ name: i.name, bytes: i.bytes.length, width: i.width, height: i.height })),
        runs: rows.map((r) => ({
          op: r.op,
          image: r.image,
          uploadBytes: r.uploadBytes,
          ...r.result,
          inProcess: r.inProcess,
          httpOverInProcessAtC1: r.httpOverIn,
          cpu: r.cpu && { ...r.cpu, serverCpuMsPerRequest: (1000 * r.cpu.serverSeconds) / r.result.requests },
        })),
        statusCrossCheck: usageCheck,
        serverMemory: { afterStart: bootMemory, afterRuns: endMemory },
        target,
        profile: profile && { path: profile.path, run: profile.run, summary: profile.summary },
        totalSeconds,
      },
      null,
      2,
    )}\n`,
  );
  log();
  log(`results written to ${RESULTS}`);
  log(`total run time ${totalSeconds.toFixed(1)} s`);
  return 0;
}

const onSignal = (signal: NodeJS.Signals) => {
  killAllLoad();
  killAllServers();
  process.stderr.write(`\ninterrupted by ${signal}; stopped the server and the load generator\n`);
  process.exit(130);
};
process.once('SIGINT', onSignal);
process.once('SIGTERM', onSignal);

try {
  process.exitCode = await main();
} catch (error) {
  killAllLoad();
  killAllServers();
  process.stderr.write(`${loud(`HTTP BENCHMARK FAILED: ${(error as Error).message}`)}\n`);
  process.exitCode = 1;
}
