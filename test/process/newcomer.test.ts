/**
 * The README quick start, as a newcomer lives it: `optmark serve` on an empty
 * data directory creates the embedded database and the `local` account with
 * its owner, writes the owner's API key and set-up link into a file only the
 * user can read (never into the output, which service managers keep), names
 * the key files it made, and that key protects a JPEG. A restart writes
 * nothing; a start that fails before it listens creates nothing.
 */
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { keysIn, killAll, optmark, optmarkJson, postImage, startServe } from './support.js';

const dirs: string[] = [];
afterAll(async () => {
  await killAll();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

it('first start on an empty data dir writes the key and the owner link to a private file, says where, and prints no secret; the key works; a restart writes nothing', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'optmark-newcomer-'));
  dirs.push(dataDir);
  const file = join(dataDir, 'first-start.txt');

  // An empty directory: PGlite runs initdb here, which takes seconds.
  const first = await startServe({ OPTMARK_DATA_DIR: dataDir }, 60_000);
  await first.waitFor(() => first.stderr.includes('lost them?'), 'first-start lines on stderr', 10_000);
  // Standard error is not a terminal here (a service manager's log): the file's path, never the key.
  expect(keysIn(first.stderr + first.stdout)).toEqual([]);
  expect(first.stderr).toContain(`optmark: first start: created the account "local" (Lifetime plan) with its owner owner@localhost.`);
  expect(first.stderr).toContain(`its API key and the owner's set-up link are in ${file} (only you can read it`);
  expect(first.stderr).toContain('optmark keys issue --account local --user owner@localhost; optmark users reset owner@localhost');
  // The secrets made on this start are named, once each, as protect names them.
  const made = first.stderr.split('\n').filter((line) => line.includes('created a new'));
  expect(made.map((line) => line.slice(0, line.indexOf(';')))).toEqual([
    `optmark: created a new signing key ring in ${join(dataDir, 'signing-keys.json')}`,
    `optmark: created a new fingerprint key (version 1) in ${join(dataDir, 'fingerprint-keys.json')}`,
  ]);

  expect(statSync(file).mode & 0o777).toBe(0o600);
  const text = readFileSync(file, 'utf8');
  const keys = new Set(keysIn(text));
  expect(keys.size).toBe(1);
  const key = [...keys][0]!;
  expect(text).toContain(`curl -H "Authorization: Bearer ${key}" -F image=@photo.jpg ${first.url}/api/v1/protect`);
  expect(text).toMatch(new RegExp(`${first.url.replace(/[.]/g, '\\.')}/link\\?token=[A-Za-z0-9_-]{43}`));

  const response = await postImage(first.url, key);
  expect(response.status).toBe(200);
  const body = (await response.json()) as { imageBase64: string; mimeType: string; filename: string };
  expect(body.mimeType).toBe('image/jpeg');
  expect(body.filename).toBe('photo-optout.jpg');
  const marked = Buffer.from(body.imageBase64, 'base64');
  expect(marked.subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
  expect(marked.includes(Buffer.from('DMI-PROHIBITED-AIMLTRAINING'))).toBe(true);
  expect(await first.stop()).toEqual({ code: 0, signal: null });

  const second = await startServe({ OPTMARK_DATA_DIR: dataDir });
  expect((await postImage(second.url, key)).status).toBe(200);
  expect(await second.stop()).toEqual({ code: 0, signal: null });
  expect(second.stderr).not.toContain('first start');
  expect(second.stderr).not.toContain('created a new');
  expect(keysIn(second.stderr + second.stdout)).toEqual([]);
  expect(readFileSync(file, 'utf8')).toBe(text);
  expect(readdirSync(dataDir).filter((name) => name.startsWith('first-start'))).toEqual(['first-start.txt']);
}, 120_000);

it('a start that fails before it listens creates nothing: no account, no file', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'optmark-newcomer-'));
  dirs.push(dataDir);
  // Its port is taken: the database opens and migrates, the listen fails.
  const blocker = createServer().listen(0, '127.0.0.1');
  await once(blocker, 'listening');
  const port = (blocker.address() as AddressInfo).port;
  try {
    const failed = await optmark(['serve'], { OPTMARK_DATA_DIR: dataDir, PORT: String(port) }, 60_000);
    expect(failed.code).not.toBe(0);
    expect(failed.stderr).toContain('EADDRINUSE');
  } finally {
    blocker.close();
  }
  expect(existsSync(join(dataDir, 'first-start.txt'))).toBe(false);
  expect(await optmarkJson<unknown[]>(['accounts', 'list'], { OPTMARK_DATA_DIR: dataDir })).toEqual([]);
}, 120_000);
