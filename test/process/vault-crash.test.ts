/**
 * A crash between the vault's two writes, on both back ends (files in the
 * data directory, and an S3-compatible bucket: s3rver on loopback). A real
 * server process (the built one) is killed with SIGKILL after a marking's
 * bytes are durable in storage and before the database says they are
 * stored: the database holds rows still `writing` and the storage their
 * bytes. The next start's check leaves them consistent: no row without
 * bytes, no bytes without a row; the vault counts nothing for them; and a
 * marking after the restart is kept whole.
 */
import { spawn } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatedImages } from '../support/generated.js';
import { startS3, type TestS3 } from '../support/s3.js';
import { freshDataDir, startTestServer, type TestServer } from '../support/server.js';
import { storedFiles, turnVault, markOnPage, imageForm, vaultRows } from '../support/vault.js';
import { WebClient } from '../support/web-client.js';
import { childEnv } from './support.js';

const JPEG = (await generatedImages()).find((g) => g.name === 'baseline.jpg')!.bytes;
const CHILD = fileURLToPath(new URL('./vault-crash-child.mjs', import.meta.url));
const PASSWORD = 'correct horse battery staple';
let s3: TestS3;

beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => {
  await s3?.close();
});

/** The server of vault-crash-child.mjs on `dataDir`; resolves with its address, and `exited` when it dies. */
function crashingServer(dataDir: string, env: Record<string, string>) {
  const child = spawn(process.execPath, [CHILD], { env: childEnv({ OPTMARK_DATA_DIR: dataDir, PORT: '0', OPTMARK_LOG_LEVEL: 'silent', ...env }), stdio: ['ignore', 'pipe', 'pipe'] });
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
  return { url, exited, kill: () => child.kill('SIGKILL') };
}

/** What the storage holds: the bucket's keys, or the vault directory's files (temporary files included). */
async function storageNames(dataDir: string, s3Url: string | undefined): Promise<string[]> {
  if (s3Url) return s3.keys();
  return storedFiles(join(dataDir, 'vault')).files.map((f) => f.name).sort();
}

describe.each([['filesystem'], ['s3']] as const)('a crash between the two writes (%s)', (kind) => {
  let dataDir: string;
  let t: TestServer | undefined;
  afterAll(async () => {
    await t?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('leaves storage and database consistent after the next start', async () => {
    dataDir = freshDataDir();
    const env: Record<string, string> = kind === 's3' ? { OPTMARK_VAULT_S3_URL: s3.url } : {};
    const email = `owner-${kind}@crash.example`;
    // The account, its owner and its vault, on: made by a first server, then stopped.
    t = await startTestServer({ dataDir, env });
    await t.server.admin.createAccount(`crash-${kind}`, 'pro');
    await t.server.people.createUser({ account: `crash-${kind}`, email, role: 'owner', password: PASSWORD, actor: 'cli' });
    const setup = new WebClient(t.url);
    expect((await setup.signIn(email, PASSWORD)).status).toBe(303);
    expect((await turnVault(setup, true)).status).toBe(200);
    await t.close();
    t = undefined;

    // The server that dies between the two writes.
    const crashing = crashingServer(dataDir, env);
    const browser = new WebClient(await crashing.url);
    expect((await browser.signIn(email, PASSWORD)).status).toBe(303);
    const batch = await browser.app('/app/batches');
    const dying = browser.app('/app/mark', { body: imageForm(JPEG, 'lost.jpg'), headers: { 'X-Batch-Id': String(batch.json.id), 'Idempotency-Key': 'crash' } }).catch((error: unknown) => error);
    expect(await crashing.exited).toBe('SIGKILL');
    expect(await dying).toBeInstanceOf(Error);

    // Half done: the bytes are in storage, the rows say `writing`.
    const before = await storageNames(dataDir, env.OPTMARK_VAULT_S3_URL);
    expect(before.length).toBe(2);

    t = await startTestServer({ dataDir, env });
    const rows = await vaultRows(t.server.database.db, `crash-${kind}`);
    expect(rows).toEqual({ objects: [], files: [] });
    expect(await storageNames(dataDir, env.OPTMARK_VAULT_S3_URL)).toEqual([]);
    const account = (await t.server.admin.showAccount(`crash-${kind}`)).id;
    expect(await t.server.vault.status(account)).toMatchObject({ used: 0, files: 0, enabled: true });

    // And the vault works on: a marking is kept whole, its bytes named by its rows.
    const again = new WebClient(t.url);
    expect((await again.signIn(email, PASSWORD)).status).toBe(303);
    const kept = await markOnPage(again, JPEG, 'kept.jpg');
    expect(kept.vault?.state).toBe('stored');
    const after = await vaultRows(t.server.database.db, `crash-${kind}`);
    expect(after.files.map((f) => f.state)).toEqual(['stored']);
    expect(await storageNames(dataDir, env.OPTMARK_VAULT_S3_URL)).toEqual(after.objects.map((o) => o.object_name).sort());
    if (kind === 'filesystem') expect(readdirSync(join(dataDir, 'vault')).every((name) => /^[0-9a-f]{64}$/.test(name))).toBe(true);
  });
});
