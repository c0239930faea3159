/**
 * `optmark fingerprint-keys list|rotate|remove VERSION`: the deployment's
 * fingerprint secrets. Rotating adds a version that marks from now on; older
 * versions are still looked for on verify until removed. Only `rotate`
 * creates the file when there is none; `list` and `remove` only read it.
 *
 * Failures (a key file that cannot be used, a version that cannot be
 * removed) exit 1 with one line, or with --json one {"error", "code"} object
 * on standard output.
 */
import { FingerprintKeys } from '../adapters/fingerprint-keys.js';
import { loadConfig } from '../config.js';
import { CliError, parse, printJson, reportFailure } from './files.js';
import { announceCreatedFingerprintKey } from './fingerprint-for-cli.js';
import { UsageError } from './usage-error.js';

const USE = 'use: optmark fingerprint-keys list|rotate|remove VERSION [--json]';

export async function fingerprintKeysCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } });
  const [sub, ...rest] = positionals;
  const rotate = sub === 'rotate' && rest.length === 0;
  const remove = sub === 'remove' && rest.length === 1 && /^\d+$/.test(rest[0]!);
  if (!rotate && !remove && (sub !== 'list' || rest.length > 0)) throw new UsageError(USE);
  const path = loadConfig().fingerprintKeysPath;
  try {
    if (rotate) {
      const keys = FingerprintKeys.open(path);
      // A file created now holds a new version that marks: that is the rotation
      // (a second version on top would only split the detector's budget).
      const made = keys.created ? keys.list()[0]! : keys.rotate();
      if (keys.created) announceCreatedFingerprintKey(keys);
      if (values.json) printJson(made);
      else process.stdout.write(`Fingerprint key version ${made.version} now marks${made.version > 1 ? '; older versions are still detected' : ''}.\n`);
      return 0;
    }
    const keys = FingerprintKeys.openExisting(path);
    if (remove) {
      const version = Number(rest[0]);
      if (!keys) throw new CliError(`there is no fingerprint key version ${version} (there is no fingerprint key file ${path})`, 'fingerprint_key_not_found');
      keys.remove(version);
      if (values.json) printJson({ removed: version });
      else process.stdout.write(`Fingerprint key version ${version} removed; marks made with it are no longer detected.\n`);
      return 0;
    }
    const list = keys?.list() ?? [];
    if (values.json) printJson(list);
    else if (!keys) process.stdout.write(`No fingerprint keys: there is no ${path} (protect --fingerprint or fingerprint-keys rotate creates it).\n`);
    else for (const k of list) process.stdout.write(`version ${k.version}  ${k.marking ? 'marks and detects' : 'detects'}  created ${k.createdAt}\n`);
    return 0;
  } catch (error) {
    reportFailure(error, values.json);
    return 1;
  }
}
