/**
 * Administration operations as plain JSON in, JSON out: the same dispatch
 * serves the admin socket of a running server and a CLI that opens the
 * database itself.
 */
import type { Admin } from '../app/admin.js';
import { InvalidOptionError } from '../errors.js';

export type AdminOp =
  | { op: 'createAccount'; name: string; plan: string }
  | { op: 'issueKey'; account: string; expiresInDays?: number }
  | { op: 'listKeys'; account: string }
  | { op: 'revokeKey'; id: string }
  | { op: 'usage'; account: string };

export const ADMIN_SOCKET = 'admin.sock';

const str = (value: unknown, name: string): string => {
  if (typeof value !== 'string') throw new InvalidOptionError(name, 'a string', value);
  return value;
};

/** Run one operation; the result is JSON-safe (dates as ISO strings). */
export async function runAdminOp(admin: Admin, request: Record<string, unknown>): Promise<unknown> {
  const result = await (async () => {
    switch (request.op) {
      case 'createAccount':
        return admin.createAccount(str(request.name, 'name'), str(request.plan, 'plan'));
      case 'issueKey': {
        const days = request.expiresInDays;
        return admin.issueKey(str(request.account, 'account'), days === undefined ? {} : { expiresInDays: days as number });
      }
      case 'listKeys':
        return admin.listKeys(str(request.account, 'account'));
      case 'revokeKey':
        await admin.revokeKey(str(request.id, 'id'));
        return { revoked: request.id };
      case 'usage':
        return admin.usage(str(request.account, 'account'));
      default:
        throw new InvalidOptionError('op', 'createAccount, issueKey, listKeys, revokeKey or usage', request.op);
    }
  })();
  return JSON.parse(JSON.stringify(result)) as unknown;
}
