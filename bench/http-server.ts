/**
 * The real server for the HTTP benchmark, run as `node bin/optmark.js serve`
 * in a child process, so the load generator never shares its event loop.
 * Each run gets a fresh data directory copied from a migrated PGlite template
 * (made once, cached under .bench-tmp/http/), and its key comes from the
 * admin CLI, which talks to the running server over its admin socket.
 */
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, createWriteStream, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { freePort } from './stress/support/net.js';

const execFileAsync = promisify(execFile);

/** An environment without the project's settings (OPTMARK_*, DATABASE_URL, PORT, HOST): each run states its own. */
function withoutOptmarkSettings(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !/^(OPTMARK_|DATABASE_URL$|PORT$|HOST$)/.test(name)));
}

/** Newest modification time of any file under `dir`. */
function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** `npm run build` when dist/ is missing or older than src/ (tsc rewrites every output on a build). */
export function ensureBuilt(root: string, log: (line: string) => void): void {
  const entry = join(root, 'dist', 'cli', 'main.js');
  const sources = Math.max(newestMtime(join(root, 'src')), statSync(join(root, 'tsconfig.build.json')).mtimeMs);
  if (existsSync(entry) && statSync(entry).mtimeMs >= sources) {
    log('build: dist/ is up to date');
    return;
  }
  log('build: dist/ is stale, running npm run build ...');
  const result = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  if (result.status !== 0) throw new Error(`npm run build failed (exit ${result.status})`);
}

/**
 * A migrated, empty embedded database, made once per migrations version (in a
 * child process from dist/, so this process never loads PGlite) and copied for
 * every server: PGlite's initdb takes seconds.
 */
export function ensureTemplate(root: string, dir: string, log: (line: string) => void): string {
  const migrations = readFileSync(join(root, 'dist', 'adapters', 'db', 'migrations.js'));
  const version = createHash('sha256').update(migrations).digest('hex').slice(0, 12);
  const template = join(dir, `pglite-template-${version}`);
  if (existsSync(join(template, 'pgdata'))) return template;
  mkdirSync(dir, { recursive: true });
  for (const old of readdirSync(dir)) if (old.startsWith('pglite-template-')) rmSync(join(dir, old), { recursive: true, force: true });
  const started = performance.now();
  const partial = `${template}.part`;
  rmSync(partial, { recursive: true, force: true });
  const open = pathToFileURL(join(root, 'dist', 'adapters', 'db', 'open.js')).href;
  // CommonJS -e with import(): --input-type=module would be inherited by PGlite's worker thread, which then cannot load its file.
  const script = `import(${JSON.stringify(open)}).then(async ({ openDatabase }) => {
    const db = await openDatabase({ databaseUrl: undefined, dataDir: ${JSON.stringify(partial)} });
    await db.close();
  });`;
  const result = spawnSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`could not create the database template: ${result.stderr}`);
  rmSync(join(partial, 'optmark.lock'), { force: true });
  renameSync(partial, template);
  log(`  created the database template in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return template;
}


export interface Memory {
  /** Resident set size now, MB. */
  readonly rssMb: number;
  /** Peak resident set size (VmHWM), MB. */
  readonly peakRssMb: number;
}

export interface BenchServer {
  readonly url: string;
  readonly pid: number;
  readonly dataDir: string;
  readonly logPath: string;
  /** Environment for the admin CLI: the same data directory. */
  readonly env: NodeJS.ProcessEnv;
  memory(): Memory | undefined;
  /** Run `node bin/optmark.js ...args` against this server's data directory; parsed --json output. */
  cli(args: readonly string[]): Promise<Record<string, unknown>>;
  /** SIGTERM (orderly stop: the CPU profile, if any, is written on exit), SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
  logTail(lines?: number): string;
}

/** Every server started and not yet stopped, for the signal handler. */
const live = new Set<ChildProcess>();
export function killAllServers(): void {
  for (const child of live) child.kill('SIGKILL');
}

export interface ServerOptions {
  readonly root: string;
  readonly template: string;
  readonly dataDir: string;
  readonly logPath: string;
  readonly env: Record<string, string>;
  /** Extra node flags, e.g. --cpu-prof. */
  readonly nodeArgs?: readonly string[];
}

export async function startBenchServer(options: ServerOptions): Promise<BenchServer> {
  const { root, dataDir, logPath } = options;
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  cpSync(join(options.template, 'pgdata'), join(dataDir, 'pgdata'), { recursive: true });
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...withoutOptmarkSettings(process.env),
    DATABASE_URL: '',
    HOST: '127.0.0.1',
    PORT: String(port),
    OPTMARK_DATA_DIR: dataDir,
    ...options.env,
  };
  // The server's output (warn level, and the bootstrap key of the fresh database) goes to a log file, not the report.
  const logFile = createWriteStream(logPath);
  await new Promise((resolve) => logFile.once('open', resolve));
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), join(root, 'bin', 'optmark.js'), 'serve'], { cwd: root, env, stdio: ['ignore', logFile, logFile] });
  live.add(child);
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exited = { code, signal };
      live.delete(child);
      resolve();
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  // The log holds the bootstrap key of the throwaway database: keys are masked all the same.
  const logTail = (lines = 20) =>
    existsSync(logPath) ? readFileSync(logPath, 'utf8').replace(/omk_[A-Za-z0-9]+/g, 'omk_[masked]').trimEnd().split('\n').slice(-lines).join('\n') : '';

  const server: BenchServer = {
    url,
    pid: child.pid!,
    dataDir,
    logPath,
    env,
    memory() {
      try {
        const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
        const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
        return { rssMb: kb('VmRSS') / 1024, peakRssMb: kb('VmHWM') / 1024 };
      } catch {
        return undefined; // not Linux, or the process is gone
      }
    },
    async cli(args) {
      const { stdout } = await execFileAsync(process.execPath, [join(root, 'bin', 'optmark.js'), ...args], { cwd: root, env });
      return JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    },
    async stop(graceMs = 15_000) {
      if (exited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exit;
      clearTimeout(timer);
      logFile.end();
    },
    logTail,
  };

  // Ready when /readyz answers (the database is open and migrated).
  const deadline = performance.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`the server exited during start (${JSON.stringify(exited)}):\n${logTail()}`);
    try {
      const response = await fetch(`${url}/readyz`);
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (performance.now() > deadline) {
      await server.stop(2000);
      throw new Error(`the server did not become ready within 60 s:\n${logTail()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // The data directory is a copy of a template whose limits table holds the
  // defaults (the limit settings only fill a new table): the run's limits
  // go into the paid plans' rows through the admin socket.
  const limits = [
    ...(options.env.OPTMARK_PROTECT_LIMIT ? ['--protect', options.env.OPTMARK_PROTECT_LIMIT] : []),
    ...(options.env.OPTMARK_VERIFY_LIMIT ? ['--verify', options.env.OPTMARK_VERIFY_LIMIT] : []),
  ];
  if (limits.length > 0) for (const plan of ['pro', 'lifetime']) await server.cli(['plans', 'set', plan, ...limits, '--json']);
  return server;
}
