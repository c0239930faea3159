/**
 * What operators change from the command line (the admin operations the CLI
 * sends over the admin socket, or runs on the database itself) is a line of
 * the audit log, actor `cli`: accounts created, moved to another plan, given
 * limits, renamed; plan limits changed; keys issued and revoked. The
 * account's owner reads these lines on the overview, in words.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { WebClient } from '../support/web-client.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t?.close());

it('each change is audited with its actor, and the owner reads it in words', async () => {
  const { admin } = t.server;
  const account = await admin.createAccount('audited', 'pro');
  await t.server.people.createUser({ account: 'audited', email: 'owner@audited.example', role: 'owner', password: 'correct horse battery staple', actor: 'cli' });
  const key = await admin.issueKey('audited', { user: 'owner@audited.example', scopes: ['verify'] });
  await admin.setPlan('audited', 'lifetime');
  await admin.setLimits('audited', { protectPerMonth: 5 });
  await admin.renameAccount('audited', 'audited-2');
  await admin.revokeKey(key.id);
  await admin.setPlanLimits('pro', { scansPerUserPerDay: 12 });

  const rows = (await sql<{ action: string; actor: string; account_id: string | null; detail: string }>`select action, actor, account_id, detail from audit_log where account_id = ${account.id} or action = 'plan.limits-set' order by id`.execute(t.server.database.db)).rows;
  const lines = rows.filter((r) => !r.action.startsWith('user.'));
  expect(lines.map((r) => [r.action, r.actor])).toEqual([
    ['account.created', 'cli'],
    ['key.issued', 'cli'],
    ['account.plan-set', 'cli'],
    ['account.limits-set', 'cli'],
    ['account.renamed', 'cli'],
    ['key.revoked', 'cli'],
    ['plan.limits-set', 'cli'],
  ]);
  expect(JSON.parse(lines[1]!.detail)).toMatchObject({ by: 'cli', key: key.id, prefix: key.prefix, user: 'owner@audited.example', scopes: ['verify'] });
  expect(JSON.parse(lines[2]!.detail)).toMatchObject({ from: 'pro', to: 'lifetime' });
  expect(JSON.parse(lines[5]!.detail)).toMatchObject({ key: key.id, prefix: key.prefix });
  // A key revoked already: refused, and no second line.
  await expect(admin.revokeKey(key.id)).rejects.toMatchObject({ code: 'key_not_found' });

  const owner = new WebClient(t.url);
  expect((await owner.signIn('owner@audited.example', 'correct horse battery staple')).status).toBe(303);
  const page = (await owner.page('/overview')).html;
  expect(page).toContain('the account was created on the Pro plan');
  expect(page).toContain(`an operator (command line) issued a key (${key.prefix}…)`);
  expect(page).toContain('the account moved from the Pro plan to Lifetime');
  expect(page).toContain('the account was renamed from audited to audited-2');
  expect(page).toContain(`an operator (command line) revoked a key (${key.prefix}…)`);
});
