/**
 * Every server on one database must keep the vault's bytes in the same
 * storage and seal them with the same keys: a server with a storage of its
 * own (a data directory of its own, on PostgreSQL) would find every other
 * server's objects missing and drop their files at its check, and one with
 * a key file of its own could open none of them. So the database keeps the
 * storage's id and a fingerprint of each key version, written by the first
 * server, and a server whose storage or keys differ is told so at its
 * start, in words that say how to share them: its vault then keeps, opens
 * and checks nothing (app/vault/vault.ts), and a key rotation refuses.
 */
import type { BlobStore, VaultKeyRing, VaultStore } from './ports.js';
import { keyFingerprint } from './sealing.js';

/** What is wrong with this server's vault storage or keys for this database, in words; undefined when nothing is. */
export async function vaultIdentityProblem(deps: {
  readonly store: Pick<VaultStore, 'claimIdentities'>;
  readonly blobs: Pick<BlobStore, 'identity' | 'kind'>;
  readonly keys: VaultKeyRing;
  /** Where this server's key file is, for the message. */
  readonly keysPath: string;
}): Promise<string | undefined> {
  const { store, blobs, keys } = deps;
  const mine = new Map<string, string>([['storage', await blobs.identity()]]);
  for (const version of keys.versions()) mine.set(`key-${version}`, keyFingerprint(keys.version(version)!));
  const recorded = await store.claimIdentities([...mine].map(([what, fingerprint]) => ({ what, fingerprint })));
  if (recorded.get('storage') !== mine.get('storage')) {
    return (
      `the Private Vault's storage (${blobs.kind === 's3' ? 'the bucket of OPTMARK_VAULT_S3_URL' : 'the vault folder of this data directory'}) is not the one this database's vault keeps its files in: ` +
        'every server on one database must share it (OPTMARK_VAULT_S3_URL on each server, or one data directory shared by all)'
    );
  }
  const newest = Math.max(...keys.versions());
  const missing = [...recorded.keys()].filter((what) => what.startsWith('key-') && Number(what.slice(4)) > newest).map((what) => what.slice(4));
  if (missing.length > 0) {
    return (
      `the Private Vault's key file ${deps.keysPath} lacks version ${missing.join(', ')}, with which another server seals: every server on one database must use the same key file (copy it, or point OPTMARK_VAULT_KEYS at a shared one)`
    );
  }
  const differing = [...mine].filter(([what, fingerprint]) => what.startsWith('key-') && recorded.get(what) !== fingerprint).map(([what]) => what.slice(4));
  if (differing.length > 0) {
    return (
      `the Private Vault's key file ${deps.keysPath} is not the one this database's vault was sealed with (version ${differing.join(', ')} differs): ` +
        'every server on one database must use the same key file (copy it, or point OPTMARK_VAULT_KEYS at a shared one)'
    );
  }
  return undefined;
}
