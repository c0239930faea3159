/**
 * `optmark signing-keys list|rotate`: the deployment's provenance keys.
 * Rotating makes a new active key and keeps the old one's public half, so
 * tags signed before stay verifiable; running servers pick the change up
 * within a second. Only `rotate` creates the key ring when there is none;
 * `list` only reads it.
 */
import { SigningKeys } from '../adapters/signing-keys.js';
import { loadConfig } from '../config.js';
import { parse, printJson, reportFailure } from './files.js';
import { announceCreatedKeyRing } from './keys-for-cli.js';
import { UsageError } from './usage-error.js';

export async function signingKeysCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } });
  const [sub, ...rest] = positionals;
  if (rest.length > 0 || (sub !== 'list' && sub !== 'rotate')) throw new UsageError('use: optmark signing-keys list|rotate [--json]');
  const path = loadConfig().signingKeysPath;
  try {
    if (sub === 'rotate') {
      const keys = SigningKeys.open(path);
      // A ring created now has a new active key: that is the rotation.
      const made = keys.created ? keys.list().find((k) => k.active)! : keys.rotate();
      if (keys.created) announceCreatedKeyRing(keys);
      if (values.json) printJson(made);
      else process.stdout.write(`New active signing key ${made.kid}${keys.created ? '.' : '; the previous key is retired and still verifies its tags.'}\n`);
      return 0;
    }
    const keys = SigningKeys.openExisting(path);
    const list = keys?.list() ?? [];
    if (values.json) printJson(list);
    else if (!keys) process.stdout.write(`No signing keys: there is no ${path} (protect or signing-keys rotate creates it).\n`);
    else for (const k of list) process.stdout.write(`${k.kid}  ${k.active ? 'active ' : 'retired'}  created ${k.createdAt}${k.retiredAt ? `  retired ${k.retiredAt}` : ''}\n`);
    return 0;
  } catch (error) {
    reportFailure(error, values.json);
    return 1;
  }
}
