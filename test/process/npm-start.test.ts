/**
 * `npm start`, the documented way to run the server, as a service manager
 * runs it: what npm launches is the server itself (no shell in between),
 * with the allocator settings it sets for itself, so a SIGTERM to it, or to
 * npm, stops the server cleanly, and nothing is left running holding the
 * data directory.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { freshDataDir } from '../support/server.js';
import { Child, childEnv, childrenOf, firstStartKey, killAll, postImage, sleep } from './support.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const dirs: string[] = [];
/** Every process npm launched: a failed test must not leave one running (npm's own end would not take it along). */
const launchedPids = new Set<number>();
afterAll(async () => {
  for (const pid of launchedPids) if (alive(pid)) process.kill(pid, 'SIGKILL');
  await killAll();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});


const alive = (pid: number) => existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
const environ = (pid: number) => readFileSync(`/proc/${pid}/environ`, 'utf8');

const LISTENING = /"msg":"Server listening at (http:\/\/[^"]+)"/;

/** `npm start` in the repository, on a data directory of its own; once listening, npm and the process it launched. */
async function npmStart(): Promise<{ npm: Child; launched: number; url: string; dataDir: string }> {
  const dataDir = freshDataDir();
  dirs.push(dataDir);
  const npm = new Child(spawn('npm', ['start'], { cwd: ROOT, env: childEnv({ OPTMARK_DATA_DIR: dataDir, PORT: '0' }), stdio: ['ignore', 'pipe', 'pipe'] }));
  await npm.waitFor(() => LISTENING.test(npm.stdout), 'listening log line', 60_000);
  const launched = childrenOf(npm.pid);
  for (const pid of launched) launchedPids.add(pid);
  expect(launched).toHaveLength(1);
  return { npm, launched: launched[0]!, url: LISTENING.exec(npm.stdout)![1]!, dataDir };
}

async function gone(pid: number, ms = 15_000): Promise<boolean> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(50)) if (!alive(pid)) return true;
  return !alive(pid);
}

describe('npm start', () => {
  it('launches the server itself (no shell between), with the allocator settings it sets for itself', async () => {
    const { npm, launched, url } = await npmStart();
    const [program, ...args] = cmdline(launched);
    expect(program).not.toMatch(/(^|\/)(sh|bash|dash)$/);
    expect(args.slice(-2)).toEqual([join(ROOT, 'bin/optmark.js'), 'serve']);
    // glibc 2.36 parses GLIBC_TUNABLES in place when the process starts, leaving a NUL where each ':' was.
    expect(environ(launched)).toMatch(/(^|\0)GLIBC_TUNABLES=glibc\.malloc\.mmap_threshold=67108864[:\0]glibc\.malloc\.trim_threshold=268435456(\0|$)/);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    await npm.stop();
  });

  it('SIGTERM to what npm launched stops the server cleanly: it finishes, unlocks the data directory, and npm ends too', async () => {
    const { npm, launched, url, dataDir } = await npmStart();
    await npm.waitFor(() => npm.stderr.includes('first-start.txt'), 'first-start line', 10_000);
    const key = firstStartKey(dataDir);
    expect((await postImage(url, key)).status).toBe(200);
    process.kill(launched, 'SIGTERM');
    expect(await gone(launched)).toBe(true);
    const exit = await npm.exited;
    expect(exit.code).toBe(0);
    expect(npm.stdout).toContain('stopping: finishing in-flight requests');
    expect(existsSync(join(dataDir, 'optmark.lock'))).toBe(false);
  });

  it('SIGTERM to npm itself reaches the server: nothing is left running', async () => {
    const { npm, launched, dataDir } = await npmStart();
    process.kill(npm.pid, 'SIGTERM');
    expect(await gone(launched)).toBe(true);
    await npm.exited;
    expect(npm.stdout).toContain('stopping: finishing in-flight requests');
    expect(existsSync(join(dataDir, 'optmark.lock'))).toBe(false);
  });
});
