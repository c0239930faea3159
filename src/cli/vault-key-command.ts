/**
 * `optmark vault-key list|rotate`: the Private Vault's key (docs/vault.md,
 * docs/operations.md). `rotate` adds a new version to the key file, re-seals
 * every object of the vault under it (new names, the old objects removed)
 * and then drops the older versions: a copy of the old key file opens
 * nothing any more. It needs the database and the vault's storage: with the
 * embedded database, run it while the server is stopped (it takes the data
 * directory's lock); on PostgreSQL, while the servers run (they read the new
 * key within a second, and a marking under way keeps the older version until
 * the next rotation finishes it).
 */
import { DataDirLockedError } from '../adapters/data-dir-lock.js';
import { SqlVaultStore } from '../adapters/db/vault-store.js';
import { openDatabase } from '../adapters/db/open.js';
import { PRIVATE_UMASK } from '../adapters/private-paths.js';
import { openBlobStore } from '../adapters/storage/open.js';
import { VaultKeys } from '../adapters/vault-keys.js';
import { vaultIdentityProblem } from '../app/vault/identity.js';
import { rotateVaultKey } from '../app/vault/rotation.js';
import { createVault } from '../app/vault/vault.js';
import { systemClock } from '../app/ports.js';
import { loadConfig } from '../config.js';
import { CliError, parse, printJson, reportFailure } from './files.js';
import { UsageError } from './usage-error.js';

export async function vaultKeyCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } });
  const [sub, ...rest] = positionals;
  if (rest.length > 0 || (sub !== 'list' && sub !== 'rotate')) throw new UsageError('use: optmark vault-key list|rotate [--json]');
  const config = loadConfig();
  try {
    if (sub === 'list') {
      const keys = VaultKeys.openExisting(config.vaultKeysPath);
      const list = keys?.list() ?? [];
      if (values.json) printJson(list);
      else if (!keys) process.stdout.write(`No vault key: there is no ${config.vaultKeysPath} ("optmark serve" creates it).\n`);
      else for (const k of list) process.stdout.write(`version ${k.version}  ${k.active ? 'active' : 'older '}  created ${k.createdAt}\n`);
      return 0;
    }
    const keys = VaultKeys.openExisting(config.vaultKeysPath);
    if (!keys) throw new CliError(`there is no vault key file ${config.vaultKeysPath} ("optmark serve" creates it): nothing to rotate`, 'no_vault_key');
    if (!config.databaseUrl) process.umask(PRIVATE_UMASK);
    let database;
    try {
      database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, limitSeeds: config.limitSeeds });
    } catch (error) {
      if (error instanceof DataDirLockedError) throw new CliError(`${error.message}: stop the server, then rotate the vault key (the embedded database has one user at a time)`, 'data_dir_locked');
      throw error;
    }
    const blobs = openBlobStore(config);
    try {
      const store = new SqlVaultStore(database.db);
      // This key file and storage must be the vault's (then the new version is written down beside the others).
      const identity = { store, blobs, keys, keysPath: config.vaultKeysPath };
      const problem = await vaultIdentityProblem(identity);
      if (problem !== undefined) throw new CliError(`${problem}: nothing rotated`, 'vault_not_shared');
      const report = await rotateVaultKey({
        store,
        blobs,
        keys,
        // Running servers (PostgreSQL) read the key file within a second; with the embedded database none runs.
        settleMs: config.databaseUrl ? 2000 : 0,
        onProgress: (moved) => {
          if (!values.json && moved % 100 === 0) process.stderr.write(`${moved} objects re-sealed\n`);
        },
      });
      // What a stop in the middle left (a copy whose row was not moved) is removed at once.
      const graceMs = config.databaseUrl ? config.reservationTtlSeconds * 1000 : 0;
      await vaultIdentityProblem(identity);
      await createVault({ store, blobs, keys, clock: systemClock, audit: async () => {} }).check(graceMs);
      if (values.json) printJson(report);
      else {
        process.stdout.write(`Vault key version ${report.version} is active; ${report.moved} object${report.moved === 1 ? '' : 's'} re-sealed under it.\n`);
        process.stdout.write(
          report.dropped.length > 0
            ? `Dropped the older version${report.dropped.length === 1 ? '' : 's'} ${report.dropped.join(', ')}: back up ${config.vaultKeysPath} now.\n`
            : report.remaining > 0
              ? `${report.remaining} object${report.remaining === 1 ? ' is' : 's are'} still sealed under an older version (being written, or missing): the older versions are kept; run the rotation again later.\n`
              : 'There was no older version to drop.\n',
        );
      }
      return 0;
    } finally {
      await blobs.close();
      await database.close();
    }
  } catch (error) {
    reportFailure(error, values.json);
    return 1;
  }
}
