/**
 * A visitor's own Free account (OPTMARK_SIGNUP=open), through a real SMTP
 * server on loopback: the sign-in page offers it; the email is confirmed by
 * a mailed link; the link's page makes the account (Free, the visitor its
 * owner) and signs them in; a name taken comes back with what was typed and
 * the link still good; a link works once. An email that has a user is mailed
 * a note instead, and the page answers the same. Off, /sign-up is 404, and
 * open without mail the server refuses to start.
 */
import { rmSync } from 'node:fs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { linkIn as linkInMail, startSmtp, type ReceivedMail, type TestSmtp } from '../support/smtp.js';
import { freshDataDir, startTestServer, type TestServer } from '../support/server.js';
import { WebClient } from '../support/web-client.js';

const PASSWORD = 'correct horse battery staple';
let smtp: TestSmtp;
let received: ReceivedMail[];
let t: TestServer;
const dataDir = freshDataDir();

beforeAll(async () => {
  smtp = await startSmtp();
  received = smtp.received;
  t = await startTestServer({ dataDir, env: { OPTMARK_SMTP_URL: smtp.url, OPTMARK_SIGNUP: 'open' } });
  await t.server.admin.createAccount('existing', 'pro');
  await t.server.people.createUser({ account: 'existing', email: 'taken@shop.example', role: 'owner', password: PASSWORD, actor: 'cli' });
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The sign-up link in a mail. */
const linkIn = (text: string) => linkInMail(text, '/sign-up/confirm');
const mailTo = async (email: string) => {
  await expect.poll(() => received.some((m) => m.to.includes(email))).toBe(true);
  return received.filter((m) => m.to.includes(email)).at(-1)!;
};
const askFor = async (visitor: WebClient, email: string) => visitor.form('/sign-up', { pre: await visitor.preToken('/sign-up'), email });

describe('with OPTMARK_SIGNUP=open', () => {
  it('a visitor confirms their email by the mailed link, names the account, chooses a password and is signed in to a Free account they own', async () => {
    const visitor = new WebClient(t.url);
    expect((await visitor.page('/sign-in')).html).toContain('<a href="/sign-up">Create a Free account</a>');
    const asked = await askFor(visitor, 'Ria@Studio.example');
    expect(asked.status).toBe(200);
    expect(await asked.text()).toContain('A link is on its way to <strong>ria@studio.example</strong>');
    const link = linkIn((await mailTo('ria@studio.example')).text)!;
    expect(link).toBeDefined();
    const path = link.slice(link.indexOf('/sign-up/confirm'));
    const page = (await visitor.page(path)).html;
    expect(page).toContain('Your email <strong>ria@studio.example</strong> is confirmed');
    const token = new URL(link).searchParams.get('token')!;

    // A name taken: the form again, with what was typed; the link still good.
    const pre = await visitor.preToken(path);
    const taken = await visitor.form('/sign-up/confirm', { pre, token, accountName: 'existing', displayName: 'Ria', password: PASSWORD });
    expect(taken.status).toBe(422);
    const again = await taken.text();
    expect(again).toContain('An account named &quot;existing&quot; already exists');
    expect(again).toContain('value="Ria"');
    const made = await visitor.form('/sign-up/confirm', { pre: await visitor.preToken(path), token, accountName: 'studio-ria', displayName: 'Ria', password: PASSWORD });
    expect(made.status).toBe(303);
    expect(made.headers.get('location')).toBe('/overview?welcome=1');
    const overview = (await visitor.page('/overview?welcome=1')).html;
    expect(overview).toContain('studio-ria · Free plan');
    expect(overview).toContain('Your password is set: you are signed in.');
    // The account's activity says who made it: the visitor, signing up (it said "by someone").
    expect(overview).toMatch(/was added as owner \(by signing up\)/);
    expect(overview).not.toContain('by someone');
    expect((await t.server.admin.showAccount('studio-ria')).plan).toBe('free');
    expect((await t.server.people.listUsers('studio-ria')).map((u) => [u.email, u.role, u.displayName])).toEqual([['ria@studio.example', 'owner', 'Ria']]);
    const account = await t.server.admin.showAccount('studio-ria');
    const audit = (await sql<{ action: string; actor: string }>`select action, actor from audit_log where account_id = ${account.id} order by id`.execute(t.server.database.db)).rows;
    expect(audit.map((r) => [r.action, r.actor])).toEqual([
      ['account.created', 'sign-up'],
      ['user.created', 'sign-up'],
    ]);
    // Once: the link is spent.
    expect((await new WebClient(t.url).page(path)).status).toBe(404);
    // The account the taken name made no account.
    expect((await t.server.admin.listAccounts()).filter((a) => a.name.startsWith('studio')).map((a) => a.name)).toEqual(['studio-ria']);
  });

  it('an email that has a user is mailed a note instead of a link, and the page answers the same', async () => {
    const strip = (html: string) => html.replace(/value="[^"]*"/g, '').replace(/<strong>[^<]*<\/strong>/g, '');
    const known = await askFor(new WebClient(t.url), 'taken@shop.example');
    const unknown = await askFor(new WebClient(t.url), 'fresh@shop.example');
    expect(known.status).toBe(200);
    expect(strip(await known.text())).toBe(strip(await unknown.text()));
    const note = await mailTo('taken@shop.example');
    expect(note.text).toContain('which has one already');
    expect(linkIn(note.text)).toBeUndefined();
    expect(linkIn((await mailTo('fresh@shop.example')).text)).toBeDefined();
  });

  it('the answer does not wait for the lookup or the link (whose time would tell whether an email has a user): with every link write failing, each kind of address is answered alike', async () => {
    // Links cannot be written: before the answer, this failed (500) for exactly the addresses that needed one.
    const db = t.server.database.db;
    await sql`create function test_refuse_links() returns trigger language plpgsql as $$ begin raise exception 'no links today'; end $$`.execute(db);
    await sql`create trigger test_refuse_signups before insert on signups for each row execute function test_refuse_links()`.execute(db);
    await sql`create trigger test_refuse_resets before insert on one_time_links for each row execute function test_refuse_links()`.execute(db);
    try {
      const strip = (html: string) => html.replace(/value="[^"]*"/g, '').replace(/<strong>[^<]*<\/strong>/g, '');
      const signUps = await Promise.all(['taken@shop.example', 'unwritten@shop.example'].map((email) => askFor(new WebClient(t.url), email)));
      expect(signUps.map((r) => r.status)).toEqual([200, 200]);
      const [known, unknown] = await Promise.all(signUps.map((r) => r.text()));
      expect(strip(known!)).toBe(strip(unknown!));
      const resets = await Promise.all(
        ['taken@shop.example', 'nobody@shop.example'].map(async (email) => {
          const visitor = new WebClient(t.url);
          return visitor.form('/forgot-password', { pre: await visitor.preToken('/forgot-password'), email });
        }),
      );
      expect(resets.map((r) => r.status)).toEqual([200, 200]);
      const [knownReset, unknownReset] = await Promise.all(resets.map((r) => r.text()));
      expect(strip(knownReset!)).toBe(strip(unknownReset!));
    } finally {
      await sql`drop trigger test_refuse_signups on signups`.execute(db);
      await sql`drop trigger test_refuse_resets on one_time_links`.execute(db);
      await sql`drop function test_refuse_links()`.execute(db);
    }
    // Once links can be written again, the next ask gets its mail.
    received.length = 0;
    await askFor(new WebClient(t.url), 'unwritten@shop.example');
    expect(linkIn((await mailTo('unwritten@shop.example')).text)).toBeDefined();
  });

  it('a newer link for an email retires the older one; a malformed address comes back with the reason', async () => {
    await askFor(new WebClient(t.url), 'twice@shop.example');
    const first = linkIn((await mailTo('twice@shop.example')).text)!;
    received.length = 0;
    await askFor(new WebClient(t.url), 'twice@shop.example');
    const second = linkIn((await mailTo('twice@shop.example')).text)!;
    expect(second).not.toBe(first);
    expect((await new WebClient(t.url).page(first.slice(first.indexOf('/sign-up')))).status).toBe(404);
    expect((await new WebClient(t.url).page(second.slice(second.indexOf('/sign-up')))).status).toBe(200);
    const bad = await askFor(new WebClient(t.url), 'not an address');
    expect(bad.status).toBe(422);
    expect(await bad.text()).toContain('Give an email address such as name@example.com.');
  });
});

describe('without it', () => {
  it('/sign-up is 404 and the sign-in page does not offer it', async () => {
    const off = await startTestServer();
    try {
      const visitor = new WebClient(off.url);
      expect((await visitor.page('/sign-up')).status).toBe(404);
      expect((await visitor.page('/sign-in')).html).not.toContain('/sign-up');
    } finally {
      await off.close();
    }
  });

  it('open without mail is refused at start, saying why', () => {
    expect(() => loadConfig({ OPTMARK_DATA_DIR: dataDir, OPTMARK_SIGNUP: 'open' })).toThrow(ConfigError);
    expect(() => loadConfig({ OPTMARK_DATA_DIR: dataDir, OPTMARK_SIGNUP: 'open' })).toThrow(/OPTMARK_SIGNUP=open needs OPTMARK_SMTP_URL/);
    expect(() => loadConfig({ OPTMARK_DATA_DIR: dataDir, OPTMARK_SIGNUP: 'yes' })).toThrow(/must be open or off/);
  });
});
