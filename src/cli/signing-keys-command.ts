/**
 * `optmark signing-keys list|rotate`: the deployment's provenance keys.
 * Rotating makes a new active key and keeps the old one's public half, so
 * tags signed before stay verifiable; running servers pick the change up
 * within a second.
 */
import { SigningKeys } from '../adapters/signing-keys.js';
import { loadConfig } from '../config.js';
import { parse, printJson } from './files.js';
import { UsageError } from './usage-error.js';

export async function signingKeysCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } });
  const [sub, ...rest] = positionals;
  if (rest.length > 0 || (sub !== 'list' && sub !== 'rotate')) throw new UsageError('use: optmark signing-keys list|rotate [--json]');
  const keys = SigningKeys.open(loadConfig().signingKeysPath);
  if (sub === 'rotate') {
    const created = keys.rotate();
    if (values.json) printJson(created);
    else process.stdout.write(`New active signing key ${created.kid}; the previous key is retired and still verifies its tags.\n`);
    return 0;
  }
  const list = keys.list();
  if (values.json) printJson(list);
  else for (const k of list) process.stdout.write(`${k.kid}  ${k.active ? 'active ' : 'retired'}  created ${k.createdAt}${k.retiredAt ? `  retired ${k.retiredAt}` : ''}\n`);
  return 0;
}
