/**
 * The real server, `node bin/optmark.js serve`, in a child process on a fixed
 * port (so that a restart keeps its address and clients simply reconnect),
 * started as `npm start` starts it (it sets its allocator settings itself). Its log is parsed as it comes:
 * the last lines are kept for reports, warnings and errors apart.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { adminSocketPath } from '../../../src/server/admin-socket.js';
import { onCleanup } from './cleanup.js';
import { sleep } from './net.js';

export const ROOT = join(import.meta.dirname, '..', '..', '..');
const BIN = join(ROOT, 'bin', 'optmark.js');
const execFileAsync = promisify(execFile);

/** The allocator setting of `npm start`, read from package.json so the two cannot drift apart. */
/**
 * Our environment without optmark settings, plus `extra`: each run states
 * its own. GLIBC_TUNABLES goes too: `optmark serve` sets the allocator
 * settings `npm start` runs with by itself (src/cli/allocator.ts).
 */
export function serverEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!/^(OPTMARK_|DATABASE_URL$|PORT$|HOST$|GLIBC_TUNABLES$)/.test(name)) env[name] = value;
  }
  return { ...env, HOST: '127.0.0.1', ...extra };
}

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface Memory {
  readonly rssMb: number;
  /** VmHWM: the peak resident size since the process started. */
  readonly peakMb: number;
}

const KEY = /omk_[0-9A-Za-z]{38}/;
const live = new Set<Serve>();

/** SIGKILL every server still running (a scenario that failed half-way) and wait for their ends. */
export async function killAllServers(): Promise<void> {
  await Promise.all([...live].map((server) => (server.kill('SIGKILL'), server.exited)));
}

/**
 * SIGKILL, then wait (synchronously: this runs from the 'exit' event) until
 * the process is gone or a zombie, so that its files are closed before what
 * they live on is unmounted.
 */
function killNow(proc: ChildProcess): void {
  proc.kill('SIGKILL');
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let i = 0; i < 200; i++) {
    let state: string | undefined;
    try {
      state = /^State:\s+(\S)/m.exec(readFileSync(`/proc/${proc.pid}/status`, 'utf8'))?.[1];
    } catch {
      return;
    }
    if (state === 'Z' || state === 'X') return;
    Atomics.wait(pause, 0, 0, 10);
  }
}
const KEEP_LINES = 300;

export class Serve {
  readonly exited: Promise<Exit>;
  exit: Exit | undefined;
  stderr = '';
  /** The last lines of standard output (pino JSON). */
  readonly tail: string[] = [];
  /** Log lines at warn (40) or above, the first 2000. */
  readonly warnings: string[] = [];
  readonly levels = new Map<number, number>();
  private partial = '';
  private readonly forget: (runNow?: boolean) => void;

  private constructor(
    readonly proc: ChildProcess,
    readonly port: number,
    readonly dataDir: string | undefined,
  ) {
    this.forget = onCleanup('optmark serve', () => killNow(proc));
    live.add(this);
    proc.stdout!.setEncoding('utf8').on('data', (text: string) => this.take(text));
    proc.stderr!.setEncoding('utf8').on('data', (text: string) => (this.stderr += text));
    this.exited = new Promise((resolve) =>
      proc.once('close', (code, signal) => {
        this.exit = { code, signal };
        live.delete(this);
        // It has exited: nothing left to kill.
        this.forget(false);
        resolve(this.exit);
      }),
    );
  }

  /** Spawn; resolves once the process listens (and, unless `ready` is false, /readyz answers 200). */
  static async start(port: number, env: Record<string, string>, options: { ready?: boolean; timeoutMs?: number } = {}): Promise<Serve> {
    // On the embedded database the limits go through the admin socket (applyLimitSettings); passed as settings too, the server would warn that the table decides.
    const { OPTMARK_PROTECT_LIMIT: _p, OPTMARK_VERIFY_LIMIT: _v, ...rest } = env;
    const settings = env.DATABASE_URL ? env : rest;
    const proc = spawn(process.execPath, [BIN, 'serve'], { cwd: ROOT, env: serverEnv({ ...settings, PORT: String(port) }), stdio: ['ignore', 'pipe', 'pipe'] });
    const server = new Serve(proc, port, env.OPTMARK_DATA_DIR);
    await server.waitUp(options.ready ?? true, options.timeoutMs ?? 60_000);
    await applyLimitSettings(env);
    return server;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number {
    return this.proc.pid!;
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  /**
   * The key a first start on an empty database wrote into the data
   * directory's first-start file; the server writes it just after it starts
   * listening, so this waits for it (up to 15 s).
   */
  async bootstrapKey(): Promise<string> {
    for (const deadline = Date.now() + 15_000; ; await sleep(50)) {
      let key: string | undefined;
      try {
        if (this.dataDir) key = KEY.exec(readFileSync(join(this.dataDir, 'first-start.txt'), 'utf8'))?.[0];
      } catch {
        // not written yet
      }
      if (key) return key;
      if (Date.now() > deadline || !this.running) throw new Error(`no first-start key in ${this.dataDir ?? '(no data directory)'}`);
    }
  }

  memory(): Memory | undefined {
    try {
      const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
      const mb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) / 1024;
      return { rssMb: mb('VmRSS'), peakMb: mb('VmHWM') };
    } catch {
      return undefined;
    }
  }

  kill(signal: NodeJS.Signals): void {
    this.proc.kill(signal);
  }

  /** SIGTERM and the exit; SIGKILL after `graceMs` (which then shows in the exit). */
  async stop(graceMs = 20_000): Promise<Exit> {
    if (this.exit) return this.exit;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Lines for a report: keys masked, long lines cut. */
  logTail(lines = 15, source: readonly string[] = this.tail): string {
    return source
      .slice(-lines)
      .map((line) => line.replace(/omk_[0-9A-Za-z]+/g, 'omk_[masked]').slice(0, 600))
      .join('\n');
  }

  private take(text: string): void {
    const lines = (this.partial + text).split('\n');
    this.partial = lines.pop()!;
    for (const line of lines) {
      this.tail.push(line);
      if (this.tail.length > KEEP_LINES) this.tail.shift();
      const level = Number(/"level":(\d+)/.exec(line)?.[1] ?? 0);
      this.levels.set(level, (this.levels.get(level) ?? 0) + 1);
      if (level >= 40 && this.warnings.length < 2000) this.warnings.push(line);
    }
  }

  private async waitUp(ready: boolean, timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    const path = ready ? '/readyz' : '/healthz';
    for (;;) {
      if (this.exit) throw new Error(`optmark serve exited during start (${JSON.stringify(this.exit)}):\n${this.stderr}\n${this.logTail()}`);
      try {
        if ((await fetch(`${this.url}${path}`)).ok) return;
      } catch {
        // not listening yet
      }
      if (performance.now() > deadline) {
        this.proc.kill('SIGKILL');
        throw new Error(`optmark serve did not answer ${path} within ${timeoutMs} ms:\n${this.stderr}\n${this.logTail()}`);
      }
      await sleep(50);
    }
  }
}

/** `optmark ARGS --json` (administration), its parsed answer. */
export async function cli<T = Record<string, unknown>>(args: readonly string[], env: Record<string, string>): Promise<T> {
  const { stdout } = await execFileAsync(process.execPath, [BIN, ...args, '--json'], { cwd: ROOT, env: serverEnv(env) });
  return JSON.parse(stdout) as T;
}

/**
 * One administration operation through a running server's admin socket (as
 * the CLI sends it): much faster than a CLI process per call when a scenario
 * needs hundreds of accounts.
 */
export function adminOp<T>(dataDir: string, operation: Record<string, unknown>): Promise<T> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: adminSocketPath(dataDir), path: '/', method: 'POST', headers: { 'Content-Type': 'application/json' } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let body: { result?: T; error?: string };
        try {
          body = JSON.parse(text) as typeof body;
        } catch {
          return reject(new Error(`admin ${String(operation.op)}: ${res.statusCode} ${text.slice(0, 200)}`));
        }
        if (res.statusCode === 200) resolve(body.result as T);
        else reject(new Error(`admin ${String(operation.op)}: ${res.statusCode} ${body.error ?? ''}`));
      });
    });
    req.on('error', reject);
    req.end(JSON.stringify(operation));
  });
}

/**
 * The embedded database of a stress run is a copy of a template whose limits
 * table was filled with the defaults, so OPTMARK_PROTECT_LIMIT and
 * OPTMARK_VERIFY_LIMIT (which only fill a new table) would be ignored: they
 * are written to the paid plans' rows through the admin socket instead.
 */
async function applyLimitSettings(env: Record<string, string>): Promise<void> {
  const changes: Record<string, number> = {};
  if (env.OPTMARK_PROTECT_LIMIT) changes.protectPerMonth = Number(env.OPTMARK_PROTECT_LIMIT);
  if (env.OPTMARK_VERIFY_LIMIT) changes.verifyPerMonth = Number(env.OPTMARK_VERIFY_LIMIT);
  if (Object.keys(changes).length === 0 || env.DATABASE_URL || !env.OPTMARK_DATA_DIR) return;
  for (const plan of ['pro', 'lifetime']) await adminOp(env.OPTMARK_DATA_DIR, { op: 'setPlanLimits', plan, changes });
}

export interface Usage {
  readonly protect: number;
  readonly verify: number;
}

/** This month's usage of the key's account, as GET /api/v1/usage reports it. */
export async function usageOf(url: string, key: string): Promise<Usage> {
  const response = await fetch(`${url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } });
  const body = (await response.json()) as { protect?: { used: number }; verify?: { used: number }; code?: string };
  if (!response.ok || !body.protect || !body.verify) throw new Error(`GET /api/v1/usage answered ${response.status} ${JSON.stringify(body)}`);
  return { protect: body.protect.used, verify: body.verify.used };
}

/** Lines logged at error (50) or fatal (60): a 500 or worse. */
export const errorLines = (server: Serve) => (server.levels.get(50) ?? 0) + (server.levels.get(60) ?? 0);

export const logSummary = (server: Serve) => `log: ${server.levels.get(40) ?? 0} warn, ${server.levels.get(50) ?? 0} error, ${server.levels.get(60) ?? 0} fatal lines`;

/** The first error lines, else the first warnings, for the report. */
export function showWarnings(log: (line?: string) => void, server: Serve, lines = 2): void {
  const errors = server.warnings.filter((line) => /"level":(50|60)/.test(line));
  const shown = errors.length ? errors : server.warnings;
  if (shown.length) log(`${errors.length ? 'errors' : 'warnings'} logged (first ${Math.min(lines, shown.length)}):\n${server.logTail(lines, shown.slice(0, lines))}`);
  // The first start's key announcement is expected; anything else on stderr is news.
  const stderr = server.stderr.replace(/Created the account[\s\S]*?\/api\/v1\/protect\n?/, '').replace(/omk_[0-9A-Za-z]+/g, 'omk_[masked]').trim();
  if (stderr) log(`stderr:\n${stderr.slice(-2000)}`);
}
