/**
 * `npm run bench:workers`: `optmark serve --workers N` on PostgreSQL, one
 * worker against two (the cores of this machine), with Debian's wrk posting
 * POST /api/v1/protect of a 43 KB PNG at concurrency 8, in one run. Reported:
 * calls per second, p50/p99, and calls per server CPU-second (the CPU time
 * of the primary and its workers summed from /proc), with the CPU shares of
 * wrk and of PostgreSQL. Targets (issue "Scale"): calls per server
 * CPU-second with 2 workers at least 0.85 of one worker's, and the rate with
 * 2 workers at least 1.3x one worker's.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import sharp from 'sharp';
import { chooseLoadTool, killAllLoad, runLoad } from './http-load.js';
import { ensureBuilt } from './http-server.js';
import { treeCpuSeconds } from './cpu-usage.js';

const ROOT = join(import.meta.dirname, '..');
const WORK = join(ROOT, '.bench-tmp', 'workers');
const BOUNDARY = 'optmark-bench-workers-boundary';
const ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DURATION_S = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const TICKS = 100;
const log = (line = '') => process.stdout.write(`${line}\n`);


/** CPU seconds of every process whose command starts with `name` (PostgreSQL's backends). */
function cpuOf(name: string): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const command = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (!command.startsWith(name)) continue;
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
      total += (f[11]! + f[12]!) / TICKS;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

function machineCpu(): number {
  const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number) as number[];
  return (user! + nice! + system! + irq! + softirq! + steal!) / TICKS;
}

async function main(): Promise<void> {
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  ensureBuilt(ROOT, log);
  const { tool, notes } = await chooseLoadTool(log);
  if (tool !== 'wrk') throw new Error('this benchmark needs wrk (a Node client would take a core from the server)');
  // Pseudo-random pixels, so the PNG is about 43 KB like the issue's.
  const pixels = Buffer.alloc(128 * 112 * 3);
  let seed = 7;
  for (let i = 0; i < pixels.length; i++) pixels[i] = (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24;
  const png = await sharp(pixels, { raw: { width: 128, height: 112, channels: 3 } }).png().toBuffer();
  const bodyPath = join(WORK, 'body.bin');
  writeFileSync(bodyPath, Buffer.concat([Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="photo.png"\r\nContent-Type: image/png\r\n\r\n`), png, Buffer.from(`\r\n--${BOUNDARY}--\r\n`)]));
  log(`image: PNG of ${(png.length / 1000).toFixed(1)} KB; load: ${notes.join('; ')}, ${CONNECTIONS} connections, ${DURATION_S} s per run, best of ${ROUNDS}`);
  log(`machine: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), Node ${process.version}`);

  const database = `optmark_bench_workers_${process.pid}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`drop database if exists ${database} with (force)`);
  await admin.query(`create database ${database}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${database}`;
  const env = { ...process.env, DATABASE_URL: url.toString(), OPTMARK_DATA_DIR: join(WORK, 'data'), OPTMARK_LOG_LEVEL: 'warn', OPTMARK_PROTECT_LIMIT: '1000000000', OPTMARK_MAX_IN_FLIGHT_PER_KEY: '64', HOST: '127.0.0.1' };
  const cli = (args: string[]) => JSON.parse(spawnSync(process.execPath, [join(ROOT, 'bin', 'optmark.js'), ...args, '--json'], { env, encoding: 'utf8' }).stdout) as Record<string, unknown>;
  cli(['accounts', 'create', '--name', 'bench', '--plan', 'pro']);
  const key = String(cli(['keys', 'issue', '--account', 'bench']).key);

  const results: Record<number, { rps: number; p50: number; p99: number; perCpu: number; serverCores: number; wrkCores: number; pgCores: number }> = {};
  try {
    for (const workers of [1, 2]) {
      const port = 18600 + workers;
      const child = spawn(process.execPath, [join(ROOT, 'bin', 'optmark.js'), 'serve', '--workers', String(workers)], { env: { ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'] });
      try {
        for (let i = 0; ; i++) {
          try {
            if ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok) break;
          } catch {
            // not yet
          }
          if (i > 200) throw new Error('the server did not start');
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        // Warm-up.
        await runLoad(tool, { url: `http://127.0.0.1:${port}/api/v1/protect`, bodyPath, boundary: BOUNDARY, key, connections: CONNECTIONS, durationS: 3, timeoutS: 10 }, WORK);
        for (let round = 0; round < ROUNDS; round++) {
          const before = { server: treeCpuSeconds(child.pid!), pg: cpuOf('postgres'), machine: machineCpu(), at: performance.now() };
          const run = await runLoad(tool, { url: `http://127.0.0.1:${port}/api/v1/protect`, bodyPath, boundary: BOUNDARY, key, connections: CONNECTIONS, durationS: DURATION_S, timeoutS: 10 }, WORK);
          const seconds = (performance.now() - before.at) / 1000;
          const server = treeCpuSeconds(child.pid!) - before.server;
          const pgCpu = cpuOf('postgres') - before.pg;
          const machine = machineCpu() - before.machine;
          const result = {
            rps: run.rps,
            p50: run.p50Ms,
            p99: run.p99Ms,
            perCpu: run.requests / server,
            serverCores: server / seconds,
            pgCores: pgCpu / seconds,
            wrkCores: Math.max(0, machine - server - pgCpu) / seconds,
          };
          log(`${workers} worker(s), round ${round + 1}: ${result.rps.toFixed(0)} calls/s, p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms, ${result.perCpu.toFixed(0)} calls per server CPU-second; cores: server ${result.serverCores.toFixed(2)}, PostgreSQL ${result.pgCores.toFixed(2)}, wrk and the rest ${result.wrkCores.toFixed(2)}${run.non2xx ? `; ${run.non2xx} non-2xx` : ''}`);
          if (!results[workers] || result.rps > results[workers].rps) results[workers] = result;
        }
      } finally {
        child.kill('SIGTERM');
        await new Promise((resolve) => child.once('exit', resolve));
      }
    }
  } finally {
    killAllLoad();
    await admin.query(`drop database if exists ${database} with (force)`);
    await admin.end();
  }
  const one = results[1]!;
  const two = results[2]!;
  log('');
  log('| workers | calls/s | p50 ms | p99 ms | calls per server CPU-s | server cores | PostgreSQL cores | wrk and rest |');
  log('|---|---|---|---|---|---|---|---|');
  for (const [n, r] of [[1, one], [2, two]] as const) log(`| ${n} | ${r.rps.toFixed(0)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.perCpu.toFixed(0)} | ${r.serverCores.toFixed(2)} | ${r.pgCores.toFixed(2)} | ${r.wrkCores.toFixed(2)} |`);
  log('');
  log(`efficiency (calls per server CPU-second, 2 workers / 1): ${(two.perCpu / one.perCpu).toFixed(2)} (target >= 0.85: ${two.perCpu / one.perCpu >= 0.85 ? 'met' : 'MISSED'})`);
  log(`rate (2 workers / 1): ${(two.rps / one.rps).toFixed(2)} (target >= 1.3: ${two.rps / one.rps >= 1.3 ? 'met' : 'MISSED'})`);
}

main().catch((error: unknown) => {
  killAllLoad();
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
