/**
 * Rotating the vault key (`optmark vault-key rotate`, docs/operations.md):
 * a new version is added to the key file and seals from then on (running
 * servers read the file within a second); every object sealed under an
 * older version is read, opened, sealed again under the new one and written
 * under its new name (HMAC of the new key), the database pointed at it, and
 * the old object removed. Once nothing is sealed under an older version, the
 * older versions are dropped from the file: a copy of the old key opens
 * nothing any more.
 *
 * A stop in the middle loses nothing: an object is moved only once its new
 * copy is durable, and a copy whose row was not moved is bytes without a
 * row, which the vault's check removes. Running it again finishes the work.
 */
import type { BlobStore, VaultKeyRing, VaultStore } from './ports.js';
import { objectName, open, seal } from './sealing.js';

export interface RotationKeys extends VaultKeyRing {
  rotate(now?: Date): { readonly version: number };
  dropOlder(): number[];
}

export interface RotationReport {
  readonly version: number;
  /** Objects re-sealed under the new version. */
  readonly moved: number;
  /** Objects still sealed under an older version (being written by a marking, or missing): the older versions are then kept. */
  readonly remaining: number;
  /** The versions dropped from the key file. */
  readonly dropped: readonly number[];
}

const BATCH = 50;

export async function rotateVaultKey(deps: {
  readonly store: VaultStore;
  readonly blobs: BlobStore;
  readonly keys: RotationKeys;
  /** How long running servers get to read the new key file before the moving starts (a second is their longest). */
  readonly settleMs?: number;
  readonly onProgress?: (moved: number) => void;
}): Promise<RotationReport> {
  const { store, blobs, keys } = deps;
  const { version } = keys.rotate();
  await new Promise((resolve) => setTimeout(resolve, deps.settleMs ?? 2000));
  const key = keys.active;
  if (key.version !== version) throw new Error(`the vault key file changed during the rotation (version ${key.version} is active, not ${version})`);
  let moved = 0;
  let remaining = 0;
  let after = '';
  for (;;) {
    const batch = await store.sealedUnder(version, BATCH, after);
    if (batch.length === 0) break;
    after = batch.at(-1)!.objectName;
    for (const object of batch) {
      // Still being written by a marking: left under its version (the older versions are then kept).
      if (object.state !== 'stored') {
        remaining += 1;
        continue;
      }
      const sealed = await blobs.get(object.objectName);
      if (!sealed) {
        remaining += 1;
        continue;
      }
      const plain = open(keys, object.objectName, sealed);
      const name = objectName(key, object.accountId, object.sha256);
      await blobs.put(name, seal(key, name, plain));
      if (await store.moved(object, name, key.version)) {
        await blobs.delete(object.objectName);
        moved += 1;
        deps.onProgress?.(moved);
      } else {
        // Removed meanwhile: the new copy goes too.
        await blobs.delete(name);
      }
    }
  }
  const dropped = remaining === 0 && (await store.sealedUnder(version, 1)).length === 0 ? keys.dropOlder() : [];
  return { version, moved, remaining, dropped };
}
