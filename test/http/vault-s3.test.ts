/**
 * The Private Vault on an S3-compatible bucket (OPTMARK_VAULT_S3_URL; s3rver
 * on loopback): a marking's two files are objects of the bucket, read back
 * through the SDK sealed (not the file, named by no hash), given back
 * exactly by the dashboard, and gone from the bucket's listing once deleted.
 */
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SEAL_OVERHEAD } from '../../src/app/vault/sealing.js';
import { signInToDashboard, type DashboardSession } from '../support/dashboard.js';
import { generatedImages } from '../support/generated.js';
import { startS3, type TestS3 } from '../support/s3.js';
import { freshDataDir, startTestServer, type TestServer } from '../support/server.js';
import { contains, markOnPage, postVaultForm, storedFiles, turnVault, vaultRows } from '../support/vault.js';

const JPEG = (await generatedImages()).find((g) => g.name === 'baseline.jpg')!.bytes;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const dataDir = freshDataDir();
let s3: TestS3;
let t: TestServer;
let owner: DashboardSession;

beforeAll(async () => {
  s3 = await startS3();
  t = await startTestServer({ dataDir, env: { OPTMARK_VAULT_S3_URL: s3.url } });
  owner = await signInToDashboard(t, 'vault-bucket');
}, 60_000);
afterAll(async () => {
  await t?.close();
  await s3?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

it('keeps a marking as two sealed objects of the bucket, gives them back, and deletes them from it', async () => {
  expect((await turnVault(owner.browser, true)).status).toBe(200);
  const marked = await markOnPage(owner.browser, JPEG, 'bucket.jpg');
  expect(marked.vault?.state).toBe('stored');
  const { objects } = await vaultRows(t.server, 'vault-bucket');
  expect(await s3.keys()).toEqual(objects.map((o) => o.object_name).sort());
  for (const object of objects) {
    const stored = await s3.object(object.object_name);
    const plain = object.sha256 === sha256(JPEG) ? JPEG : marked.bytes;
    expect(stored.byteLength).toBe(plain.byteLength + SEAL_OVERHEAD);
    expect(Buffer.from(stored.subarray(0, 4)).toString('latin1')).toBe('OMV1');
    expect(contains(stored, plain)).toBe(false);
    expect([sha256(JPEG), sha256(marked.bytes)]).not.toContain(object.object_name);
  }
  // Nothing of the vault in the data directory: the bucket holds it.
  expect(storedFiles(`${dataDir}/vault`).files).toEqual([]);
  const original = await owner.browser.request(`/vault/${marked.vault!.fileId!}/original`, { site: 'same-origin' });
  expect(Buffer.from(await original.arrayBuffer()).equals(Buffer.from(JPEG))).toBe(true);
  expect((await postVaultForm(owner.browser, '/vault/delete', [['id', marked.vault!.fileId!], ['confirm', 'yes']])).status).toBe(200);
  expect(await s3.keys()).toEqual([]);
  expect(await vaultRows(t.server, 'vault-bucket')).toEqual({ objects: [], files: [] });
});
