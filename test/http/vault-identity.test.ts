/**
 * Every server on one database must share the vault's storage and keys
 * (app/vault/identity.ts): the first server's are written down; a second
 * server on the same PostgreSQL with a data directory of its own (its own
 * vault folder and key file) says so in its log at start, and then keeps,
 * opens and checks nothing, so that its check does not drop the files whose
 * bytes it cannot see (it did: every other server's files, at each start and
 * every 6 hours). A key file of the same version but other bytes, or one
 * missing the newest version, is told apart too.
 */
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VaultKeys } from '../../src/adapters/vault-keys.js';
import { SqlVaultStore } from '../../src/adapters/db/vault-store.js';
import { FileBlobStore } from '../../src/adapters/storage/filesystem.js';
import { vaultIdentityProblem } from '../../src/app/vault/identity.js';
import { signInToDashboard } from '../support/dashboard.js';
import { generatedImages } from '../support/generated.js';
import { freshDataDir, startTestServer, type TestServer } from '../support/server.js';
import { markOnPage, turnVault } from '../support/vault.js';

const JPEG = (await generatedImages()).find((g) => g.name === 'baseline.jpg')!.bytes;

let first: TestServer;
let second: TestServer;
const secondLog = new PassThrough();
let secondLogText = '';
secondLog.on('data', (chunk: Buffer) => (secondLogText += chunk.toString('utf8')));

beforeAll(async () => {
  first = await startTestServer({ backend: 'postgres' });
  second = await startTestServer({ backend: 'postgres', databaseUrl: first.databaseUrl!, logTo: secondLog });
});
afterAll(async () => {
  await second?.close();
  await first?.close();
});

describe('two servers on one PostgreSQL, each with a vault folder and key file of its own', () => {
  it('the second says so at start, keeps and opens nothing, and its check leaves the first server\'s files alone', async () => {
    expect(secondLogText).toContain("the Private Vault's storage (the vault folder of this data directory) is not the one this database's vault keeps its files in");
    expect(secondLogText).toContain('until then this server keeps, opens and checks no Private Vault file');

    const owner = await signInToDashboard(first, 'two-vaults');
    expect((await turnVault(owner.browser, true)).status).toBe(200);
    const kept = await markOnPage(owner.browser, JPEG, 'kept.jpg');
    expect(kept.vault?.state).toBe('stored');
    await first.server.vault.idle();

    // The same person through the second server (sessions are in the database).
    const throughSecond = await signInToDashboard(second, 'two-vaults');
    const notKept = await markOnPage(throughSecond.browser, JPEG, 'not kept.jpg', 'through-second');
    expect(notKept.vault?.state).toBe('not_stored');
    const download = await throughSecond.browser.request(`/vault/${kept.vault!.fileId}/original`, { site: 'same-origin', headers: { Accept: 'application/json' } });
    expect(download.status).toBe(503);
    expect(await download.json()).toMatchObject({ code: 'service_unavailable', error: expect.stringContaining('cannot be read through this server') });

    // The second server's check, at start and now, dropped nothing; the first server still serves the file.
    expect(await second.server.vault.check(0)).toEqual({ finished: 0, removed: 0, orphans: 0, missing: 0 });
    expect(await first.server.vault.check(0)).toMatchObject({ missing: 0 });
    const fromFirst = await owner.browser.request(`/vault/${kept.vault!.fileId}/original`, { site: 'same-origin' });
    expect(fromFirst.status).toBe(200);
    expect(Buffer.from(await fromFirst.arrayBuffer()).equals(Buffer.from(JPEG))).toBe(true);
  });

  it('a server sharing the storage but with another key file, or one behind on versions, is told which', async () => {
    const store = new SqlVaultStore(first.server.database.db);
    const blobs = new FileBlobStore(join(first.dataDir, 'vault'));
    const theirs = join(freshDataDir(), 'vault-keys.json');
    const other = VaultKeys.open(theirs);
    expect(await vaultIdentityProblem({ store, blobs, keys: other, keysPath: theirs })).toMatch(/^the Private Vault's key file .* is not the one this database's vault was sealed with \(version 1 differs\)/);
    // The first server's own key file, rotated by the command line: written down; a copy without the new version is behind.
    const ours = join(first.dataDir, 'vault-keys.json');
    const behind = join(freshDataDir(), 'vault-keys.json');
    copyFileSync(ours, behind);
    const keys = VaultKeys.open(ours);
    keys.rotate();
    expect(await vaultIdentityProblem({ store, blobs, keys, keysPath: ours })).toBeUndefined();
    expect(await vaultIdentityProblem({ store, blobs, keys: VaultKeys.open(behind), keysPath: behind })).toMatch(/lacks version 2, with which another server seals/);
  });
});
