/**
 * The admin socket of a data directory whose path is too long for a Unix
 * socket (about 107 bytes) is served where its path is short, in this
 * user's private directory, and the CLI finds it there: keys can be issued
 * and revoked while the server runs. A server that cannot listen on its
 * admin socket does not start (it used to start without one, silently).
 */
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { adminSocketPath } from '../../src/server/admin-socket.js';
import { killAll, optmarkJson, postImage, spawnOptmark, startServe } from './support.js';

const work = mkdtempSync(join(tmpdir(), 'optmark-socket-path-'));
afterAll(async () => {
  await killAll();
  rmSync(work, { recursive: true, force: true });
});

/** A data directory at `dir` holding the migrated template database. */
function dataDirAt(dir: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  cpSync(join(inject('pgliteTemplate'), 'pgdata'), join(dir, 'pgdata'), { recursive: true });
  return dir;
}

describe('a data directory whose path is too long for a Unix socket', () => {
  it('serves its admin socket from a short path of its own: keys are issued and revoked while the server runs', async () => {
    const dataDir = dataDirAt(join(work, 'a-data-directory-with-a-long-name'.repeat(2), 'and-deeper-still'.repeat(2)));
    expect(Buffer.byteLength(join(dataDir, 'admin.sock'))).toBeGreaterThan(107);
    const env = { OPTMARK_DATA_DIR: dataDir };
    const server = await startServe(env);
    const socket = adminSocketPath(dataDir);
    expect(socket.startsWith(`/tmp/optmark-${process.getuid!()}/`)).toBe(true);
    expect(lstatSync(socket).isSocket()).toBe(true);
    // Its directory is this user's alone.
    const directory = lstatSync(join(socket, '..'));
    expect(directory.uid).toBe(process.getuid!());
    expect(directory.mode & 0o777).toBe(0o700);

    // Through the socket (the server holds the data directory's lock, so the CLI could not open the database itself).
    await optmarkJson(['accounts', 'create', '--name', 'long', '--plan', 'pro'], env);
    const issued = await optmarkJson<{ id: string; key: string }>(['keys', 'issue', '--account', 'long'], env);
    expect((await postImage(server.url, issued.key)).status).toBe(200);
    await optmarkJson(['keys', 'revoke', issued.id], env);
    expect((await postImage(server.url, issued.key)).status).toBe(401);

    expect((await server.stop()).code).toBe(0);
    expect(existsSync(socket)).toBe(false);
  });
});

describe('an admin socket that cannot be served', () => {
  it('refuses the start in one line naming the socket', async () => {
    const dataDir = dataDirAt(join(work, 'occupied'));
    // Something that is not a socket where the socket must go.
    mkdirSync(join(dataDir, 'admin.sock'));
    const child = spawnOptmark(['serve'], { OPTMARK_DATA_DIR: dataDir, PORT: '0' });
    const exit = await child.exited;
    expect(exit.code).toBe(1);
    expect(child.stderr.trim()).toBe(`optmark: could not listen on the admin socket ${join(dataDir, 'admin.sock')}: something that is not a socket is in its place`);
    // Nothing is left holding the data directory.
    expect(existsSync(join(dataDir, 'optmark.lock'))).toBe(false);
  });
});
