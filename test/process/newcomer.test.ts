/**
 * The README quick start, as a newcomer lives it: `optmark serve` on an empty
 * data directory creates the embedded database, prints one key and a curl
 * line and names the key files it made, and that key protects a JPEG. A
 * restart prints no key and makes no file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { KEY_PATTERN, keysIn, killAll, postImage, startServe } from './support.js';

const dirs: string[] = [];
afterAll(async () => {
  await killAll();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

it('first start on an empty data dir prints one key, a curl line and the key files made, once; the key works; a restart prints none', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'optmark-newcomer-'));
  dirs.push(dataDir);

  // An empty directory: PGlite runs initdb here, which takes seconds.
  const first = await startServe({ OPTMARK_DATA_DIR: dataDir }, 60_000);
  await first.waitFor(() => first.stderr.includes('curl '), 'curl line on stderr', 5_000);
  const keys = new Set(keysIn(first.stderr));
  expect(keys.size).toBe(1);
  const key = [...keys][0]!;
  expect(first.stderr).toContain(`\n    ${key}\n`);
  expect(first.stderr).toContain(`curl -H "Authorization: Bearer ${key}" -F image=@photo.jpg ${first.url}/api/v1/protect`);
  expect(first.stderr).toContain('account "local"');
  expect(first.stdout).not.toContain(key);
  // The secrets made on this start are named, once each, as protect names them.
  const made = first.stderr.split('\n').filter((line) => line.includes('created a new'));
  expect(made.map((line) => line.slice(0, line.indexOf(';')))).toEqual([
    `optmark: created a new signing key ring in ${join(dataDir, 'signing-keys.json')}`,
    `optmark: created a new fingerprint key (version 1) in ${join(dataDir, 'fingerprint-keys.json')}`,
  ]);

  const response = await postImage(first.url, key);
  expect(response.status).toBe(200);
  const body = (await response.json()) as { imageBase64: string; mimeType: string; filename: string };
  expect(body.mimeType).toBe('image/jpeg');
  expect(body.filename).toBe('photo-optout.jpg');
  const marked = Buffer.from(body.imageBase64, 'base64');
  expect(marked.subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
  expect(marked.includes(Buffer.from('DMI-PROHIBITED-AIMLTRAINING'))).toBe(true);

  expect(await first.stop()).toEqual({ code: 0, signal: null });
  // Printed once: the key line and the curl line, nothing more.
  expect(first.stderr.split(key).length - 1).toBe(2);

  const second = await startServe({ OPTMARK_DATA_DIR: dataDir });
  expect((await postImage(second.url, key)).status).toBe(200);
  expect(await second.stop()).toEqual({ code: 0, signal: null });
  expect(second.stderr).not.toMatch(KEY_PATTERN);
  expect(second.stderr).not.toContain('curl');
  expect(second.stderr).not.toContain('created a new');
  expect(second.stdout).not.toMatch(KEY_PATTERN);
}, 120_000);
