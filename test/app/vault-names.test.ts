/**
 * A vault object's name is new each time a file is kept (app/vault/sealing.ts),
 * so that a removal still under way for a file removed (the periodic check's
 * sweep, which took its list before) cannot reach the bytes of the same file
 * kept again meanwhile. On the embedded database and the file storage, with
 * the storage's deletes held at a gate to put the steps in that order.
 * And a storage that cannot be asked for its id (identity.ts) at start
 * keeps nothing until a later check can ask it.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SqlVaultStore } from '../../src/adapters/db/vault-store.js';
import { systemClock } from '../../src/app/ports.js';
import type { BlobStore } from '../../src/app/vault/ports.js';
import { createVault, type KeepInput } from '../../src/app/vault/vault.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t?.close());

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** The server's own storage, with some of its calls replaced. */
const storage = (overrides: Partial<BlobStore>): BlobStore => {
  const real = t.server.vaultBlobs;
  return {
    kind: real.kind,
    put: (name, bytes) => real.put(name, bytes),
    stage: (name, bytes) => real.stage(name, bytes),
    get: (name) => real.get(name),
    delete: (name) => real.delete(name),
    list: () => real.list(),
    identity: () => real.identity(),
    close: async () => {},
    ...overrides,
  };
};

/** A marking to keep: `original` marked as `marked`. */
const marking = (accountId: string, user: KeepInput['user'], original: Buffer, marked: Buffer): KeepInput => ({
  account: { id: accountId },
  user,
  recordId: Promise.resolve(null),
  batchId: null,
  original: { bytes: original, sha256: sha256(original), mimeType: 'image/jpeg', name: 'a.jpg' },
  marked: { bytes: marked, sha256: sha256(marked), mimeType: 'image/jpeg', name: 'a-optout.jpg' },
});

it('a check whose sweep overlaps a removal and the same file kept again leaves the new bytes alone', async () => {
  const account = await t.server.admin.createAccount('vault-names', 'pro');
  const { user } = await t.server.people.createUser({ account: 'vault-names', email: 'owner@vault-names.example', role: 'owner', password: 'correct horse battery staple', actor: 'cli' });
  /** Deletes wait here, one gate each, while `holding` says so. */
  const gates: Array<() => void> = [];
  let holding = 0;
  const blobs = storage({
    async delete(name) {
      if (holding > 0) {
        holding -= 1;
        await new Promise<void>((resolve) => gates.push(resolve));
      }
      return t.server.vaultBlobs.delete(name);
    },
  });
  const store = new SqlVaultStore(t.server.database.db);
  const vault = createVault({ store, blobs, keys: t.server.vaultKeys, clock: systemClock, audit: async () => {} });
  await vault.setEnabled(user, 'pro', true, false, null);
  const original = Buffer.from('the original file '.repeat(20));
  const marked = Buffer.from('the marked file '.repeat(20));
  const input = () => marking(account.id, user, original, marked);
  const viewer = { accountId: account.id, userId: user.id, owner: true };
  const first = await vault.keep(input());
  expect(first.state).toBe('stored');
  await vault.idle();
  const firstName = (await store.object(account.id, sha256(original)))!.objectName;

  const until = async (n: number) => {
    while (gates.length < n) await new Promise((resolve) => setTimeout(resolve, 5));
  };
  // The removal's first delete of bytes waits; the check starts then, its sweep lists both objects, and its first delete waits too.
  holding = 2;
  const removing = vault.remove(viewer, [(first as { fileId: string }).fileId], user, null);
  await until(1);
  const checking = vault.check(0);
  await until(2);
  // The removal ends (bytes and rows gone), and the same file is kept again.
  gates[0]!();
  await removing;
  const again = await vault.keep(input());
  expect(again.state).toBe('stored');
  await vault.idle();
  // The check goes on with the list it took before.
  gates[1]!();
  const report = await checking;
  expect(report.missing).toBe(0);
  const listed = await vault.search(viewer, {});
  expect(listed.files.map((f) => f.id)).toEqual([(again as { fileId: string }).fileId]);
  expect((await vault.read(viewer, (again as { fileId: string }).fileId, 'original')).bytes.equals(original)).toBe(true);
  // Because the file kept again has a name of its own.
  expect((await store.object(account.id, sha256(original)))!.objectName).not.toBe(firstName);
});

it('a storage that cannot be asked for its id at start keeps nothing until a check can ask it', async () => {
  const account = await t.server.admin.createAccount('vault-unasked', 'pro');
  const { user } = await t.server.people.createUser({ account: 'vault-unasked', email: 'owner@vault-unasked.example', role: 'owner', password: 'correct horse battery staple', actor: 'cli' });
  let reachable = false;
  const blobs = storage({
    identity: async () => {
      if (!reachable) throw new Error('connect ECONNREFUSED 127.0.0.1:9000');
      return t.server.vaultBlobs.identity();
    },
  });
  const vault = createVault({ store: new SqlVaultStore(t.server.database.db), blobs, keys: t.server.vaultKeys, clock: systemClock, audit: async () => {} });
  await vault.setEnabled(user, 'pro', true, false, null);
  expect(await vault.claimIdentity('vault-keys.json')).toMatch(/could not be asked .*ECONNREFUSED.*asked again at the next check/);
  const bytes = Buffer.from('an original '.repeat(10));
  const input = () => marking(account.id, user, bytes, bytes);
  expect((await vault.keep(input())).state).toBe('not_stored');
  reachable = true;
  await vault.check(0);
  expect((await vault.keep(input())).state).toBe('stored');
});
