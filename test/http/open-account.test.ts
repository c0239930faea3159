/**
 * An operator opens an account from the console (DESIGN §6 "Getting an
 * account"): its name, plan and owner; without mail configured the owner's
 * one-time set-up link is shown to hand over, and the owner it makes signs
 * in to their new account. A name or an email already taken comes back on
 * the form with what was typed and makes nothing; both changes are lines of
 * the audit log, the console's own included.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { linkToken, WebClient } from '../support/web-client.js';

const PASSWORD = 'correct horse battery staple';
let t: TestServer;
let operator: WebClient;

beforeAll(async () => {
  t = await startTestServer();
  await t.server.admin.createAccount('service-team', 'pro');
  await t.server.people.createUser({ account: 'service-team', email: 'ops@team.example', role: 'owner', operator: true, password: PASSWORD, actor: 'cli' });
  operator = new WebClient(t.url);
  expect((await operator.signIn('ops@team.example', PASSWORD)).status).toBe(303);
});
afterAll(() => t?.close());

const open = async (fields: Record<string, string>) => {
  const response = await operator.form('/operator/accounts', { csrf: await operator.csrf(), ...fields });
  return { status: response.status, html: await response.text() };
};

it('opens the account with its owner, shows the set-up link to hand over, and the owner signs in to it', async () => {
  const page = (await operator.page('/operator')).html;
  expect(page).toContain('<h2 id="accounts-heading">Open an account</h2>');
  const opened = await open({ name: 'new-shop', plan: 'lifetime', email: 'Owner@Shop.example' });
  expect(opened.status).toBe(200);
  expect(opened.html).toContain('The account <strong>new-shop</strong> (Lifetime) is open. Send this link to its owner <strong>owner@shop.example</strong>');
  const link = /id="setup-link" type="text" readonly value="([^"]+)"/.exec(opened.html)![1]!;
  const owner = new WebClient(t.url);
  const path = new URL(link).pathname + new URL(link).search;
  expect((await owner.form('/link', { pre: await owner.preToken(path), token: linkToken(link), password: PASSWORD })).status).toBe(303);
  expect((await owner.page('/overview')).html).toContain('new-shop · Lifetime plan');
  expect((await t.server.admin.showAccount('new-shop')).plan).toBe('lifetime');

  const operatorId = (await t.server.people.listUsers('service-team'))[0]!.id;
  const account = await t.server.admin.showAccount('new-shop');
  const rows = (await sql<{ action: string; actor: string; detail: string }>`select action, actor, detail from audit_log where account_id = ${account.id} order by id`.execute(t.server.database.db)).rows;
  expect(rows.slice(0, 2).map((r) => [r.action, r.actor])).toEqual([
    ['account.created', operatorId],
    ['user.created', operatorId],
  ]);
  expect(JSON.parse(rows[0]!.detail)).toMatchObject({ by: 'ops@team.example', name: 'new-shop', plan: 'lifetime' });
  expect((await operator.page('/operator')).html).toContain('ops@team.example opened an account (“new-shop”)');
});

it('a name or an owner already taken, or a name that is not one, comes back on the form with what was typed, and makes nothing', async () => {
  const before = (await t.server.admin.listAccounts()).length;
  const takenName = await open({ name: 'new-shop', plan: 'pro', email: 'someone@else.example' });
  expect(takenName.status).toBe(409);
  expect(takenName.html).toContain('An account named &quot;new-shop&quot; already exists');
  expect(takenName.html).toContain('value="someone@else.example"');
  const takenOwner = await open({ name: 'other-shop', plan: 'pro', email: 'owner@shop.example' });
  expect(takenOwner.status).toBe(409);
  expect(takenOwner.html).toContain('A user with the email owner@shop.example exists already');
  expect(takenOwner.html).toContain('value="other-shop"');
  const badName = await open({ name: 'no spaces', plan: 'pro', email: 'a@b.example' });
  expect(badName.status).toBe(400);
  expect(badName.html).toContain('value="no spaces"');
  expect((await t.server.admin.listAccounts()).length).toBe(before);
});

it('only operators open accounts', async () => {
  const owner = new WebClient(t.url);
  await owner.signIn('owner@shop.example', PASSWORD);
  const refused = await owner.form('/operator/accounts', { csrf: await owner.csrf(), name: 'sneaky', plan: 'lifetime', email: 'x@y.example' });
  expect(refused.status).toBe(403);
  await expect(t.server.admin.showAccount('sneaky')).rejects.toMatchObject({ code: 'account_not_found' });
});

it('when the mail cannot be sent the account is open all the same, and the console shows the link to hand over', async () => {
  // A mail server that refuses every connection (a closed port on loopback).
  const unmailed = await startTestServer({ env: { OPTMARK_SMTP_URL: 'smtp://127.0.0.1:1' } });
  try {
    await unmailed.server.admin.createAccount('team', 'pro');
    await unmailed.server.people.createUser({ account: 'team', email: 'ops@team.example', role: 'owner', operator: true, password: PASSWORD, actor: 'cli' });
    const ops = new WebClient(unmailed.url);
    await ops.signIn('ops@team.example', PASSWORD);
    const response = await ops.form('/operator/accounts', { csrf: await ops.csrf(), name: 'unmailed', plan: 'pro', email: 'boss@unmailed.example' });
    expect(response.status).toBe(200);
    expect(await response.text()).toMatch(/id="setup-link" type="text" readonly value="[^"]+\/link\?token=/);
    expect((await unmailed.server.people.listUsers('unmailed')).map((u) => u.email)).toEqual(['boss@unmailed.example']);
  } finally {
    await unmailed.close();
  }
});

it("revoking a key from the console asks first, naming the key and its account; only confirm=yes revokes it", async () => {
  await t.server.admin.createAccount('revoked-shop', 'pro');
  const issued = await t.server.admin.issueKey('revoked-shop');
  const keyId = (await t.server.apiKeys.allKeys()).find((k) => k.accountName === 'revoked-shop')!.id;
  const works = async () => (await fetch(`${t.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${issued.key}` } })).status;
  const csrf = await operator.csrf();
  const asked = await operator.form('/operator/keys/revoke', { csrf, key: keyId });
  expect(asked.status).toBe(200);
  const page = await asked.text();
  expect(page).toMatch(/Revoke the key <code>omk_[^<]+…<\/code> \(account revoked-shop\)\?/);
  expect(page).toContain('action="/operator/keys/revoke"');
  expect(await works()).toBe(200);
  const revoked = await operator.form('/operator/keys/revoke', { csrf, key: keyId, confirm: 'yes' });
  expect(await revoked.text()).toContain('of revoked-shop: calls with it get 401 from now on');
  expect(await works()).toBe(401);
});

it("an operator revoking another account's key from the keys page's route is asked the same, on the console", async () => {
  await t.server.admin.createAccount('asked-shop', 'pro');
  const issued = await t.server.admin.issueKey('asked-shop');
  const keyId = (await t.server.apiKeys.allKeys()).find((k) => k.accountName === 'asked-shop')!.id;
  const works = async () => (await fetch(`${t.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${issued.key}` } })).status;
  const csrf = await operator.csrf();
  const asked = await operator.form('/keys/revoke', { csrf, key: keyId });
  expect(asked.status).toBe(200);
  const page = await asked.text();
  expect(page).toMatch(/Revoke the key <code>omk_[^<]+…<\/code> \(account asked-shop\)\?/);
  expect(page).toContain('action="/operator/keys/revoke"');
  expect(await works()).toBe(200);
  expect((await operator.form('/keys/revoke', { csrf, key: keyId, confirm: 'yes' })).status).toBe(200);
  expect(await works()).toBe(401);
});
