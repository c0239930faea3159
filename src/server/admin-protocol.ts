/**
 * Administration operations as plain JSON in, JSON out: the same dispatch
 * serves the admin socket of a running server and a CLI that opens the
 * database itself.
 */
import type { Admin } from '../app/admin.js';
import type { People } from '../app/people/users.js';
import type { Access } from '../app/access/access.js';
import { REQUEST_STATES, type RequestState } from '../app/access/ports.js';

/** What administration reaches: accounts, keys and limits; people. */
export interface AdminServices {
  readonly admin: Admin;
  readonly people: People;
  readonly apiKeys: Access;
  readonly scans: ScanControl;
}
import { InvalidOptionError } from '../errors.js';
import type { ScanControl } from '../app/scans/control.js';

export type AdminOp =
  | { op: 'createAccount'; name: string; plan: string }
  | { op: 'listAccounts' }
  | { op: 'showAccount'; name: string }
  | { op: 'setPlan'; name: string; plan: string }
  | { op: 'setLimits'; name: string; changes: Record<string, number | null> }
  | { op: 'renameAccount'; name: string; newName: string }
  | { op: 'deleteAccount'; name: string }
  | { op: 'listAllKeys' }
  | { op: 'planLimits' }
  | { op: 'setPlanLimits'; plan: string; changes: Record<string, number> }
  | { op: 'issueKey'; account: string; expiresInDays?: number; user?: string; scopes?: string[] }
  | { op: 'listKeys'; account: string }
  | { op: 'revokeKey'; id: string }
  | { op: 'usage'; account: string }
  | { op: 'createUser'; account: string; email: string; role?: string; operator?: boolean; displayName?: string; password?: string }
  | { op: 'listUsers'; account: string }
  | { op: 'disableUser'; email: string }
  | { op: 'resetUser'; email: string }
  | { op: 'listAccessRequests'; state?: string }
  | { op: 'approveAccess'; id: string; scopes?: string[]; expiresInDays?: number }
  | { op: 'denyAccess'; id: string; reason: string }
  | { op: 'scanStatus' }
  | { op: 'pauseScans' }
  | { op: 'resumeScans' }
  | { op: 'setScanCeiling'; ceiling: number };

export const ADMIN_SOCKET = 'admin.sock';

const str = (value: unknown, name: string): string => {
  if (typeof value !== 'string') throw new InvalidOptionError(name, 'a string', value);
  return value;
};

const object = (value: unknown, name: string): Record<string, never> => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidOptionError(name, 'an object', value);
  return value as Record<string, never>;
};

/** Run one operation; the result is JSON-safe (dates as ISO strings). */
const optionalStr = (value: unknown, name: string): string | undefined => (value === undefined ? undefined : str(value, name));

export async function runAdminOp({ admin, people, apiKeys, scans }: AdminServices, request: Record<string, unknown>): Promise<unknown> {
  const result = await (async () => {
    switch (request.op) {
      case 'createAccount':
        return admin.createAccount(str(request.name, 'name'), str(request.plan, 'plan'));
      case 'listAccounts':
        return admin.listAccounts();
      case 'showAccount':
        return admin.showAccount(str(request.name, 'name'));
      case 'setPlan':
        return admin.setPlan(str(request.name, 'name'), str(request.plan, 'plan'));
      case 'setLimits':
        return admin.setLimits(str(request.name, 'name'), object(request.changes, 'changes'));
      case 'renameAccount':
        return admin.renameAccount(str(request.name, 'name'), str(request.newName, 'newName'));
      case 'deleteAccount':
        return admin.deleteAccount(str(request.name, 'name'), 'cli');
      case 'listAllKeys':
        return admin.listAllKeys();
      case 'planLimits':
        return admin.planLimits();
      case 'setPlanLimits':
        return admin.setPlanLimits(str(request.plan, 'plan'), object(request.changes, 'changes'));
      case 'issueKey': {
        const days = request.expiresInDays;
        const scopes = request.scopes;
        if (scopes !== undefined && !(Array.isArray(scopes) && scopes.every((s) => typeof s === 'string'))) throw new InvalidOptionError('scopes', 'a list of scopes', scopes);
        return admin.issueKey(str(request.account, 'account'), {
          ...(days === undefined ? {} : { expiresInDays: days as number }),
          ...(request.user === undefined ? {} : { user: str(request.user, 'user') }),
          ...(scopes === undefined ? {} : { scopes: scopes as string[] }),
        });
      }
      case 'listKeys':
        return admin.listKeys(str(request.account, 'account'));
      case 'revokeKey':
        await admin.revokeKey(str(request.id, 'id'));
        return { revoked: request.id };
      case 'usage':
        return admin.usage(str(request.account, 'account'));
      case 'createUser': {
        if (request.operator !== undefined && typeof request.operator !== 'boolean') throw new InvalidOptionError('operator', 'true or false', request.operator);
        const { user, link } = await people.createUser({
          account: str(request.account, 'account'),
          email: str(request.email, 'email'),
          role: optionalStr(request.role, 'role'),
          operator: request.operator,
          displayName: optionalStr(request.displayName, 'displayName'),
          password: optionalStr(request.password, 'password'),
          actor: 'cli',
        });
        return { ...user, account: str(request.account, 'account'), setupUrl: link?.url ?? null, setupUrlExpiresAt: link?.expiresAt ?? null };
      }
      case 'listUsers':
        return people.listUsers(str(request.account, 'account'));
      case 'disableUser':
        return people.disableUser(str(request.email, 'email'), 'cli');
      case 'resetUser':
        return people.resetUser(str(request.email, 'email'), 'cli');
      case 'listAccessRequests': {
        const state = optionalStr(request.state, 'state');
        if (state !== undefined && !(REQUEST_STATES as readonly string[]).includes(state)) throw new InvalidOptionError('state', REQUEST_STATES.join(', '), state);
        return apiKeys.listAll(state as RequestState | undefined);
      }
      case 'approveAccess': {
        const scopes = request.scopes;
        if (scopes !== undefined && !(Array.isArray(scopes) && scopes.every((s) => typeof s === 'string'))) throw new InvalidOptionError('scopes', 'a list of scopes', scopes);
        const days = request.expiresInDays;
        if (days !== undefined && typeof days !== 'number') throw new InvalidOptionError('expiresInDays', 'a whole number of days', days);
        return apiKeys.approve({ kind: 'cli' }, str(request.id, 'id'), { ...(scopes === undefined ? {} : { scopes: scopes as string[] }), ...(days === undefined ? {} : { expiresInDays: days }) });
      }
      case 'denyAccess':
        return apiKeys.deny({ kind: 'cli' }, str(request.id, 'id'), str(request.reason, 'reason'));
      case 'scanStatus':
        return scans.status();
      case 'pauseScans':
        return scans.pause();
      case 'resumeScans':
        return scans.resume();
      case 'setScanCeiling':
        if (typeof request.ceiling !== 'number') throw new InvalidOptionError('ceiling', 'a whole number of scans per day', request.ceiling);
        return scans.setCeiling(request.ceiling);
      default:
        throw new InvalidOptionError('op', 'an administration operation', request.op);
    }
  })();
  return JSON.parse(JSON.stringify(result)) as unknown;
}
