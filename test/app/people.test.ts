/**
 * People on a real database (both back ends): users in accounts, one-time
 * links (set-up, reset, account set-up), sign-in with one answer for every
 * failure, disabling, and the rules for emails, passwords and names.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPasswordHasher } from '../../src/adapters/password-hasher.js';
import { InvalidCredentialsError } from '../../src/errors.js';
import { cleanDisplayName, createPeople, normaliseEmail } from '../../src/app/people/users.js';
import { SqlPeopleStore } from '../../src/adapters/db/people-store.js';
import { SqlStore } from '../../src/adapters/db/sql-store.js';
import { BACKENDS, postImage, startTestServer, type TestServer } from '../support/server.js';
import { generatedImages } from '../support/generated.js';

const JPEG = (await generatedImages()).find((g) => g.name === 'baseline.jpg')!.bytes;
const PASSWORD = 'correct horse battery staple';
const tokenOf = (url: string) => new URL(url).searchParams.get('token')!;

describe.each(BACKENDS)('people on %s', (backend) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ backend });
    await t.server.admin.createAccount('studio', 'pro');
    await t.server.admin.createAccount('other', 'pro');
  });
  afterAll(() => t?.close());

  it('a user made with a set-up link has no password until the link is used, once; then signs in', async () => {
    const { people } = t.server;
    const { user, link } = await people.createUser({ account: 'studio', email: ' Ada@Example.COM ', role: 'owner', displayName: 'Ada', actor: 'cli' });
    expect(user).toMatchObject({ email: 'ada@example.com', role: 'owner', operator: false, hasPassword: false, disabledAt: null, displayName: 'Ada' });
    expect(link!.url).toMatch(new RegExp(`^${t.url}/link\\?token=[A-Za-z0-9_-]{43}$`));
    expect(link!.expiresAt.getTime() - Date.now()).toBeGreaterThan(23.9 * 3600_000);
    await expect(people.signIn('ada@example.com', PASSWORD)).rejects.toBeInstanceOf(InvalidCredentialsError);

    const token = tokenOf(link!.url);
    expect(await people.viewLink(token)).toMatchObject({ purpose: 'setup', accountName: 'studio', email: 'ada@example.com' });
    await expect(people.useLink(token, { password: 'short' })).rejects.toMatchObject({ code: 'password_not_accepted' });
    // A refused password does not spend the link.
    const set = await people.useLink(token, { password: PASSWORD });
    expect(set.hasPassword).toBe(true);
    await expect(people.useLink(token, { password: PASSWORD })).rejects.toMatchObject({ code: 'link_not_valid' });
    await expect(people.viewLink(token)).rejects.toMatchObject({ code: 'link_not_valid' });

    expect(await people.signIn('ADA@example.com ', PASSWORD)).toMatchObject({ id: user.id, email: 'ada@example.com' });
  });

  it('unknown email, wrong password, disabled user, no password yet: the same error, after one password check each', async () => {
    const hasher = createPasswordHasher();
    let checks = 0;
    const counting = { ...hasher, verify: (stored: string | undefined, password: string) => (checks++, hasher.verify(stored, password)) };
    const { people } = t.server;
    await people.createUser({ account: 'studio', email: 'bob@example.com', password: PASSWORD, actor: 'cli' });
    await people.createUser({ account: 'studio', email: 'cy@example.com', password: PASSWORD, actor: 'cli' });
    await people.createUser({ account: 'studio', email: 'dee@example.com', actor: 'cli' });
    await people.disableUser('cy@example.com', 'cli');
    // The same use case over the same database, with its hasher counted.
    const counted = createPeople({
      people: new SqlPeopleStore(t.server.database.db),
      store: new SqlStore(t.server.database.db),
      hasher: counting,
      clock: { now: () => new Date() },
      baseUrl: () => t.url,
    });
    const failures = [
      ['nobody@example.com', PASSWORD],
      ['bob@example.com', 'wrong password entirely'],
      ['cy@example.com', PASSWORD],
      ['dee@example.com', PASSWORD],
      ['not an email', PASSWORD],
    ] as const;
    for (const [email, password] of failures) {
      const before = checks;
      const error = await counted.signIn(email, password).catch((e: unknown) => e);
      expect(error, email).toBeInstanceOf(InvalidCredentialsError);
      expect((error as Error).message).toBe('The email or the password is not right');
      expect(checks - before, email).toBe(1);
    }
    expect((await counted.signIn('bob@example.com', PASSWORD)).email).toBe('bob@example.com');
  });

  it("disabling revokes the user's API keys at once and spends their links", async () => {
    const { people, admin } = t.server;
    const { link } = await people.createUser({ account: 'other', email: 'eve@example.com', role: 'owner', actor: 'cli' });
    const { key } = await admin.issueKey('other', { user: 'eve@example.com' });
    expect((await postImage(t.url, key, JPEG)).status).toBe(200);
    const disabled = await people.disableUser('eve@example.com', 'cli');
    expect(disabled.disabledAt).toBeInstanceOf(Date);
    const refused = await postImage(t.url, key, JPEG);
    expect(refused.status).toBe(401);
    await expect(people.viewLink(tokenOf(link!.url))).rejects.toMatchObject({ code: 'link_not_valid' });
    await expect(people.resetUser('nobody@example.com', 'cli')).rejects.toMatchObject({ code: 'user_not_found' });
  });

  it("keys belong to users once the account has some, and call only what their scopes allow", async () => {
    const { people, admin } = t.server;
    await admin.createAccount('scoped', 'pro');
    const early = await admin.issueKey('scoped');
    expect(early.user).toBeNull();
    await people.createUser({ account: 'scoped', email: 'hal@example.com', role: 'member', password: PASSWORD, actor: 'cli' });
    await expect(admin.issueKey('scoped')).rejects.toMatchObject({ code: 'invalid_option', message: expect.stringContaining('every key belongs to a user') });
    await expect(admin.issueKey('scoped', { user: 'ada@example.com' })).rejects.toMatchObject({ code: 'user_not_found' });
    await expect(admin.issueKey('scoped', { user: 'hal@example.com', scopes: ['delete'] })).rejects.toMatchObject({ code: 'invalid_option' });
    await expect(admin.issueKey('scoped', { user: 'hal@example.com', scopes: [] })).rejects.toMatchObject({ code: 'invalid_option' });

    const checker = await admin.issueKey('scoped', { user: 'HAL@example.com', scopes: ['verify'] });
    expect(checker).toMatchObject({ user: 'hal@example.com', scopes: ['verify'] });
    const protect = await postImage(t.url, checker.key, JPEG);
    expect(protect.status).toBe(403);
    expect(await protect.json()).toMatchObject({ code: 'scope_not_allowed', error: expect.stringContaining('its scopes are verify') });
    expect((await postImage(t.url, checker.key, JPEG, { path: '/api/v1/verify' })).status).toBe(200);
    expect((await fetch(`${t.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${checker.key}` } })).status).toBe(200);
    // The refused protect counted nothing.
    expect((await admin.usage('scoped')).protect.used).toBe(0);

    // A member is not an owner: the key made before the account had users waits for the first owner.
    expect((await admin.listKeys('scoped')).map((k) => [k.user, k.scopes])).toEqual([
      [null, ['protect', 'verify']],
      ['hal@example.com', ['verify']],
    ]);
    await people.createUser({ account: 'scoped', email: 'ivy@example.com', role: 'owner', password: PASSWORD, actor: 'cli' });
    expect((await admin.listKeys('scoped'))[0]!.user).toBe('ivy@example.com');
  });

  it('a reset link replaces the older ones', async () => {
    const { people } = t.server;
    await people.createUser({ account: 'studio', email: 'fay@example.com', password: PASSWORD, actor: 'cli' });
    const first = await people.resetUser('fay@example.com', 'cli');
    const second = await people.resetUser('fay@example.com', 'cli');
    await expect(people.viewLink(tokenOf(first.url))).rejects.toMatchObject({ code: 'link_not_valid' });
    expect((await people.viewLink(tokenOf(second.url))).purpose).toBe('reset');
    await people.useLink(tokenOf(second.url), { password: 'a new and longer password' });
    await expect(people.signIn('fay@example.com', PASSWORD)).rejects.toBeInstanceOf(InvalidCredentialsError);
    expect((await people.signIn('fay@example.com', 'a new and longer password')).email).toBe('fay@example.com');
  });

  it('an email belongs to one account; roles, emails and passwords are checked', async () => {
    const { people } = t.server;
    await expect(people.createUser({ account: 'other', email: 'ADA@example.com', actor: 'cli' })).rejects.toMatchObject({ code: 'user_exists' });
    await expect(people.createUser({ account: 'studio', email: 'x@example.com', role: 'admin', actor: 'cli' })).rejects.toMatchObject({ code: 'invalid_option' });
    await expect(people.createUser({ account: 'nope', email: 'x@example.com', actor: 'cli' })).rejects.toMatchObject({ code: 'account_not_found' });
    await expect(people.createUser({ account: 'studio', email: 'x@example.com', password: 'x@example.com', actor: 'cli' })).rejects.toMatchObject({
      code: 'password_not_accepted',
      message: 'That password cannot be used: it is the email address',
    });
    expect((await people.listUsers('studio')).map((u) => u.email)).toEqual(['ada@example.com', 'bob@example.com', 'cy@example.com', 'dee@example.com', 'fay@example.com']);
  });

  it('an account made before people existed gets an account set-up link, once, that creates its first owner, who receives its keys', async () => {
    const { people, admin } = t.server;
    await admin.createAccount('legacy', 'pro');
    await admin.createAccount('new-style', 'pro');
    const { key } = await admin.issueKey('legacy');
    // What the migration that brought people did to every account that existed then.
    await sql`update accounts set owner_link_pending = true where name = 'legacy'`.execute(t.server.database.db);
    const { links, handedOver } = await people.accountSetupLinks();
    expect(links.map((l) => l.account)).toEqual(['legacy']);
    const mine = links[0]!;
    expect(mine.link.purpose).toBe('account-setup');
    await handedOver();
    expect((await people.accountSetupLinks()).links).toEqual([]);
    const token = tokenOf(mine.link.url);
    expect(await people.viewLink(token)).toMatchObject({ purpose: 'account-setup', accountName: 'legacy', email: undefined });
    const owner = await people.useLink(token, { password: PASSWORD, email: 'Gil@Example.com', displayName: 'Gil' });
    expect(owner).toMatchObject({ email: 'gil@example.com', role: 'owner', hasPassword: true, displayName: 'Gil' });
    expect((await admin.listKeys('legacy'))[0]).toMatchObject({ user: 'gil@example.com' });
    expect((await postImage(t.url, key, JPEG)).status).toBe(200);
    await expect(people.useLink(token, { password: PASSWORD, email: 'other@example.com' })).rejects.toMatchObject({ code: 'link_not_valid' });
    expect((await people.accountSetupLinks()).links).toEqual([]);
  });
});

describe('names and emails as stored', () => {
  it('emails are trimmed and lower-cased, and refused when they cannot be one', () => {
    expect(normaliseEmail('  Ada@Example.COM ')).toBe('ada@example.com');
    expect(normaliseEmail('owner@localhost')).toBe('owner@localhost');
    for (const bad of ['', 'ada', 'ada@', '@example.com', 'a b@example.com', 'ada@example', `${'a'.repeat(250)}@example.com`]) {
      expect(() => normaliseEmail(bad), bad).toThrow(/email/);
    }
  });

  it('display names lose control and format characters (bidi overrides, zero-width) and stop at 100 characters', () => {
    expect(cleanDisplayName('Ada\u202eecnalevol\u202c')).toBe('Adaecnalevol');
    expect(cleanDisplayName(' Ada\u200b  Lovelace\n')).toBe('Ada Lovelace');
    expect([...cleanDisplayName('é'.repeat(150))]).toHaveLength(100);
  });
});
