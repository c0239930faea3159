/**
 * `npm run bench:scale` (and part of `npm run bench`): the HTTP API on
 * PostgreSQL as a deployment runs it, with Debian's wrk (a C client, one
 * thread per connection up to two, so it does not take a core from the
 * server the way a Node client would) posting POST /api/v1/protect of the
 * ~100 KB JPEG at concurrency 1, 4, 16 and 64, in four set-ups of one run:
 *
 *   - one `optmark serve --workers 1`, wrk straight at it;
 *   - one `optmark serve --workers N` (N = this machine's cores);
 *   - nginx (Debian's package, docs/operations.md's configuration) in front
 *     of one `optmark serve --workers 1`;
 *   - nginx in front of three of them (one PostgreSQL, shared key files).
 *
 * Per run: calls per second, p50/p99, and the CPU time of every party from
 * /proc: the optmark processes (primary and workers summed), PostgreSQL's
 * backends, nginx, wrk; hence calls per server CPU-second, the efficiency
 * the issue "Scale" judges (this machine's two cores are shared with the
 * client, the database and the proxy, so the rate alone says little).
 * Targets, at concurrency 16: N workers >= 0.85x the calls per server
 * CPU-second of one worker and >= 1.3x its rate; three instances behind
 * nginx >= 0.8x the calls per server CPU-second of one behind nginx.
 * Results go to .bench-tmp/bench-scale.json.
 *
 * Settings: BENCH_PG_URL (an administrative connection, default the local
 * PostgreSQL), BENCH_SCALE_SECONDS per run (default 8), BENCH_SCALE_WARMUP (3).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { machineCpuSeconds, processTree, procStat, procTimes, treeCpuSeconds } from './cpu-usage.js';
import { httpImages } from './http-images.js';
import { chooseLoadTool, killAllLoad, runLoad, type LoadResult } from './http-load.js';
import { ensureBuilt } from './http-server.js';
import { targetLine, type Target } from './report.js';
import { cleanupAll, onCleanup } from './stress/support/cleanup.js';
import { freePort, sleep } from './stress/support/net.js';
import { ensureNginx, Nginx } from './stress/support/nginx.js';

const ROOT = join(import.meta.dirname, '..');
const WORK = join(ROOT, '.bench-tmp', 'scale');
const RESULTS = join(ROOT, '.bench-tmp', 'bench-scale.json');
const BOUNDARY = 'optmark-bench-scale-boundary';
const ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DURATION_S = Number(process.env.BENCH_SCALE_SECONDS ?? 8);
const WARMUP_S = Number(process.env.BENCH_SCALE_WARMUP ?? 3);
export const SCALE_CONCURRENCY = [1, 4, 16, 64] as const;
/** The concurrency the targets are judged at: enough to keep every worker busy, short of queueing. */
export const JUDGED_AT = 16;
/** Seconds each set-up is watched idle, after its start and before any call. */
const IDLE_S = 5;
const CORES = os.cpus().length;
const log = (line = '') => process.stdout.write(`${line}\n`);

export interface SetUp {
  readonly id: 'direct-1' | 'direct-all' | 'nginx-1' | 'nginx-3';
  readonly label: string;
  readonly instances: number;
  readonly workers: number;
  readonly nginx: boolean;
}

const SET_UPS: readonly SetUp[] = [
  { id: 'direct-1', label: 'one process (--workers 1)', instances: 1, workers: 1, nginx: false },
  { id: 'direct-all', label: `all cores (--workers ${CORES})`, instances: 1, workers: CORES, nginx: false },
  { id: 'nginx-1', label: 'nginx, 1 instance (--workers 1)', instances: 1, workers: 1, nginx: true },
  { id: 'nginx-3', label: 'nginx, 3 instances (--workers 1 each)', instances: 3, workers: 1, nginx: true },
];

export interface ScaleRow {
  readonly setUp: SetUp['id'];
  readonly connections: number;
  readonly result: LoadResult;
  readonly seconds: number;
  /** CPU seconds during the run: the optmark processes, PostgreSQL, nginx, wrk, and the whole machine (everything, other work included). */
  readonly cpu: { readonly server: number; readonly postgres: number; readonly nginx: number; readonly wrk: number; readonly machine: number };
  readonly callsPerServerCpuSecond: number;
  /** The optmark processes' CPU milliseconds per call, by thread (main thread, V8Worker, libuv-worker, ...). */
  readonly msPerCallByThread: Record<string, number>;
}

/** CPU seconds of every process whose command name starts with `name` (PostgreSQL's backends, nginx's workers, wrk). */
function cpuOf(name: string): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = procStat(`/proc/${entry}/stat`);
      if (stat.name.startsWith(name)) total += stat.cpuSeconds;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

/**
 * CPU seconds of a process tree's threads by thread name ("node" is the main
 * thread of each process, "V8Worker" V8's garbage-collection and compiler
 * helpers, "libuv-worker" the thread pool, "WorkerThread" the fingerprint
 * and metadata pools): where the server's CPU goes, per call.
 */
function threadCpu(pids: readonly number[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const pid of processTree(pids)) {
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const task of tasks) {
      try {
        const stat = procStat(`/proc/${pid}/task/${task}/stat`);
        const name = task === String(pid) ? 'main thread' : stat.name.replace(/\d+$/, '');
        out[name] = (out[name] ?? 0) + stat.cpuSeconds;
      } catch {
        // gone meanwhile
      }
    }
  }
  return out;
}

/** CPU seconds of this process's waited-for children: wrk, once a run has ended. */
const childrenCpu = (): number => procTimes('self').children;

/**
 * What this machine gives two busy processes: the same CPU-bound loop
 * (SHA-256 of 1 MiB, over and over) alone and then in two processes at once,
 * as work per CPU-second. On two independent cores both stay near 1; where
 * the virtual CPUs share a physical core or the host is oversubscribed, each
 * does less per CPU-second, and no server can scale past that.
 */
export interface Parallelism {
  readonly alonePerCpuSecond: number;
  readonly twoPerCpuSecond: number;
  /** twoPerCpuSecond / alonePerCpuSecond. */
  readonly efficiency: number;
  /** Work per second of the two together over the one alone. */
  readonly rate: number;
}

const SPIN = `const { createHash } = require('node:crypto');
const b = Buffer.alloc(1 << 20, 7);
const until = Date.now() + Number(process.argv[1]) * 1000;
let n = 0;
while (Date.now() < until) { createHash('sha256').update(b).digest(); n++; }
const u = process.cpuUsage();
process.stdout.write(JSON.stringify({ n, cpu: (u.user + u.system) / 1e6 }));`;

async function spin(seconds: number, count: number): Promise<Array<{ n: number; cpu: number }>> {
  return Promise.all(
    Array.from({ length: count }, () => new Promise<{ n: number; cpu: number }>((resolve, reject) => {
      const child = spawn(process.execPath, ['-e', SPIN, String(seconds)], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as { n: number; cpu: number }) : reject(new Error(`the calibration loop exited ${code}`))));
    })),
  );
}

async function machineParallelism(seconds = 3): Promise<Parallelism> {
  const [alone] = await spin(seconds, 1);
  const two = await spin(seconds, 2);
  const alonePerCpuSecond = alone!.n / alone!.cpu;
  const twoPerCpuSecond = two.reduce((s, r) => s + r.n, 0) / two.reduce((s, r) => s + r.cpu, 0);
  return { alonePerCpuSecond, twoPerCpuSecond, efficiency: twoPerCpuSecond / alonePerCpuSecond, rate: two.reduce((s, r) => s + r.n, 0) / alone!.n };
}

interface Instance {
  readonly child: ChildProcess;
  readonly port: number;
  stop(): Promise<void>;
}

async function startInstance(env: NodeJS.ProcessEnv, index: number, workers: number): Promise<Instance> {
  const port = await freePort();
  const dataDir = join(WORK, `instance-${index}`);
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'optmark.js'), 'serve', '--workers', String(workers)], {
    env: { ...env, PORT: String(port), OPTMARK_DATA_DIR: dataDir },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const forget = onCleanup(`optmark instance ${index}`, () => child.kill('SIGKILL'));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (i > 300 || child.exitCode !== null) throw new Error(`instance ${index} did not start`);
    await sleep(100);
  }
  return {
    child,
    port,
    async stop() {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
      forget(false);
    },
  };
}

const version = (command: string, args: string[], pattern: RegExp): string => {
  const r = spawnSync(command, args, { encoding: 'utf8' });
  return pattern.exec(`${r.stdout}${r.stderr}`)?.[1] ?? 'unknown';
};

async function main(): Promise<void> {
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  ensureBuilt(ROOT, log);
  const { tool, notes } = await chooseLoadTool(log);
  if (tool !== 'wrk') throw new Error('this benchmark needs wrk (a Node client would take a core from the server)');
  ensureNginx(log);
  const [image] = await httpImages(join(ROOT, '.bench-tmp', 'http'), log);
  const bodyPath = join(WORK, 'body.bin');
  writeFileSync(
    bodyPath,
    Buffer.concat([Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="photo.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`), image!.bytes, Buffer.from(`\r\n--${BOUNDARY}--\r\n`)]),
  );

  const database = `optmark_bench_scale_${process.pid}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  const postgresVersion = String((await admin.query('show server_version')).rows[0]?.server_version ?? 'unknown');
  await admin.query(`drop database if exists ${database} with (force)`);
  await admin.query(`create database ${database}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${database}`;
  const keys = join(WORK, 'keys');
  mkdirSync(keys, { recursive: true, mode: 0o700 });
  const env: NodeJS.ProcessEnv = {
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(OPTMARK_|DATABASE_URL$|PORT$|HOST$)/.test(name))),
    DATABASE_URL: url.toString(),
    HOST: '127.0.0.1',
    OPTMARK_DATA_DIR: join(WORK, 'admin'),
    OPTMARK_SIGNING_KEYS: join(keys, 'signing-keys.json'),
    OPTMARK_FINGERPRINT_KEYS: join(keys, 'fingerprint-keys.json'),
    OPTMARK_LOG_LEVEL: 'warn',
    OPTMARK_PROTECT_LIMIT: '1000000000',
    // One key drives up to 64 connections, past the default admission (32 in
    // flight per process, 8 per key: more get 503 server_busy or 429): here
    // throughput is measured, not shedding.
    OPTMARK_MAX_IN_FLIGHT: '128',
    OPTMARK_MAX_IN_FLIGHT_PER_KEY: '128',
    OPTMARK_TRUST_PROXY: '127.0.0.1',
  };
  const cli = (args: string[]) => {
    const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'optmark.js'), ...args, '--json'], { env, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`optmark ${args.join(' ')}: ${r.stderr}`);
    return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
  };
  cli(['accounts', 'create', '--name', 'bench', '--plan', 'pro']);
  cli(['plans', 'set', 'pro', '--protect', '1000000000']);
  const key = String(cli(['keys', 'issue', '--account', 'bench']).key);

  const nginxVersion = version('nginx', ['-v'], /nginx\/(\S+)/);
  log(`scale: POST /api/v1/protect of a ${(image!.bytes.length / 1024).toFixed(0)} KB JPEG on PostgreSQL ${postgresVersion}; ${notes.join('; ')}; nginx ${nginxVersion}`);
  log(`machine: ${CORES} cores (${os.cpus()[0]?.model ?? 'unknown'}), Node ${process.version}; ${WARMUP_S} s warm-up, then ${DURATION_S} s per concurrency`);

  const parallelism = await machineParallelism();
  log(
    `machine parallelism: one SHA-256 loop ${parallelism.alonePerCpuSecond.toFixed(0)} MiB per CPU-second alone, ${parallelism.twoPerCpuSecond.toFixed(0)} with two at once ` +
      `(efficiency ${parallelism.efficiency.toFixed(2)}, rate ${parallelism.rate.toFixed(2)}x): the ceiling for any process scaling on this machine`,
  );
  const rows: ScaleRow[] = [];
  /** Cores each set-up's optmark processes use when no call arrives. */
  const idle: Partial<Record<SetUp['id'], number>> = {};
  const nginx = new Nginx(join(WORK, 'nginx'), await freePort());
  try {
    for (const setUp of SET_UPS) {
      const instances: Instance[] = [];
      try {
        // The first creates the shared key files; the others start once they exist.
        instances.push(await startInstance(env, 0, setUp.workers));
        for (let i = 1; i < setUp.instances; i++) instances.push(await startInstance(env, i, setUp.workers));
        let target = `http://127.0.0.1:${instances[0]!.port}`;
        if (setUp.nginx) {
          await nginx.configure(instances.map((x) => x.port), true);
          target = nginx.url;
        }
        // What the set-up costs with no calls at all: timers, the job queue's polling, pools.
        const idleFrom = { cpu: instances.reduce((sum, x) => sum + treeCpuSeconds(x.child.pid!), 0), at: performance.now() };
        await sleep(IDLE_S * 1000);
        idle[setUp.id] = (instances.reduce((sum, x) => sum + treeCpuSeconds(x.child.pid!), 0) - idleFrom.cpu) / ((performance.now() - idleFrom.at) / 1000);
        const load = (connections: number, durationS: number) =>
          runLoad(tool, { url: `${target}/api/v1/protect`, bodyPath, boundary: BOUNDARY, key, connections, durationS, timeoutS: 30 }, WORK);
        await load(16, WARMUP_S);
        for (const connections of SCALE_CONCURRENCY) {
          const serverCpu = () => instances.reduce((sum, x) => sum + treeCpuSeconds(x.child.pid!), 0);
          const pids = instances.map((x) => x.child.pid!);
          const threadsBefore = threadCpu(pids);
          const before = { server: serverCpu(), postgres: cpuOf('postgres'), nginx: cpuOf('nginx'), wrk: childrenCpu(), machine: machineCpuSeconds(), at: performance.now() };
          const result = await load(connections, DURATION_S);
          const seconds = (performance.now() - before.at) / 1000;
          const cpu = {
            server: serverCpu() - before.server,
            postgres: cpuOf('postgres') - before.postgres,
            nginx: cpuOf('nginx') - before.nginx,
            // wrk has exited by now: its time is in this process's children time.
            wrk: childrenCpu() - before.wrk,
            machine: machineCpuSeconds() - before.machine,
          };
          const threadsAfter = threadCpu(pids);
          const msPerCallByThread = Object.fromEntries(
            Object.entries(threadsAfter)
              .map(([name, sec]) => [name, (1000 * (sec - (threadsBefore[name] ?? 0))) / result.requests] as const)
              .filter(([, v]) => v > 0.005)
              .sort((a, b) => b[1] - a[1]),
          );
          const row: ScaleRow = { setUp: setUp.id, connections, result, seconds, cpu, callsPerServerCpuSecond: result.requests / cpu.server, msPerCallByThread };
          if (result.non2xx > 0 || result.socketErrors > 0) throw new Error(`${setUp.label} c=${connections}: ${result.non2xx} non-2xx and ${result.socketErrors} socket errors; the numbers are void`);
          rows.push(row);
          log(
            `  ${setUp.label.padEnd(38)} c=${String(connections).padStart(2)}: ${result.rps.toFixed(0).padStart(5)} calls/s, p50 ${result.p50Ms.toFixed(1)} ms, p99 ${result.p99Ms.toFixed(1)} ms, ` +
              `${row.callsPerServerCpuSecond.toFixed(0)} per server CPU-s; cores: optmark ${(cpu.server / seconds).toFixed(2)}, PostgreSQL ${(cpu.postgres / seconds).toFixed(2)}, nginx ${(cpu.nginx / seconds).toFixed(2)}, wrk ${(cpu.wrk / seconds).toFixed(2)}, machine ${(cpu.machine / seconds).toFixed(2)}; ` +
              `optmark ms per call: ${Object.entries(msPerCallByThread).map(([name, v]) => `${name} ${v.toFixed(2)}`).join(', ')}`,
          );
        }
      } finally {
        for (const x of instances) await x.stop();
      }
    }
  } finally {
    await nginx.stop();
    killAllLoad();
    await admin.query(`drop database if exists ${database} with (force)`);
    await admin.end();
  }

  const at = (id: SetUp['id']) => rows.find((r) => r.setUp === id && r.connections === JUDGED_AT)!;
  const one = at('direct-1');
  const all = at('direct-all');
  const behind1 = at('nginx-1');
  const behind3 = at('nginx-3');
  const targets: Target[] = [
    {
      name: `calls per server CPU-second, ${CORES} workers / 1 worker at c=${JUDGED_AT} >= 0.85`,
      pass: all.callsPerServerCpuSecond / one.callsPerServerCpuSecond >= 0.85,
      detail: `${all.callsPerServerCpuSecond.toFixed(0)} / ${one.callsPerServerCpuSecond.toFixed(0)} = ${(all.callsPerServerCpuSecond / one.callsPerServerCpuSecond).toFixed(2)}`,
    },
    {
      name: `rate, ${CORES} workers / 1 worker at c=${JUDGED_AT} >= 1.3`,
      pass: all.result.rps / one.result.rps >= 1.3,
      detail: `${all.result.rps.toFixed(0)} / ${one.result.rps.toFixed(0)} calls/s = ${(all.result.rps / one.result.rps).toFixed(2)}`,
    },
    {
      name: `calls per server CPU-second, 3 instances / 1 instance behind nginx at c=${JUDGED_AT} >= 0.8`,
      pass: behind3.callsPerServerCpuSecond / behind1.callsPerServerCpuSecond >= 0.8,
      detail: `${behind3.callsPerServerCpuSecond.toFixed(0)} / ${behind1.callsPerServerCpuSecond.toFixed(0)} = ${(behind3.callsPerServerCpuSecond / behind1.callsPerServerCpuSecond).toFixed(2)}`,
    },
  ];
  log();
  for (const t of targets) log(targetLine(t, process.stdout.isTTY));
  writeFileSync(
    RESULTS,
    `${JSON.stringify({ date: new Date().toISOString(), environment: { node: process.version, cpus: CORES, cpu: os.cpus()[0]?.model, postgres: postgresVersion, nginx: nginxVersion, loadTool: notes.join('; '), loadAverageAtEnd: os.loadavg() }, method: { image: { name: image!.name, bytes: image!.bytes.length }, durationSeconds: DURATION_S, warmupSeconds: WARMUP_S, judgedAt: JUDGED_AT, idleSeconds: IDLE_S }, parallelism, idleCores: idle, setUps: SET_UPS, rows, targets }, null, 2)}\n`,
  );
  log(`results written to ${RESULTS}`);
}

main().catch((error: unknown) => {
  killAllLoad();
  cleanupAll();
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
