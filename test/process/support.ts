/**
 * The built `optmark` command run as a user runs it: child processes of
 * `node bin/optmark.js`, configured only by their environment. Every child
 * started here is tracked, and `killAll` (called from each file's afterAll,
 * and on exit of the worker as a last resort) makes sure none outlives its test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/optmark.js', import.meta.url));
export const XMP_JPG = fileURLToPath(new URL('../corpus/exiftool/XMP.jpg', import.meta.url));
export const SAMPLE_JPEG = readFileSync(XMP_JPG);

/** A well-formed key (right length and checksum) that no database holds. */
export const UNKNOWN_KEY = 'omk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA0xqHyc';
/** Any API key as printed: `omk_` and 38 base62 characters. */
export const KEY_PATTERN = /omk_[0-9A-Za-z]{38}/;

/** The API key a first start wrote into the data directory's first-start file (it is never printed when standard error is not a terminal). */
export function firstStartKey(dataDir: string): string {
  const keys = keysIn(readFileSync(join(dataDir, 'first-start.txt'), 'utf8'));
  if (keys.length === 0) throw new Error(`no key in ${dataDir}/first-start.txt`);
  return keys[0]!;
}

/** Every API key in `text`, in order. */
export function keysIn(text: string): string[] {
  return [...text.matchAll(new RegExp(KEY_PATTERN.source, 'g'))].map((m) => m[0]);
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/**
 * This process's environment without any of the project's settings
 * (OPTMARK_*, DATABASE_URL, PORT, HOST): each test sets its own. Every
 * helper that starts the command uses it, so a developer's exported
 * OPTMARK_DATA_DIR or DATABASE_URL never points a test at real keys or data.
 */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!/^(OPTMARK_|DATABASE_URL$|PORT$|HOST$)/.test(name)) env[name] = value;
  }
  return { ...env, ...extra };
}

/** One `optmark` child: its output so far, and its end. */
export class Child {
  stdout = '';
  stderr = '';
  readonly exited: Promise<Exit>;
  exit: Exit | undefined;

  constructor(readonly proc: ChildProcess) {
    live.add(proc);
    proc.stdout!.setEncoding('utf8').on('data', (text: string) => (this.stdout += text));
    proc.stderr!.setEncoding('utf8').on('data', (text: string) => (this.stderr += text));
    this.exited = new Promise((resolve) => {
      proc.once('close', (code, signal) => {
        live.delete(proc);
        this.exit = { code, signal };
        resolve(this.exit);
      });
    });
  }

  get pid(): number {
    return this.proc.pid!;
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  /** Wait until `check` holds on the output, failing early if the process ends first. */
  async waitFor(check: () => boolean, what: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (this.exit) throw new Error(`optmark exited (${JSON.stringify(this.exit)}) before ${what}\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`);
      if (Date.now() > deadline) throw new Error(`no ${what} after ${timeoutMs} ms\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`);
      await sleep(25);
    }
  }

  /** SIGTERM, then the exit (SIGKILL after `graceMs`, which the caller's assertions will notice). */
  async stop(graceMs = 10_000): Promise<Exit> {
    if (this.exit) return this.exit;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

export function spawnOptmark(args: readonly string[], env: Record<string, string>): Child {
  return new Child(spawn(process.execPath, [BIN, ...args], { env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] }));
}

/** A running `optmark serve`, with the URL it logged. */
export interface Server extends Child {
  readonly url: string;
}

const LISTENING = /"msg":"Server listening at (http:\/\/[^"]+)"/;

/** `optmark serve` on a free port, resolved once it logs that it listens. */
export async function startServe(env: Record<string, string>, timeoutMs = 30_000): Promise<Server> {
  const child = spawnOptmark(['serve'], { PORT: '0', ...env });
  try {
    await child.waitFor(() => LISTENING.test(child.stdout), 'listening log line', timeoutMs);
  } catch (error) {
    child.proc.kill('SIGKILL');
    throw error;
  }
  return Object.assign(child, { url: LISTENING.exec(child.stdout)![1]! });
}

/** An admin command (or any other) to its end. */
export async function optmark(args: readonly string[], env: Record<string, string>, timeoutMs = 30_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnOptmark(args, env);
  const timer = setTimeout(() => child.proc.kill('SIGKILL'), timeoutMs);
  const exit = await child.exited;
  clearTimeout(timer);
  return { code: exit.code, stdout: child.stdout, stderr: child.stderr };
}

/** An admin command with --json that must succeed; its parsed output. */
export async function optmarkJson<T = Record<string, unknown>>(args: readonly string[], env: Record<string, string>): Promise<T> {
  const run = await optmark([...args, '--json'], env);
  if (run.code !== 0) throw new Error(`optmark ${args.join(' ')} exited ${run.code}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`);
  return JSON.parse(run.stdout) as T;
}

/** Kill whatever child is still running (a failed test's servers) and wait for them. */
export async function killAll(): Promise<void> {
  const waits = [...live].map(
    (child) =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('close', () => resolve());
        child.kill('SIGKILL');
      }),
  );
  await Promise.all(waits);
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** POST one image as multipart, the way curl -F does. */
export function postImage(url: string, key: string | undefined, bytes: Uint8Array = SAMPLE_JPEG, path = '/api/v1/protect'): Promise<Response> {
  const form = new FormData();
  form.append('image', new Blob([bytes], { type: 'image/jpeg' }), 'photo.jpg');
  return fetch(`${url}${path}`, { method: 'POST', headers: key ? { Authorization: `Bearer ${key}` } : {}, body: form });
}

/** Whole seconds to the first instant of the next UTC month. */
export function secondsToNextMonth(now = new Date()): number {
  const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  return Math.max(1, Math.ceil((end - now.getTime()) / 1000));
}

/** Every regular file under `dir`, recursively. */
export function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path));
    else if (entry.isFile() || (entry.isSymbolicLink() && statSync(path).isFile())) out.push(path);
  }
  return out;
}

/** The processes whose parent is `pid` (from /proc), in order. */
export function childrenOf(pid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The fields after the command name, which is in parentheses and may hold spaces: state, ppid, ...
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found.sort((a, b) => a - b);
}
