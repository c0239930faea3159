/**
 * `optmark accounts|keys|usage`: administration. With DATABASE_URL the
 * command talks to PostgreSQL directly; with the embedded database it goes
 * through the running server's admin socket, or, when no server runs, opens
 * the database itself (taking the data directory lock).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createAdmin } from '../app/admin.js';
import { systemClock } from '../app/ports.js';
import { loadConfig } from '../config.js';
import { DataDirLockedError } from '../adapters/data-dir-lock.js';
import { openDatabase } from '../adapters/db/open.js';
import { PRIVATE_UMASK } from '../adapters/private-paths.js';
import { SqlStore } from '../adapters/db/sql-store.js';
import { SqlPeopleStore } from '../adapters/db/people-store.js';
import { createPasswordHasher } from '../adapters/password-hasher.js';
import { createPeople } from '../app/people/users.js';
import { accessService } from '../server/access-service.js';
import { createMailer } from '../adapters/mailer.js';
import { runAdminOp, type AdminOp } from '../server/admin-protocol.js';
import { createScanControl } from '../app/scans/control.js';
import { SqlScanStore } from '../adapters/db/scan-store.js';
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
  // The embedded database is created by `optmark serve` only: a data directory
  // without one is a mistake (a typo in OPTMARK_DATA_DIR, another folder), not
  // a new installation to be made silently empty.
  if (!config.databaseUrl && !existsSync(join(config.dataDir, 'pgdata'))) {
    throw new CliError(
      `there is no optmark database in ${config.dataDir} (OPTMARK_DATA_DIR, default ./data of the current folder); check OPTMARK_DATA_DIR, or run "optmark serve" once to create the database there`,
      'no_database',
    );
  }
  let database;
  // The embedded database may be created here: for this user alone, as the server makes it.
  if (!config.databaseUrl) process.umask(PRIVATE_UMASK);
  try {
    database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, limitSeeds: config.limitSeeds });
  } catch (error) {
    if (error instanceof DataDirLockedError) {
      throw new CliError(`${error.message}, and its admin socket does not answer; is that process an optmark server?`, 'data_dir_locked');
    }
    throw error;
  }
  try {
    const store = new SqlStore(database.db);
    const peopleStore = new SqlPeopleStore(database.db);
    const admin = createAdmin({ store, people: peopleStore, clock: systemClock });
    const people = createPeople({
      people: peopleStore,
      store,
      hasher: createPasswordHasher(),
      clock: systemClock,
      baseUrl: () => config.baseUrl ?? `http://${config.host}:${config.port}`,
    });
    const mailer = createMailer({ url: config.smtpUrl, from: config.mailFrom });
    try {
      const apiKeys = accessService({ db: database.db, store, peopleStore, clock: systemClock, mailer, baseUrl: () => config.baseUrl ?? `http://${config.host}:${config.port}` });
      const scans = createScanControl({ store: new SqlScanStore(database.db), settings: store, audit: (entry) => peopleStore.audit(entry), clock: systemClock });
      return await runAdminOp({ admin, people, apiKeys, scans }, op as unknown as Record<string, unknown>);
    } finally {
      mailer.close();
    }
  } finally {
    await database.close();
  }
}

const PLANS = ['free', 'pro', 'lifetime'];

/** A plan name, checked before anything is opened. */
function plan(value: string | undefined, what: string): string {
  if (value === undefined || !PLANS.includes(value)) throw new UsageError(`${what} must be one of ${PLANS.join(', ')}${value === undefined ? '' : `, got ${JSON.stringify(value)}`}`);
  return value;
}

function required(value: string | undefined, flag: string): string {
  if (value === undefined || value === '') throw new UsageError(`${flag} is required`);
  return value;
}

type Row = Record<string, unknown>;

/** The limit options of `accounts set-limits` and `plans set`, and the limit each sets. */
const LIMIT_OPTIONS = {
  protect: 'protectPerMonth',
  verify: 'verifyPerMonth',
  'scans-per-day': 'scansPerUserPerDay',
  'vault-bytes': 'vaultBytes',
  'retention-days': 'reportRetentionDays',
} as const;

/** The limit options given, as changes: a whole number, or (for an account) "plan" to follow the plan again. */
function limitChanges(values: Record<string, unknown>, allowPlan: boolean): Record<string, number | null> {
  const changes: Record<string, number | null> = {};
  for (const [option, limit] of Object.entries(LIMIT_OPTIONS)) {
    const given = values[option];
    if (given === undefined) continue;
    if (option === 'retention-days' && allowPlan) throw new UsageError('--retention-days is set per plan: optmark plans set PLAN --retention-days N');
    if (allowPlan && given === 'plan') changes[limit] = null;
    else if (typeof given === 'string' && /^\d{1,16}$/.test(given)) changes[limit] = Number(given);
    else throw new UsageError(`--${option} takes a whole number${allowPlan ? ' or "plan"' : ''}, got ${JSON.stringify(given)}`);
  }
  if (Object.keys(changes).length === 0) throw new UsageError(`give at least one of ${Object.keys(LIMIT_OPTIONS).filter((o) => !allowPlan || o !== 'retention-days').map((o) => `--${o}`).join(', ')}`);
  return changes;
}

const number = (n: unknown) => Number(n).toLocaleString('en-US');

/** Limits as people read them; an account's own values are marked with an asterisk. */
function limitsLine(limits: Row, overrides?: Row): string {
  const mark = (name: string) => (overrides && overrides[name] !== null && overrides[name] !== undefined ? '*' : '');
  return (
    `protect ${number(limits.protectPerMonth)}/month${mark('protectPerMonth')}, verify ${number(limits.verifyPerMonth)}/month${mark('verifyPerMonth')}, ` +
    `scans ${number(limits.scansPerUserPerDay)}/user/day${mark('scansPerUserPerDay')}, vault ${number(limits.vaultBytes)} bytes${mark('vaultBytes')}`
  );
}

function accountLines(a: Row): string {
  return `${String(a.name)}  ${String(a.plan)}  created ${String(a.createdAt)}\n  ${limitsLine(a.limits as Row, a.overrides as Row)}`;
}

/** All of standard input (a password piped in), without the line end a shell's echo or printf adds. */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

function userLine(u: Row): string {
  const state = u.disabledAt ? `disabled ${String(u.disabledAt)}` : u.hasPassword ? 'active' : 'no password yet (setup link)';
  return `${String(u.email)}  ${String(u.role)}${u.operator ? ', operator' : ''}  ${state}  created ${String(u.createdAt)}${u.displayName ? `  (${String(u.displayName)})` : ''}`;
}

function requestLines(r: Row): string {
  const scopes = (list: unknown) => (Array.isArray(list) ? list.join(',') : '');
  const decided = r.state === 'pending' ? '' : `  ${String(r.state)} ${String(r.decidedAt)} by ${String(r.decidedBy)}`;
  const grant =
    r.state === 'approved'
      ? `\n  granted ${scopes(r.grantedScopes)}${r.keyDays ? `, key lasts ${String(r.keyDays)} days` : ''}; ${r.revealedAt ? `key revealed ${String(r.revealedAt)} (${String(r.keyId)})` : `to be revealed by ${String(r.revealBy)}`}`
      : '';
  return (
    `${String(r.id)}  ${String(r.state)}  ${String(r.accountName)} (${String(r.plan)})  "${String(r.name)}"  by ${String(r.userEmail)}  asked ${String(r.createdAt)}${decided}\n` +
    `  scopes ${scopes(r.scopes)}, about ${number(r.monthlyVolume)} calls/month, contact ${String(r.contact)}\n  purpose: ${String(r.purpose)}` +
    (r.reason ? `\n  reason: ${String(r.reason)}` : '') +
    grant
  );
}

function scanStatusLine(status: { today: number; ceiling: number; paused: boolean }, prefix: string): string {
  return `${prefix}Today (UTC): ${status.today} of ${status.ceiling} repository scans${status.paused ? '; new scans are paused' : status.today >= status.ceiling ? '; the ceiling is reached: new scans get 503 scans_paused until midnight UTC' : ''}.`;
}

export async function adminCommand(command: 'accounts' | 'keys' | 'usage' | 'plans' | 'users' | 'access' | 'scans', args: readonly string[]): Promise<number> {
  const { values, positionals } = parse(args, {
    name: { type: 'string' },
    email: { type: 'string' },
    role: { type: 'string' },
    operator: { type: 'boolean' },
    'password-stdin': { type: 'boolean' },
    plan: { type: 'string' },
    account: { type: 'string' },
    'expires-in-days': { type: 'string' },
    user: { type: 'string' },
    scopes: { type: 'string' },
    protect: { type: 'string' },
    verify: { type: 'string' },
    'scans-per-day': { type: 'string' },
    'vault-bytes': { type: 'string' },
    'retention-days': { type: 'string' },
    state: { type: 'string' },
    reason: { type: 'string' },
    yes: { type: 'boolean' },
    all: { type: 'boolean' },
    json: { type: 'boolean' },
  });
  const [sub, ...rest] = command === 'usage' ? [undefined, ...positionals] : positionals;
  const say = (human: string, json: unknown) => (values.json ? printJson(json) : process.stdout.write(`${human}\n`));
  try {
    if (command === 'accounts' && sub === 'create') {
      const account = (await run({ op: 'createAccount', name: required(values.name, '--name'), plan: plan(required(values.plan, '--plan'), '--plan') })) as Row;
      say(`Created account ${String(account.name)} on the ${String(account.plan)} plan.`, { id: account.id, name: account.name, plan: account.plan, createdAt: account.createdAt });
    } else if (command === 'accounts' && sub === 'list' && rest.length === 0) {
      const accounts = (await run({ op: 'listAccounts' })) as Row[];
      if (values.json) printJson(accounts);
      else process.stdout.write(accounts.length === 0 ? 'No accounts.\n' : `${accounts.map(accountLines).join('\n')}\n(* the account's own limit; the others are its plan's)\n`);
    } else if (command === 'accounts' && sub === 'show' && rest.length === 1) {
      const a = (await run({ op: 'showAccount', name: rest[0]! })) as Row & { usage: Row & Record<'protect' | 'verify', Row> };
      say(
        `${accountLines(a)}\n  this month: protect ${String(a.usage.protect.used)} used, verify ${String(a.usage.verify.used)} used; resets at ${String(a.usage.resetsAt)}`,
        a,
      );
    } else if (command === 'accounts' && sub === 'set-plan' && rest.length === 2) {
      const a = (await run({ op: 'setPlan', name: rest[0]!, plan: plan(rest[1], 'the plan') })) as Row;
      say(`${String(a.name)} is now on the ${String(a.plan)} plan:\n  ${limitsLine(a.limits as Row, a.overrides as Row)}`, a);
    } else if (command === 'accounts' && sub === 'set-limits' && rest.length === 1) {
      const a = (await run({ op: 'setLimits', name: rest[0]!, changes: limitChanges(values, true) })) as Row;
      say(`${String(a.name)}: ${limitsLine(a.limits as Row, a.overrides as Row)}\n(* the account's own limit; the others are its plan's)`, a);
    } else if (command === 'accounts' && sub === 'rename' && rest.length === 2) {
      const a = (await run({ op: 'renameAccount', name: rest[0]!, newName: rest[1]! })) as Row;
      say(`Renamed ${rest[0]!} to ${String(a.name)}.`, a);
    } else if (command === 'users' && sub === 'create' && rest.length === 0) {
      if (values.role !== undefined && values.role !== 'owner' && values.role !== 'member') throw new UsageError(`--role must be owner or member, got ${JSON.stringify(values.role)}`);
      required(values.account, '--account');
      required(values.email, '--email');
      const password = values['password-stdin'] ? await readStdin() : undefined;
      const created = (await run({
        op: 'createUser',
        account: required(values.account, '--account'),
        email: required(values.email, '--email'),
        ...(values.role !== undefined ? { role: values.role } : {}),
        ...(values.operator ? { operator: true } : {}),
        ...(values.name !== undefined ? { displayName: values.name } : {}),
        ...(password !== undefined ? { password } : {}),
      })) as Row;
      say(
        `Created ${String(created.email)} (${String(created.role)}${created.operator ? ', operator' : ''}) in ${String(created.account)}.` +
          (created.setupUrl ? `\nSet-up link, valid 24 hours and once (it sets the password):\n${String(created.setupUrl)}` : ' The password is set.'),
        { id: created.id, email: created.email, account: created.account, role: created.role, setupUrl: created.setupUrl },
      );
    } else if (command === 'users' && sub === 'list' && rest.length === 0) {
      const users = (await run({ op: 'listUsers', account: required(values.account, '--account') })) as Row[];
      if (values.json) printJson(users);
      else process.stdout.write(users.length === 0 ? 'No users.\n' : `${users.map(userLine).join('\n')}\n`);
    } else if (command === 'users' && sub === 'disable' && rest.length === 1) {
      const user = (await run({ op: 'disableUser', email: rest[0]! })) as Row;
      say(`Disabled ${String(user.email)}: they cannot sign in, their sessions have ended and their API keys are revoked.`, user);
    } else if (command === 'users' && sub === 'reset' && rest.length === 1) {
      const link = (await run({ op: 'resetUser', email: rest[0]! })) as Row;
      say(`Password reset link for ${rest[0]!}, valid 24 hours and once (older links no longer work):\n${String(link.url)}`, { email: rest[0], resetUrl: link.url, expiresAt: link.expiresAt });
    } else if (command === 'plans' && sub === 'list' && rest.length === 0) {
      const plans = (await run({ op: 'planLimits' })) as Record<string, Row>;
      say(Object.entries(plans).map(([plan, limits]) => `${plan}: ${limitsLine(limits)}, reports kept ${String(limits.reportRetentionDays)} days`).join('\n'), plans);
    } else if (command === 'plans' && sub === 'set' && rest.length === 1) {
      const plans = (await run({ op: 'setPlanLimits', plan: plan(rest[0], 'the plan'), changes: limitChanges(values, false) as Record<string, number> })) as Record<string, Row>;
      const limits = plans[rest[0]!]!;
      say(`${rest[0]!}: ${limitsLine(limits)}, reports kept ${String(limits.reportRetentionDays)} days`, plans);
    } else if (command === 'keys' && sub === 'issue' && rest.length === 0) {
      const days = values['expires-in-days'];
      if (days !== undefined && !/^\d+$/.test(days)) throw new UsageError('--expires-in-days takes a whole number of days');
      const scopes = values.scopes?.split(',').map((s) => s.trim());
      if (scopes !== undefined && (scopes.length === 0 || scopes.some((s) => s !== 'protect' && s !== 'verify'))) throw new UsageError(`--scopes takes protect, verify or protect,verify, got ${JSON.stringify(values.scopes)}`);
      const key = (await run({
        op: 'issueKey',
        account: required(values.account, '--account'),
        ...(days ? { expiresInDays: Number(days) } : {}),
        ...(values.user !== undefined ? { user: values.user } : {}),
        ...(scopes !== undefined ? { scopes } : {}),
      })) as Row;
      say(
        `${String(key.key)}\n\nAPI key ${String(key.id)} for ${String(key.account)}${key.user ? ` (${String(key.user)})` : ''}, scopes ${(key.scopes as string[]).join(', ')}` +
          `${key.expiresAt ? `, expires ${String(key.expiresAt)}` : ''}. Store it now: it is shown only this once.`,
        { id: key.id, key: key.key, prefix: key.prefix },
      );
    } else if (command === 'accounts' && sub === 'delete' && rest.length === 1) {
      if (!values.yes) {
        throw new UsageError(
          `deleting the account ${rest[0]!} removes it with all its users, API keys (calls with them get 401 at once), sessions and usage records, for good; ` +
            'the audit log keeps a line. Add --yes to delete it',
        );
      }
      const gone = (await run({ op: 'deleteAccount', name: rest[0]! })) as Row;
      say(
        `Deleted the account ${String(gone.name)} (${String(gone.plan)}): ${String(gone.users)} user(s), ${String(gone.keys)} API key(s) (${String(gone.activeKeys)} active), their sessions and usage records. The audit log keeps a line.`,
        gone,
      );
    } else if (command === 'keys' && sub === 'list' && rest.length === 0) {
      if (values.all && values.account !== undefined) throw new UsageError('keys list takes --account NAME or --all, not both');
      const keys = (await run(values.all ? { op: 'listAllKeys' } : { op: 'listKeys', account: required(values.account, '--account or --all') })) as Row[];
      if (values.json) printJson(keys);
      else if (keys.length === 0) process.stdout.write('No keys.\n');
      else {
        for (const k of keys) {
          const state = k.revokedAt ? `revoked ${String(k.revokedAt)}` : k.active ? 'active' : `expired ${String(k.expiresAt)}`;
          process.stdout.write(
            `${values.all ? `${String(k.account)}  ` : ''}${String(k.id)}  ${String(k.prefix)}...  ${state}  ${String(k.user ?? '(no user yet)')}  ${(k.scopes as string[]).join(',')}  created ${String(k.createdAt)}  last used ${String(k.lastUsedAt ?? 'never')}\n`,
          );
        }
      }
    } else if (command === 'keys' && sub === 'revoke') {
      const id = rest[0] ?? '';
      if (!id || rest.length > 1) throw new UsageError('keys revoke takes one key id (see "optmark keys list")');
      await run({ op: 'revokeKey', id });
      say(`Revoked ${id}. Calls with it now get 401.`, { revoked: id });
    } else if (command === 'access' && sub === 'list' && rest.length === 0) {
      const states = ['pending', 'approved', 'denied', 'withdrawn'];
      if (values.state !== undefined && !states.includes(values.state)) throw new UsageError(`--state must be one of ${states.join(', ')}, got ${JSON.stringify(values.state)}`);
      const requests = (await run({ op: 'listAccessRequests', ...(values.state !== undefined ? { state: values.state } : {}) })) as Row[];
      if (values.json) printJson(requests);
      else process.stdout.write(requests.length === 0 ? 'No requests.\n' : `${requests.map(requestLines).join('\n\n')}\n`);
    } else if (command === 'access' && sub === 'approve' && rest.length === 1) {
      const days = values['expires-in-days'];
      if (days !== undefined && !/^\d+$/.test(days)) throw new UsageError('--expires-in-days takes a whole number of days');
      const scopes = values.scopes?.split(',').map((s) => s.trim());
      if (scopes !== undefined && (scopes.length === 0 || scopes.some((s) => s !== 'protect' && s !== 'verify'))) throw new UsageError(`--scopes takes protect, verify or protect,verify, got ${JSON.stringify(values.scopes)}`);
      const { request, mailed } = (await run({ op: 'approveAccess', id: rest[0]!, ...(scopes ? { scopes } : {}), ...(days ? { expiresInDays: Number(days) } : {}) })) as { request: Row; mailed: boolean };
      say(
        `Approved ${String(request.id)} ("${String(request.name)}", ${String(request.accountName)}): scopes ${(request.grantedScopes as string[]).join(', ')}. ` +
          `${String(request.userEmail)} reveals the key on the dashboard's API keys page by ${String(request.revealBy)}${mailed ? ' (told by mail)' : ''}; nobody else ever sees it.`,
        { request, mailed },
      );
    } else if (command === 'access' && sub === 'deny' && rest.length === 1) {
      const { request, mailed } = (await run({ op: 'denyAccess', id: rest[0]!, reason: required(values.reason, '--reason') })) as { request: Row; mailed: boolean };
      say(`Denied ${String(request.id)} ("${String(request.name)}", ${String(request.accountName)}). ${String(request.userEmail)} sees the reason on the dashboard${mailed ? ' and was told by mail' : ''}.`, { request, mailed });
    } else if (command === 'scans' && ['status', 'pause', 'resume'].includes(sub ?? '') && rest.length === 0) {
      const op = sub === 'status' ? 'scanStatus' : sub === 'pause' ? 'pauseScans' : 'resumeScans';
      const status = (await run({ op } as AdminOp)) as { today: number; ceiling: number; paused: boolean };
      say(scanStatusLine(status, sub === 'pause' ? 'New repository scans are paused for everyone (running scans finish). ' : sub === 'resume' ? 'New repository scans are accepted again. ' : ''), status);
    } else if (command === 'scans' && sub === 'set-ceiling' && rest.length === 1) {
      if (!/^\d{1,10}$/.test(rest[0]!)) throw new UsageError(`the ceiling must be a whole number of scans per day, got ${JSON.stringify(rest[0])}`);
      const status = (await run({ op: 'setScanCeiling', ceiling: Number(rest[0]) })) as { today: number; ceiling: number; paused: boolean };
      say(scanStatusLine(status, `The service-wide ceiling is now ${status.ceiling} scans a day. `), status);
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
    // A value the operation refuses (a plan, a limit, a scope) is a command line that cannot be run as given.
    const code = (error as { code?: unknown }).code;
    if (code === 'invalid_option') throw new UsageError((error as Error).message);
    reportFailure(error, values.json);
    return 1;
  }
}
