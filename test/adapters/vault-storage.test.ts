/**
 * The vault's storage behind one interface, on both back ends: files under
 * a directory and an S3-compatible bucket (s3rver on loopback). The same
 * checks for each: an object of 5 MiB and a small one read back exactly
 * (the bucket stores the bytes sent, not an upload's aws-chunked framing),
 * listed with their dates, removed for good, a missing one is undefined
 * and removing it again is no error. And the sealing: what is stored is
 * not the file, does not open under another name or once changed, and an
 * older key version still opens what it sealed.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileBlobStore } from '../../src/adapters/storage/filesystem.js';
import { parseS3Url, S3BlobStore } from '../../src/adapters/storage/s3.js';
import { VaultKeys } from '../../src/adapters/vault-keys.js';
import type { BlobStore } from '../../src/app/vault/ports.js';
import { objectName, open, seal, SEAL_OVERHEAD, SealError } from '../../src/app/vault/sealing.js';
import { startS3, type TestS3 } from '../support/s3.js';
import { contains } from '../support/vault.js';

const scratch = mkdtempSync(join(tmpdir(), 'optmark-vault-storage-'));
let s3: TestS3;

beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => {
  await s3?.close();
  rmSync(scratch, { recursive: true, force: true });
});

const name = () => randomBytes(32).toString('hex');

const backends: Array<[string, () => BlobStore]> = [
  ['filesystem', () => new FileBlobStore(join(scratch, 'vault'))],
  ['s3', () => new S3BlobStore(parseS3Url(s3.url))],
];

describe.each(backends)('the %s back end', (kind, make) => {
  it('writes, lists, reads back exactly and removes for good', async () => {
    const blobs = make();
    const big = { name: name(), bytes: randomBytes(5 * 1024 * 1024) };
    const small = { name: name(), bytes: randomBytes(100) };
    const started = Date.now() - 2000;
    await blobs.put(big.name, big.bytes);
    await blobs.put(small.name, small.bytes);
    expect(Buffer.from((await blobs.get(big.name))!).equals(big.bytes)).toBe(true);
    expect(Buffer.from((await blobs.get(small.name))!).equals(small.bytes)).toBe(true);
    if (kind === 's3') {
      // Read back through the SDK as the bucket holds it: exactly the bytes sent (no aws-chunked framing).
      const stored = await s3.object(big.name);
      expect(stored.byteLength).toBe(big.bytes.byteLength);
      expect(Buffer.from(stored).equals(big.bytes)).toBe(true);
    } else {
      const file = join(scratch, 'vault', big.name);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(statSync(join(scratch, 'vault')).mode & 0o777).toBe(0o700);
    }
    const listed = new Map<string, Date>();
    for await (const entry of blobs.list()) listed.set(entry.name, entry.modifiedAt);
    expect(listed.has(big.name) && listed.has(small.name)).toBe(true);
    expect(listed.get(big.name)!.getTime()).toBeGreaterThan(started);
    await blobs.delete(big.name);
    await blobs.delete(small.name);
    await blobs.delete(small.name);
    expect(await blobs.get(big.name)).toBeUndefined();
    const after: string[] = [];
    for await (const entry of blobs.list()) after.push(entry.name);
    expect(after).not.toContain(big.name);
    expect(after).not.toContain(small.name);
    if (kind === 's3') expect(await s3.keys()).toEqual([]);
    await blobs.close();
  });

  it('stages bytes under no name: published, they are the object; discarded, nothing is left', async () => {
    const blobs = make();
    const kept = { name: name(), bytes: randomBytes(1000) };
    const dropped = { name: name(), bytes: randomBytes(1000) };
    const a = await blobs.stage(kept.name, kept.bytes);
    const b = await blobs.stage(dropped.name, dropped.bytes);
    expect(await blobs.get(kept.name)).toBeUndefined();
    await a.publish();
    await b.discard();
    expect(Buffer.from((await blobs.get(kept.name))!).equals(kept.bytes)).toBe(true);
    const listed: string[] = [];
    for await (const entry of blobs.list()) listed.push(entry.name);
    expect(listed).toEqual([kept.name]);
    await blobs.delete(kept.name);
    await blobs.close();
  });

  it('refuses a name that is not an object name', async () => {
    const blobs = make();
    await expect(blobs.put('../escape', new Uint8Array(1))).rejects.toThrow(/not a vault object name/);
    await blobs.close();
  });
});

describe('sealing', () => {
  it('stores what is not the file, which opens only under its own name, unchanged, with a key version the file has', () => {
    const keys = VaultKeys.open(join(scratch, 'vault-keys.json'));
    const plain = randomBytes(64 * 1024);
    const account = '0b3c7a8e-5d2f-4c1a-9e6b-2f1d0c9a8b7e';
    const objectA = objectName(keys.active, account, 'a'.repeat(64));
    expect(objectA).toMatch(/^[0-9a-f]{64}$/);
    expect(objectName(keys.active, '1b3c7a8e-5d2f-4c1a-9e6b-2f1d0c9a8b7e', 'a'.repeat(64))).not.toBe(objectA);
    // A new object of the same file of the same account: a name of its own.
    expect(objectName(keys.active, account, 'a'.repeat(64))).not.toBe(objectA);
    const sealed = seal(keys.active, objectA, plain);
    expect(sealed.byteLength).toBe(plain.byteLength + SEAL_OVERHEAD);
    expect(contains(sealed, plain)).toBe(false);
    expect(open(keys, objectA, sealed).equals(plain)).toBe(true);
    expect(() => open(keys, name(), sealed)).toThrow(SealError);
    const changed = Buffer.from(sealed);
    changed[100] = changed[100]! ^ 1;
    expect(() => open(keys, objectA, changed)).toThrow(SealError);
    // After a rotation, the old version still opens what it sealed; once dropped, nothing opens it.
    keys.rotate();
    expect(keys.active.version).toBe(2);
    expect(objectName(keys.active, account, 'a'.repeat(64))).not.toBe(objectA);
    expect(open(keys, objectA, sealed).equals(plain)).toBe(true);
    expect(keys.dropOlder()).toEqual([1]);
    expect(() => open(keys, objectA, sealed)).toThrow(/version 1/);
  });
});
