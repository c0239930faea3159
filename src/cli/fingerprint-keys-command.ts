/**
 * `optmark fingerprint-keys list|rotate|remove VERSION`: the deployment's
 * fingerprint secrets. Rotating adds a version that marks from now on; older
 * versions are still looked for on verify until removed.
 */
import { FingerprintKeys } from '../adapters/fingerprint-keys.js';
import { loadConfig } from '../config.js';
import { parse, printJson } from './files.js';
import { UsageError } from './usage-error.js';

const USE = 'use: optmark fingerprint-keys list|rotate|remove VERSION [--json]';

export async function fingerprintKeysCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } });
  const [sub, ...rest] = positionals;
  const keys = FingerprintKeys.open(loadConfig().fingerprintKeysPath);
  if (sub === 'rotate' && rest.length === 0) {
    const created = keys.rotate();
    if (values.json) printJson(created);
    else process.stdout.write(`Fingerprint key version ${created.version} now marks; older versions are still detected.\n`);
    return 0;
  }
  if (sub === 'remove' && rest.length === 1 && /^\d+$/.test(rest[0]!)) {
    try {
      keys.remove(Number(rest[0]));
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    if (values.json) printJson({ removed: Number(rest[0]) });
    else process.stdout.write(`Fingerprint key version ${rest[0]} removed; marks made with it are no longer detected.\n`);
    return 0;
  }
  if (sub !== 'list' || rest.length > 0) throw new UsageError(USE);
  const list = keys.list();
  if (values.json) printJson(list);
  else for (const k of list) process.stdout.write(`version ${k.version}  ${k.marking ? 'marks and detects' : 'detects'}  created ${k.createdAt}\n`);
  return 0;
}
