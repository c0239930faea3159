/**
 * A fingerprint key rotation as a running server lives it. What
 * docs/operations.md ("Fingerprint secrets") promises: `optmark
 * fingerprint-keys rotate` adds a version "which marks from then on, while
 * every version still in the file is looked for on verify"; `remove VERSION`
 * drops an old one, "after which its marks are no longer found"; and "a
 * running server rereads the file when it changes". So the server here is
 * started once and never restarted: the key file is changed under it by the
 * command line, as an operator would, and every check goes over HTTP.
 *
 * The server is polled after each change instead of being given a fixed
 * delay: the docs name no delay (the file's modification time is looked at
 * about once a second), and a poll is both quicker and not timing-fragile.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { killAll, optmarkJson, sleep } from '../process/support.js';
import { signInToDashboard } from '../support/dashboard.js';
import { freshDataDir, postImage, startTestServer, type TestServer } from '../support/server.js';
import { fixFingerprintKey, texturedPhoto } from './support.js';

interface Fingerprint {
  present: boolean;
  confidence: number;
  blocks: number;
}

const work = mkdtempSync(join(tmpdir(), 'optmark-fp-rotation-'));
let t: TestServer;
let apiKey: string;
/** The command line pointed at the server's own data directory: the same fingerprint-keys.json and signing-keys.json. */
let env: Record<string, string>;

/**
 * Version 1 is fixed before the server starts (it would create a random
 * one), so the marks made with it are the same on every run; version 2 is
 * made by `rotate`, at random, as an operator's would be.
 */
const dataDir = freshDataDir();
fixFingerprintKey(dataDir, 'optmark test: server rotation v1');

beforeAll(async () => {
  t = await startTestServer({ dataDir });
  apiKey = await t.key('pro', 'rotation');
  env = { OPTMARK_DATA_DIR: t.dataDir };
});
afterAll(async () => {
  await killAll();
  await t?.close();
  rmSync(work, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

async function fingerprintOf(bytes: Uint8Array): Promise<Fingerprint> {
  const response = await postImage(t.url, apiKey, bytes, { path: '/api/v1/verify' });
  expect(response.status).toBe(200);
  return ((await response.json()) as { fingerprint: Fingerprint }).fingerprint;
}

/** `optmark protect --fingerprint` on `bytes`: the marked file's bytes. */
async function markOnCommandLine(name: string, bytes: Uint8Array): Promise<Buffer> {
  const path = join(work, name);
  writeFileSync(path, bytes);
  const { output } = await optmarkJson<{ output: string }>(['protect', '--fingerprint', '--out', join(work, 'out'), path], env);
  return readFileSync(output);
}

/** Marked by the server itself: the dashboard's protect with its fingerprint box ticked (the server's only marking path). */
async function markOnServer(bytes: Uint8Array): Promise<Buffer> {
  const { cookie, formToken } = await signInToDashboard(t, 'rotation');
  const form = new FormData();
  form.append('csrf', formToken);
  form.append('fingerprint', 'on');
  form.append('image', new Blob([bytes], { type: 'image/jpeg' }), 'photo.jpg');
  const response = await fetch(`${t.url}/mark`, { method: 'POST', headers: { Cookie: cookie, 'Sec-Fetch-Site': 'same-origin' }, body: form });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('image/jpeg');
  return Buffer.from(await response.arrayBuffer());
}

/** Waits until the server's answer for `bytes` has `present` as asked; how long it took. */
async function untilServerSays(bytes: Uint8Array, present: boolean, what: string, timeoutMs = 10_000): Promise<number> {
  const start = Date.now();
  for (;;) {
    if ((await fingerprintOf(bytes)).present === present) return Date.now() - start;
    if (Date.now() - start > timeoutMs) throw new Error(`the running server did not pick up ${what} within ${timeoutMs} ms`);
    await sleep(100);
  }
}

it('a running server follows rotate and remove: v1 marks stay found while v1 is listed, v2 marks (its own too) are found, v1 marks stop being found once v1 is removed', async () => {
  const photos = await Promise.all([1, 2, 3].map((seed) => texturedPhoto(640, 480, 'jpeg', seed)));
  expect(await optmarkJson<Array<{ version: number; marking: boolean }>>(['fingerprint-keys', 'list'], env)).toMatchObject([{ version: 1, marking: true }]);

  // Version 1, the one fixed before the server started.
  const byV1 = await markOnCommandLine('v1.jpg', photos[0]!);
  expect(await fingerprintOf(photos[0]!)).toMatchObject({ present: false });
  expect(await fingerprintOf(byV1)).toMatchObject({ present: true });

  expect(await optmarkJson<{ version: number }>(['fingerprint-keys', 'rotate'], env)).toMatchObject({ version: 2, marking: true });
  const byV2 = await markOnCommandLine('v2.jpg', photos[1]!);
  // Not found by the server until it has reread the file: the poll shows it does, without a restart.
  await untilServerSays(byV2, true, 'version 2');
  // Version 1 is still listed, so its marks are still found.
  expect(await fingerprintOf(byV1)).toMatchObject({ present: true });
  // The server marks with the new version too (shown below: this mark outlives version 1).
  const byServer = await markOnServer(photos[2]!);
  expect(await fingerprintOf(byServer)).toMatchObject({ present: true });

  expect(await optmarkJson(['fingerprint-keys', 'remove', '1'], env)).toEqual({ removed: 1 });
  await untilServerSays(byV1, false, 'the removal of version 1');
  const gone = await fingerprintOf(byV1);
  // Looked at (blocks voted) and not found: a verdict, not an image that was skipped.
  expect(gone.blocks).toBeGreaterThan(64);
  expect(gone.confidence).toBeLessThan(0.7);
  // Version 2's marks, the command line's and the server's own, are still found.
  expect(await fingerprintOf(byV2)).toMatchObject({ present: true });
  expect(await fingerprintOf(byServer)).toMatchObject({ present: true });
  expect(await optmarkJson<Array<{ version: number; marking: boolean }>>(['fingerprint-keys', 'list'], env)).toMatchObject([{ version: 2, marking: true }]);
}, 120_000);
