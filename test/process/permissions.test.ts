/**
 * What `optmark serve` creates is for its user alone, whatever the umask it
 * is started with and whatever the mode of a data directory that already
 * exists (a `mkdir data`, a container volume): the embedded database's files,
 * the key files, the lock and the admin socket. A data directory or key file
 * that other users can write refuses the start in one line; one they can
 * read starts with a warning in the log.
 */
import { spawn } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { copyMigratedDatabase } from '../support/data-dir.js';
import { BIN, Child, childEnv, firstStartKey, killAll, postImage, type Server } from './support.js';

const work = mkdtempSync(join(tmpdir(), 'optmark-permissions-'));
afterAll(async () => {
  await killAll();
  rmSync(work, { recursive: true, force: true });
});

/** `optmark serve` started by a shell with this umask, as a service manager or a login shell would start it. */
function serveWithUmask(umask: string, env: Record<string, string>): Child {
  const proc = spawn('/bin/sh', ['-c', `umask ${umask}; exec "$@"`, 'sh', process.execPath, BIN, 'serve'], {
    env: childEnv({ PORT: '0', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Child(proc);
}

const LISTENING = /"msg":"Server listening at (http:\/\/[^"]+)"/;

async function listening(child: Child): Promise<Server> {
  await child.waitFor(() => LISTENING.test(child.stdout), 'listening log line', 60_000);
  return Object.assign(child, { url: LISTENING.exec(child.stdout)![1]! });
}

/** Every path under `dir` (not `dir` itself) that group or others may use at all, with its mode. */
function notPrivate(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath, entry.name);
    const { mode } = lstatSync(path);
    if (mode & 0o077) found.push(`${path.slice(dir.length + 1)} ${(mode & 0o777).toString(8)}`);
  }
  return found;
}

const modeOf = (path: string) => lstatSync(path).mode & 0o7777;

describe('a data directory made beforehand with mode 0755, a server started with the umask 022', () => {
  it('makes every file and directory it or PGlite creates private (0600, 0700), keeps them so, and warns that the directory itself can be read', async () => {
    const dataDir = join(work, 'premade');
    mkdirSync(dataDir);
    chmodSync(dataDir, 0o755);
    const server = await listening(serveWithUmask('022', { OPTMARK_DATA_DIR: dataDir }));
    // Some writes while it runs: a call counted, so usage rows and WAL are written.
    await server.waitFor(() => server.stderr.includes('first-start.txt'), 'first-start line', 10_000);
    const key = firstStartKey(dataDir);
    expect((await postImage(server.url, key)).status).toBe(200);
    // While it runs, nothing in the directory is open to others: the database's directories are 0700 from the start.
    expect(modeOf(join(dataDir, 'pgdata'))).toBe(0o700);
    expect(modeOf(join(dataDir, 'admin.sock')) & 0o077).toBe(0);
    expect(modeOf(join(dataDir, 'signing-keys.json'))).toBe(0o600);
    expect(modeOf(join(dataDir, 'fingerprint-keys.json'))).toBe(0o600);
    expect(modeOf(join(dataDir, 'optmark.lock'))).toBe(0o600);
    const stopped = await server.stop();
    expect(stopped.code, `${JSON.stringify(stopped)}\n${server.stdout.slice(-3000)}\n${server.stderr.slice(-1000)}`).toBe(0);

    expect(notPrivate(dataDir)).toEqual([]);
    // The directory given is left as it was, with a warning naming it.
    expect(modeOf(dataDir)).toBe(0o755);
    const warnings = server.stdout.split('\n').filter((line) => line.includes('"level":40'));
    expect(warnings.some((line) => line.includes(`the data directory ${dataDir} can be read by other users (mode 0755)`))).toBe(true);

    // A restart on the files as left (PGlite's new files included) finds and leaves them private.
    const again = await listening(serveWithUmask('000', { OPTMARK_DATA_DIR: dataDir }));
    expect((await postImage(again.url, key)).status).toBe(200);
    const stoppedAgain = await again.stop();
    expect(stoppedAgain.code, `${JSON.stringify(stoppedAgain)}\n${again.stdout.slice(-3000)}\n${again.stderr.slice(-1000)}`).toBe(0);
    expect(notPrivate(dataDir)).toEqual([]);
  });
});

describe('paths other users can write', () => {
  /** A refused start: exit 1, one line on standard error, and nothing created. */
  async function refused(env: Record<string, string>): Promise<string> {
    const child = serveWithUmask('022', env);
    const exit = await child.exited;
    expect(exit.code).toBe(1);
    const lines = child.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    return lines[0]!;
  }

  it('a data directory others can write (0775): refused in one line, nothing created in it', async () => {
    const dataDir = join(work, 'group-writable');
    mkdirSync(dataDir);
    chmodSync(dataDir, 0o775);
    const line = await refused({ OPTMARK_DATA_DIR: dataDir });
    expect(line).toBe(`optmark: the data directory ${dataDir} can be written by other users (mode 0775), who could change what it holds; refusing to start (chmod 700 ${dataDir})`);
    expect(readdirSync(dataDir)).toEqual([]);
  });

  it('a key file others can write (0666) is refused; one they can read (0644) starts with a warning', async () => {
    const dataDir = join(work, 'keys-data');
    // A data directory holding a copy of the migrated database (the test above covers what PGlite's initdb creates; it costs seconds of CPU).
    mkdirSync(dataDir, { mode: 0o700 });
    copyMigratedDatabase(dataDir);
    const keys = join(work, 'keys');
    mkdirSync(keys, { mode: 0o700 });
    const signing = join(keys, 'signing-keys.json');
    // The key file as a first start makes it, then opened up.
    const first = await listening(serveWithUmask('022', { OPTMARK_DATA_DIR: dataDir, OPTMARK_SIGNING_KEYS: signing }));
    expect((await first.stop()).code).toBe(0);
    chmodSync(signing, 0o666);
    expect(await refused({ OPTMARK_DATA_DIR: dataDir, OPTMARK_SIGNING_KEYS: signing })).toMatch(
      new RegExp(`^optmark: the signing key file ${signing} can be written by other users \\(mode 0666\\)`),
    );

    chmodSync(signing, 0o644);
    const readable = await listening(serveWithUmask('022', { OPTMARK_DATA_DIR: dataDir, OPTMARK_SIGNING_KEYS: signing }));
    const stopped = await readable.stop();
    // A stop that failed says how (its signal, the end of its log).
    expect(stopped.code, `${JSON.stringify(stopped)}\n${readable.stdout.slice(-2000)}\n${readable.stderr.slice(-1000)}`).toBe(0);
    expect(readable.stdout).toContain(`the signing key file ${signing} can be read by other users (mode 0644); chmod 600 ${signing} to keep them out`);
  });

  it("a key file in a directory others can write (0777, not sticky) is refused: the file could be replaced", async () => {
    const shared = join(work, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    const fingerprint = join(shared, 'fingerprint-keys.json');
    writeFileSync(fingerprint, JSON.stringify({ format: 'optmark-fingerprint-keys', secrets: [{ version: 1, createdAt: '2026-01-01T00:00:00.000Z', secret: Buffer.alloc(32, 7).toString('base64') }] }), { mode: 0o600 });
    chmodSync(fingerprint, 0o600);
    expect(await refused({ OPTMARK_DATA_DIR: join(work, 'shared-data'), OPTMARK_FINGERPRINT_KEYS: fingerprint })).toMatch(
      new RegExp(`^optmark: the directory ${shared} of the fingerprint key file can be written by other users \\(mode 0777`),
    );
  });
});
