/**
 * `optmark accounts|keys|usage`: administration. With DATABASE_URL the
 * command talks to PostgreSQL directly; with the embedded database it goes
 * through the running server's admin socket, or, when no server runs, opens
 * the database itself (taking the data directory lock).
 */
import { createAdmin } from '../app/admin.js';
import { systemClock } from '../app/ports.js';
import { loadConfig } from '../config.js';
import { DataDirLockedError } from '../adapters/data-dir-lock.js';
import { openDatabase } from '../adapters/db/open.js';
import { PRIVATE_UMASK } from '../adapters/private-paths.js';
import { SqlStore } from '../adapters/db/sql-store.js';
import { runAdminOp, type AdminOp } from '../server/admin-protocol.js';
import { callAdminSocket } from '../server/admin-socket.js';
import { CliError, parse, printJson, reportFailure } from './files.js';
import { UsageError } from './usage-error.js';

async function run(op: AdminOp): Promise<unknown> {
  const config = loadConfig();
  if (!config.databaseUrl) {
    const answer = await callAdminSocket(config.dataDir, op);
    if (answer) {
      if (answer.status === 200) return answer.body.result;
      throw new CliError(String(answer.body.error), String(answer.body.code));
    }
  }
  let database;
  // The embedded database may be created here: for this user alone, as the server makes it.
  if (!config.databaseUrl) process.umask(PRIVATE_UMASK);
  try {
    database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  } catch (error) {
    if (error instanceof DataDirLockedError) {
      throw new CliError(`${error.message}, and its admin socket does not answer; is that process an optmark server?`, 'data_dir_locked');
    }
    throw error;
  }
  try {
    const store = new SqlStore(database.db);
    const admin = createAdmin({ store, clock: systemClock, limits: { protect: config.protectLimit, verify: config.verifyLimit } });
    return await runAdminOp(admin, op as unknown as Record<string, unknown>);
  } finally {
    await database.close();
  }
}

function required(value: string | undefined, flag: string): string {
  if (value === undefined || value === '') throw new UsageError(`${flag} is required`);
  return value;
}

type Row = Record<string, unknown>;

export async function adminCommand(command: 'accounts' | 'keys' | 'usage', args: readonly string[]): Promise<number> {
  const { values, positionals } = parse(args, {
    name: { type: 'string' },
    plan: { type: 'string' },
    account: { type: 'string' },
    'expires-in-days': { type: 'string' },
    json: { type: 'boolean' },
  });
  const [sub, ...rest] = command === 'usage' ? [undefined, ...positionals] : positionals;
  const say = (human: string, json: unknown) => (values.json ? printJson(json) : process.stdout.write(`${human}\n`));
  try {
    if (command === 'accounts' && sub === 'create') {
      const account = (await run({ op: 'createAccount', name: required(values.name, '--name'), plan: required(values.plan, '--plan') })) as Row;
      say(`Created account ${String(account.name)} on the ${String(account.plan)} plan.`, { id: account.id, name: account.name, plan: account.plan, createdAt: account.createdAt });
    } else if (command === 'keys' && sub === 'issue') {
      const days = values['expires-in-days'];
      if (days !== undefined && !/^\d+$/.test(days)) throw new UsageError('--expires-in-days takes a whole number of days');
      const key = (await run({ op: 'issueKey', account: required(values.account, '--account'), ...(days ? { expiresInDays: Number(days) } : {}) })) as Row;
      say(
        `${String(key.key)}\n\nAPI key ${String(key.id)} for ${String(key.account)}${key.expiresAt ? `, expires ${String(key.expiresAt)}` : ''}. ` +
          'Store it now: it is shown only this once.',
        { id: key.id, key: key.key, prefix: key.prefix },
      );
    } else if (command === 'keys' && sub === 'list') {
      const keys = (await run({ op: 'listKeys', account: required(values.account, '--account') })) as Row[];
      if (values.json) printJson(keys);
      else if (keys.length === 0) process.stdout.write('No keys.\n');
      else {
        for (const k of keys) {
          const state = k.revokedAt ? `revoked ${String(k.revokedAt)}` : k.active ? 'active' : `expired ${String(k.expiresAt)}`;
          process.stdout.write(`${String(k.id)}  ${String(k.prefix)}...  ${state}  created ${String(k.createdAt)}  last used ${String(k.lastUsedAt ?? 'never')}\n`);
        }
      }
    } else if (command === 'keys' && sub === 'revoke') {
      const id = rest[0] ?? '';
      if (!id) throw new UsageError('keys revoke needs the key id (see "optmark keys list")');
      await run({ op: 'revokeKey', id });
      say(`Revoked ${id}. Calls with it now get 401.`, { revoked: id });
    } else if (command === 'usage' && sub === undefined && rest.length === 0) {
      const usage = (await run({ op: 'usage', account: required(values.account, '--account') })) as Row & Record<'protect' | 'verify', Row>;
      say(
        `${String(usage.account)} (${String(usage.plan)}), this month:\n` +
          `  protect: ${String(usage.protect.used)} of ${String(usage.protect.limit)} (${String(usage.protect.remaining)} left)\n` +
          `  verify:  ${String(usage.verify.used)} of ${String(usage.verify.limit)} (${String(usage.verify.remaining)} left)\n` +
          `  resets at ${String(usage.resetsAt)}`,
        { protect: usage.protect, verify: usage.verify, resetsAt: usage.resetsAt },
      );
    } else {
      throw new UsageError(`unknown command: optmark ${[command, ...positionals].join(' ')}`);
    }
    return 0;
  } catch (error) {
    reportFailure(error, values.json);
    return 1;
  }
}
