/**
 * The brakes on guessing passwords and on invitations hold however the
 * tries arrive: all at once (a try is counted when it is let in, not once
 * its password has been checked, so tries sent together are not all let in
 * before the first failure is counted), and through any server on one
 * PostgreSQL (the counts are kept in the database: two workers or two
 * instances do not give twice as many tries). Each test's client has an
 * address of its own, given by X-Forwarded-For through a trusted proxy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, startTestServer, type TestServer } from '../support/server.js';
import { WebClient } from '../support/web-client.js';

const PASSWORD = 'correct horse battery staple';
const PROXY = { OPTMARK_TRUST_PROXY: '127.0.0.1,::1' };

/** Sign-ins sent at once, each from a fresh browser at `address`: their statuses. */
async function signInAll(urls: string[], address: string, tries: { email: string; password: string }[]): Promise<number[]> {
  const browsers = await Promise.all(
    tries.map(async (_, i) => {
      const browser = new WebClient(urls[i % urls.length]!, { 'X-Forwarded-For': address });
      return { browser, pre: await browser.preToken() };
    }),
  );
  const answers = await Promise.all(browsers.map(({ browser, pre }, i) => browser.form('/sign-in', { pre, ...tries[i]! })));
  return Promise.all(answers.map(async (a) => (await a.arrayBuffer(), a.status)));
}

const count = (statuses: number[], status: number) => statuses.filter((s) => s === status).length;
const wrong = (email: string, n: number) => Array.from({ length: n }, (_, i) => ({ email, password: `wrong password ${i}` }));

describe.each(BACKENDS)('on %s', (backend) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ backend, env: PROXY });
    await t.server.admin.createAccount('guarded', 'pro');
    await t.server.people.createUser({ account: 'guarded', email: 'ada@guarded.example', role: 'owner', password: PASSWORD, actor: 'cli' });
  });
  afterAll(() => t?.close());

  it('30 wrong passwords sent at once for one email: 5 are checked, 25 wait (429); the right one then waits too, from that address only', async () => {
    const statuses = await signInAll([t.url], '198.51.100.1', wrong('ada@guarded.example', 30));
    expect(count(statuses, 401)).toBe(5);
    expect(count(statuses, 429)).toBe(25);
    expect(await signInAll([t.url], '198.51.100.1', [{ email: 'ada@guarded.example', password: PASSWORD }])).toEqual([429]);
    expect(await signInAll([t.url], '198.51.100.2', [{ email: 'ada@guarded.example', password: PASSWORD }])).toEqual([303]);
    // Kept under digests: no typed email or address in clear; each kept until it may be forgotten.
    const rows = await t.server.database.db.selectFrom('brakes').selectAll().execute();
    expect(rows.length).toBeGreaterThanOrEqual(2);
    for (const row of rows) {
      expect(row.key).toMatch(/^[0-9a-f]{64}$/);
      expect(row.state).not.toMatch(/guarded|198\.51/);
      expect(row.forget_at.getTime()).toBeGreaterThan(Date.now());
    }
  });

  it('40 sign-ins at once from one address, each for another email: 20 are checked, 20 wait; a right password from there waits too', async () => {
    const tries = Array.from({ length: 40 }, (_, i) => ({ email: `nobody${i}@guarded.example`, password: PASSWORD }));
    const statuses = await signInAll([t.url], '203.0.113.7', tries);
    expect(count(statuses, 401)).toBe(20);
    expect(count(statuses, 429)).toBe(20);
    expect(await signInAll([t.url], '203.0.113.7', [{ email: 'ada@guarded.example', password: PASSWORD }])).toEqual([429]);
  });

  it('a sign-in that holds is given back: 25 in a row from one address all get in', async () => {
    for (let i = 0; i < 25; i++) expect(await signInAll([t.url], '192.0.2.99', [{ email: 'ada@guarded.example', password: PASSWORD }])).toEqual([303]);
  });

  it('an account sends at most 20 invitations an hour when asked for all at once: 25 sent together, 20 go out', async () => {
    await t.server.admin.createAccount('inviting', 'pro');
    await t.server.people.createUser({ account: 'inviting', email: 'owner@inviting.example', role: 'owner', password: PASSWORD, actor: 'cli' });
    const owner = new WebClient(t.url, { 'X-Forwarded-For': '192.0.2.50' });
    expect((await owner.signIn('owner@inviting.example', PASSWORD)).status).toBe(303);
    const csrf = await owner.csrf();
    const answers = await Promise.all(Array.from({ length: 25 }, (_, i) => owner.form('/account/members', { csrf, email: `guest${i}@inviting.example`, role: 'member' })));
    const statuses = answers.map((a) => a.status);
    expect(count(statuses, 200)).toBe(20);
    expect(count(statuses, 429)).toBe(5);
    const { db } = t.server.database;
    const invited = await db.selectFrom('users').innerJoin('accounts', 'accounts.id', 'users.account_id').where('accounts.name', '=', 'inviting').select((e) => e.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    expect(Number(invited.n)).toBe(21);
  });
});

describe('two servers on one PostgreSQL', () => {
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    a = await startTestServer({ backend: 'postgres', env: PROXY });
    b = await startTestServer({ backend: 'postgres', databaseUrl: a.databaseUrl, env: PROXY });
    await a.server.admin.createAccount('shared', 'pro');
    await a.server.people.createUser({ account: 'shared', email: 'bo@shared.example', role: 'owner', password: PASSWORD, actor: 'cli' });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('share the brake on one email: 3 wrong passwords on each, then both say wait', async () => {
    expect(await signInAll([a.url], '198.51.100.20', wrong('bo@shared.example', 3))).toEqual([401, 401, 401]);
    const second = await signInAll([b.url], '198.51.100.20', wrong('bo@shared.example', 3));
    expect(second.sort()).toEqual([401, 401, 429]);
    expect(await signInAll([a.url, b.url], '198.51.100.20', [{ email: 'bo@shared.example', password: PASSWORD }, { email: 'bo@shared.example', password: PASSWORD }])).toEqual([429, 429]);
  });

  it('share the brake on one address: 20 failures spread over both, then both say wait', async () => {
    const tries = Array.from({ length: 24 }, (_, i) => ({ email: `nobody${i}@shared.example`, password: PASSWORD }));
    const statuses = await signInAll([a.url, b.url], '203.0.113.70', tries);
    expect(count(statuses, 401)).toBe(20);
    expect(count(statuses, 429)).toBe(4);
  });

  it('share an account\'s 20 invitations an hour', async () => {
    const owners = await Promise.all(
      [a, b].map(async (server) => {
        const owner = new WebClient(server.url, { 'X-Forwarded-For': '192.0.2.60' });
        expect((await owner.signIn('bo@shared.example', PASSWORD)).status).toBe(303);
        return { owner, csrf: await owner.csrf() };
      }),
    );
    const statuses = [];
    for (let i = 0; i < 24; i++) {
      const { owner, csrf } = owners[i % 2]!;
      statuses.push((await owner.form('/account/members', { csrf, email: `guest${i}@shared.example`, role: 'member' })).status);
    }
    expect(statuses.slice(0, 20)).toEqual(Array(20).fill(200));
    expect(statuses.slice(20)).toEqual([429, 429, 429, 429]);
  });
});
