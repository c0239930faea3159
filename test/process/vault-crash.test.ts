/**
 * A crash in the middle of keeping a marking in the vault, on both back ends
 * (files in the data directory, and an S3-compatible bucket: s3rver on
 * loopback). A real server process (the built one) kills itself with
 * SIGKILL, first after a marking's bytes are durable in storage and before
 * the database says they are stored, then (on the filesystem) while the
 * bytes are being written. Each time the next start's check leaves storage and database
 * consistent, no row without bytes and no bytes without a row: the marking
 * whose bytes were whole is finished (listed, counted, read back), the one
 * cut in its writes is undone (no row, no byte, nothing counted).
 */
import { spawn } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatedImages } from '../support/generated.js';
import { startS3, type TestS3 } from '../support/s3.js';
import { freshDataDir, startTestServer, type TestServer } from '../support/server.js';
import { storedFiles, markOnPage, imageForm, vaultRows } from '../support/vault.js';
import { WebClient } from '../support/web-client.js';
import { childEnv } from './support.js';

const images = await generatedImages();
const JPEG = images.find((g) => g.name === 'baseline.jpg')!.bytes;
const PNG = images.find((g) => g.name.endsWith('.png'))!.bytes;
const CHILD = fileURLToPath(new URL('./vault-crash-child.mjs', import.meta.url));
const PASSWORD = 'correct horse battery staple';
let s3: TestS3;

beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => {
  await s3?.close();
});

/** The server of vault-crash-child.mjs on `dataDir`, crashing `when`; resolves with its address, and `exited` when it dies. */
function crashingServer(dataDir: string, env: Record<string, string>, when: 'after-bytes' | 'during-write', account: string, email: string) {
  const child = spawn(process.execPath, [CHILD, when, account, email, PASSWORD], { env: childEnv({ OPTMARK_DATA_DIR: dataDir, PORT: '0', OPTMARK_LOG_LEVEL: 'silent', ...env }), stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
  const url = new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /\{"url":"([^"]+)"\}/.exec(out);
      if (match) resolve(match[1]!);
    });
    void exited.then(() => reject(new Error(`the server stopped before it listened: ${stderr}`)));
  });
  return { url, exited };
}

/** Mark `name` on a server that dies doing so; resolves once it is dead. */
async function markAndCrash(dataDir: string, env: Record<string, string>, account: string, email: string, when: 'after-bytes' | 'during-write', bytes: Uint8Array, name: string): Promise<void> {
  const crashing = crashingServer(dataDir, env, when, account, email);
  const browser = new WebClient(await crashing.url);
  expect((await browser.signIn(email, PASSWORD)).status).toBe(303);
  const batch = await browser.app('/app/batches');
  const dying = browser.app('/app/mark', { body: imageForm(bytes, name), headers: { 'X-Batch-Id': String(batch.json.id), 'Idempotency-Key': `crash-${when}` } }).catch((error: unknown) => error);
  expect(await crashing.exited).toBe('SIGKILL');
  expect(await dying).toBeInstanceOf(Error);
}

/** What the storage holds: the bucket's keys, or the vault directory's files (temporary files included). */
async function storageNames(dataDir: string, s3Url: string | undefined): Promise<string[]> {
  if (s3Url) return s3.keys();
  return storedFiles(join(dataDir, 'vault')).files.map((f) => f.name).sort();
}

describe.each([['filesystem'], ['s3']] as const)('a crash while keeping a marking (%s)', (kind) => {
  let dataDir: string;
  let t: TestServer | undefined;
  afterAll(async () => {
    await t?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('leaves storage and database consistent after the next start: finished when the bytes were whole, undone when not', async () => {
    dataDir = freshDataDir();
    const env: Record<string, string> = kind === 's3' ? { OPTMARK_VAULT_S3_URL: s3.url } : {};
    const account = `crash-${kind}`;
    const email = `owner-${kind}@crash.example`;
    // (The account, its owner and its vault, on, are made by the first crashing server before it listens.)
    // 1. Killed between the two writes: the bytes are durable, the rows still say `writing`.
    await markAndCrash(dataDir, env, account, email, 'after-bytes', JPEG, 'whole.jpg');
    expect((await storageNames(dataDir, env.OPTMARK_VAULT_S3_URL)).length).toBe(2);
    t = await startTestServer({ dataDir, env });
    const finished = await vaultRows(t.server, account);
    expect(finished.files.map((f) => f.state)).toEqual(['stored']);
    expect(finished.objects.map((o) => o.state)).toEqual(['stored', 'stored']);
    expect(await storageNames(dataDir, env.OPTMARK_VAULT_S3_URL)).toEqual(finished.objects.map((o) => o.object_name).sort());
    const accountId = (await t.server.admin.showAccount(account)).id;
    expect(await t.server.vault.status(accountId)).toMatchObject({ used: finished.objects.reduce((sum, o) => sum + o.size, 0), files: 1 });
    const reader = new WebClient(t.url);
    expect((await reader.signIn(email, PASSWORD)).status).toBe(303);
    const original = await reader.request(`/vault/${finished.files[0]!.id}/original`, { site: 'same-origin' });
    expect(Buffer.from(await original.arrayBuffer()).equals(Buffer.from(JPEG))).toBe(true);
    // 2. Killed while the bytes are being written (on one back end: the check's undoing is the same on both): nothing of that marking is left after the next start.
    if (kind === 'filesystem') {
      await t.close();
      t = undefined;
      await markAndCrash(dataDir, env, account, email, 'during-write', PNG, 'cut.png');
      t = await startTestServer({ dataDir, env });
      expect(await vaultRows(t.server, account)).toEqual(finished);
      expect(await storageNames(dataDir, env.OPTMARK_VAULT_S3_URL)).toEqual(finished.objects.map((o) => o.object_name).sort());
      expect(await t.server.vault.status(accountId)).toMatchObject({ used: finished.objects.reduce((sum, o) => sum + o.size, 0), files: 1 });
    }

    // And the vault works on: a marking is kept whole, its bytes named by its rows.
    const again = new WebClient(t.url);
    expect((await again.signIn(email, PASSWORD)).status).toBe(303);
    const kept = await markOnPage(again, PNG, 'kept.png');
    expect(kept.vault?.state).toBe('stored');
    const after = await vaultRows(t.server, account);
    expect(after.files.map((f) => f.state)).toEqual(['stored', 'stored']);
    expect(await storageNames(dataDir, env.OPTMARK_VAULT_S3_URL)).toEqual(after.objects.map((o) => o.object_name).sort());
    // No temporary file is left: only objects, and the storage's id.
    if (kind === 'filesystem') expect(readdirSync(join(dataDir, 'vault')).filter((name) => name !== 'storage-id').every((name) => /^[0-9a-f]{64}$/.test(name))).toBe(true);
  });
});
