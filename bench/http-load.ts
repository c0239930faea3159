/**
 * The load generator: Debian's `wrk` posting one prebuilt multipart body with
 * a small Lua script (autocannon tops out at ~200-240 req/s of its own CPU on
 * a 2-core box, which would measure the client, not the server). When wrk is
 * missing it is installed with apt-get (as root); failing that, autocannon
 * (an npm devDependency) is used and the report says so.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { autocannon } from './autocannon.js';

export type LoadTool = 'wrk' | 'autocannon';

export interface LoadRun {
  readonly url: string;
  readonly bodyPath: string;
  readonly boundary: string;
  readonly key: string;
  readonly connections: number;
  readonly durationS: number;
  /** A request slower than this counts as a timeout error. */
  readonly timeoutS: number;
}

export interface LoadResult {
  readonly tool: LoadTool;
  readonly connections: number;
  readonly threads: number;
  readonly requests: number;
  readonly durationS: number;
  readonly rps: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly meanMs: number;
  readonly maxMs: number;
  /** Responses that were not 2xx (wrk: status >= 400, cross-checked against the server's usage count). */
  readonly non2xx: number;
  /** Connect, read, write errors and timeouts. */
  readonly socketErrors: number;
}

/**
 * Posts the file named by BENCH_BODY as is (it is the whole multipart body),
 * and prints one JSON line from done(). No response() callback: with one, wrk
 * copies every response body (7 MB of base64 for a 5 MB protect) into Lua.
 */
const LUA = `-- optmark bench: POST one prebuilt multipart body (written by bench/http-load.ts)
local f = assert(io.open(os.getenv("BENCH_BODY"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "multipart/form-data; boundary=" .. os.getenv("BENCH_BOUNDARY")
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_KEY")

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCHJSON {"requests":%.0f,"durationUs":%.0f,"connect":%.0f,"read":%.0f,"write":%.0f,"status":%.0f,"timeout":%.0f,' ..
    '"p50Us":%.0f,"p90Us":%.0f,"p99Us":%.0f,"meanUs":%.1f,"maxUs":%.0f}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean, latency.max))
end
`;

/** e.g. "wrk debian/4.1.0-3+b2 [epoll]" (wrk --version exits 1 after printing it). */
const wrkVersion = () => spawnSync('wrk', ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0]!.replace(/\s*Copyright.*$/, '').trim();
const hasWrk = () => spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined;

/** wrk if present or installable, else autocannon; `notes` says what happened. */
export async function chooseLoadTool(log: (line: string) => void): Promise<{ tool: LoadTool; notes: string[] }> {
  const notes: string[] = [];
  const forced = process.env.BENCH_HTTP_CLIENT;
  if (forced === 'autocannon') return { tool: 'autocannon', notes: ['autocannon chosen by BENCH_HTTP_CLIENT'] };
  if (hasWrk()) return { tool: 'wrk', notes: [...notes, wrkVersion()] };
  log('wrk is not installed; trying apt-get install -y wrk ...');
  const isRoot = process.getuid?.() === 0;
  if (isRoot) {
    const result = spawnSync('apt-get', ['install', '-y', 'wrk'], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
    if (hasWrk()) {
      notes.push('wrk installed with apt-get', wrkVersion());
      return { tool: 'wrk', notes };
    }
    notes.push(`apt-get install -y wrk failed: ${(result.stderr ?? String(result.error)).trim().split('\n').at(-1)}`);
  } else {
    notes.push('wrk missing and not root, so not installed');
  }
  notes.push('FALLBACK: using autocannon; it saturates its own CPU near 200-240 req/s here, so high rates are understated');
  return { tool: 'autocannon', notes };
}

let luaPath: string | undefined;
/** Children running now, so a signal handler can stop them. */
const running = new Set<ChildProcess>();
export function killAllLoad(): void {
  for (const child of running) child.kill('SIGKILL');
}

export async function runLoad(tool: LoadTool, run: LoadRun, scratchDir: string): Promise<LoadResult> {
  return tool === 'wrk' ? runWrk(run, scratchDir) : runAutocannon(run);
}

async function runWrk(run: LoadRun, scratchDir: string): Promise<LoadResult> {
  if (!luaPath) {
    luaPath = `${scratchDir}/wrk-post.lua`;
    writeFileSync(luaPath, LUA);
  }
  // Two threads at most: the server needs the other core.
  const threads = Math.min(2, run.connections);
  const args = ['-t', String(threads), '-c', String(run.connections), '-d', `${run.durationS}s`, '--timeout', `${run.timeoutS}s`, '-s', luaPath, run.url];
  const child = spawn('wrk', args, {
    env: { ...process.env, BENCH_BODY: run.bodyPath, BENCH_BOUNDARY: run.boundary, BENCH_KEY: run.key },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  }).finally(() => running.delete(child));
  const line = stdout.split('\n').find((l) => l.startsWith('BENCHJSON '));
  if (code !== 0 || !line) throw new Error(`wrk ${args.join(' ')} failed (exit ${code}):\n${stdout}\n${stderr}`);
  const r = JSON.parse(line.slice('BENCHJSON '.length)) as Record<string, number>;
  const n = (k: string) => r[k] ?? Number.NaN;
  const durationS = n('durationUs') / 1e6;
  return {
    tool: 'wrk',
    connections: run.connections,
    threads,
    requests: n('requests'),
    durationS,
    rps: n('requests') / durationS,
    p50Ms: n('p50Us') / 1000,
    p90Ms: n('p90Us') / 1000,
    p99Ms: n('p99Us') / 1000,
    meanMs: n('meanUs') / 1000,
    maxMs: n('maxUs') / 1000,
    non2xx: n('status'),
    socketErrors: n('connect') + n('read') + n('write') + n('timeout'),
  };
}

async function runAutocannon(run: LoadRun): Promise<LoadResult> {
  const result = await autocannon({
    url: run.url,
    method: 'POST',
    headers: { 'content-type': `multipart/form-data; boundary=${run.boundary}`, authorization: `Bearer ${run.key}` },
    body: readFileSync(run.bodyPath),
    connections: run.connections,
    duration: run.durationS,
    timeout: run.timeoutS,
  });
  return {
    tool: 'autocannon',
    connections: run.connections,
    threads: 1,
    requests: result.requests.total,
    durationS: result.duration,
    rps: result.requests.total / result.duration,
    p50Ms: result.latency.p50,
    p90Ms: result.latency.p90,
    p99Ms: result.latency.p99,
    meanMs: result.latency.average,
    maxMs: result.latency.max,
    non2xx: result.non2xx,
    // autocannon's errors include its timeouts.
    socketErrors: result.errors,
  };
}
