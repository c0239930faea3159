/**
 * `optmark vault-key rotate`, the documented command (docs/operations.md):
 * on a stopped server's data directory it re-seals every object of the
 * vault under a new key version, drops the old one, and the next server
 * gives every file back exactly; while the server runs it refuses, saying
 * to stop it; `list` shows the versions.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { signInToDashboard } from '../support/dashboard.js';
import { generatedImages } from '../support/generated.js';
import { freshDataDir, startTestServer, type TestServer } from '../support/server.js';
import { markOnPage, storedFiles, turnVault, vaultRows } from '../support/vault.js';
import { WebClient } from '../support/web-client.js';
import { BIN, childEnv } from './support.js';

const PNG = (await generatedImages()).find((g) => g.name.endsWith('.png'))!.bytes;
const dataDir = freshDataDir();
let t: TestServer | undefined;
afterAll(async () => {
  await t?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const optmark = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { env: childEnv({ OPTMARK_DATA_DIR: dataDir }), encoding: 'utf8' });

it('re-seals every object under a new key and drops the old one; the files read back after', async () => {
  t = await startTestServer({ dataDir });
  const owner = await signInToDashboard(t, 'vault-rotate');
  expect((await turnVault(owner.browser, true)).status).toBe(200);
  const marked = await markOnPage(owner.browser, PNG, 'rotate me.png');
  const before = await vaultRows(t.server, 'vault-rotate');
  // While the server holds the data directory: refused, with what to do.
  const refused = optmark('vault-key', 'rotate', '--json');
  expect(refused.status).toBe(1);
  expect(JSON.parse(refused.stdout)).toMatchObject({ code: 'data_dir_locked' });
  await t.close();
  t = undefined;

  const rotated = optmark('vault-key', 'rotate', '--json');
  expect(rotated.status, rotated.stderr).toBe(0);
  expect(JSON.parse(rotated.stdout)).toEqual({ version: 2, moved: 2, remaining: 0, dropped: [1] });
  const keyFile = JSON.parse(readFileSync(join(dataDir, 'vault-keys.json'), 'utf8')) as { keys: Array<{ version: number }> };
  expect(keyFile.keys.map((k) => k.version)).toEqual([2]);
  expect(JSON.parse(execFileSync(process.execPath, [BIN, 'vault-key', 'list', '--json'], { env: childEnv({ OPTMARK_DATA_DIR: dataDir }), encoding: 'utf8' }))).toEqual([
    expect.objectContaining({ version: 2, active: true }),
  ]);

  t = await startTestServer({ dataDir });
  const after = await vaultRows(t.server, 'vault-rotate');
  expect(after.objects.every((o) => o.key_version === 2)).toBe(true);
  expect(after.objects.some((o) => before.objects.some((b) => b.object_name === o.object_name))).toBe(false);
  expect(storedFiles(join(dataDir, 'vault')).files.map((f) => f.name).sort()).toEqual(after.objects.map((o) => o.object_name).sort());
  const browser = new WebClient(t.url);
  const password = 'another fine password';
  await t.server.people.createUser({ account: 'vault-rotate', email: 'second@rotate.example', role: 'owner', password, actor: 'cli' });
  expect((await browser.signIn('second@rotate.example', password)).status).toBe(303);
  for (const [which, bytes] of [['original', PNG], ['marked', marked.bytes]] as const) {
    const response = await browser.request(`/vault/${marked.vault!.fileId!}/${which}`, { site: 'same-origin' });
    expect(Buffer.from(await response.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
  }
});
