/**
 * API access as people get it, in a real browser (Debian's chromium driven
 * by playwright-core): a member requests a key for an integration (a second
 * request of the same name is refused with what was typed kept); an operator
 * approves it in the console with the protect scope alone; the requester,
 * told by mail (through a real SMTP server in the test, no key in it),
 * reveals the key once and a plain HTTP client protects an image with it
 * (and is refused verify, out of its scope); a reload shows only the
 * prefix; the key is rolled with a day of overlap (both work, then, a day
 * later by the server's clock, only the new one); revoked (401); a second
 * request is denied and the requester reads the reason; a Free account is
 * told why it cannot ask. Every decision is in the audit log, with the
 * address it came from; no key is in the database files, the log or a mail.
 * Each page is checked with axe-core (and photographed by `npm run test:screenshots`).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { sql } from 'kysely';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatedImages } from '../support/generated.js';
import { auditPage, launchBrowser, watchConsole } from '../support/browser.js';
import { startSmtp, type ReceivedMail, type TestSmtp } from '../support/smtp.js';
import { freshDataDir, postImage, startTestServer, type TestServer } from '../support/server.js';

const JPEG = (await generatedImages()).find((g) => g.name === 'baseline.jpg')!.bytes;
const PASSWORD = 'correct horse battery staple';
const DAY_MS = 86_400_000;
const scratch = mkdtempSync(join(tmpdir(), 'optmark-access-'));
const dataDir = freshDataDir();
/** The mails taken, read as a person would: quoted-printable soft line breaks undone. */
const mails = (): ReceivedMail[] => smtp.received.map((m) => ({ ...m, text: m.text.replace(/=\r?\n/g, '') }));
const log = new PassThrough();
let logText = '';
log.on('data', (chunk: Buffer) => (logText += chunk.toString('utf8')));
/** The server's clock: the test moves it forward. */
let offsetMs = 0;
const clock = { now: () => new Date(Date.now() + offsetMs) };

let smtp: TestSmtp;
let t: TestServer;
/** One browser per person: each has its own cookies. */
const browsers: BrowserContext[] = [];
const consoleErrors: string[] = [];
/** Every key the test saw: none may be stored or written anywhere. */
const keysSeen: string[] = [];

async function page(): Promise<Page> {
  const browser = await launchBrowser(scratch);
  browsers.push(browser);
  return watchConsole(browser.pages()[0] ?? (await browser.newPage()), consoleErrors);
}

/** The text of every element the locator finds, once it holds `text` (within 10 s). */
async function sees(locator: Locator, text: string): Promise<void> {
  await expect.poll(async () => (await locator.allInnerTexts()).join('\n'), { timeout: 10_000 }).toContain(text);
}

async function signIn(p: Page, email: string, next = '/keys'): Promise<void> {
  await p.goto(`${t.url}/sign-in?next=${encodeURIComponent(next)}`);
  await p.getByLabel('Email').fill(email);
  await p.getByLabel('Password').fill(PASSWORD);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.waitForURL(`${t.url}${next}`);
}

const protect = (key: string) => postImage(t.url, key, JPEG, { filename: 'photo.jpg' });
const verify = (key: string) => postImage(t.url, key, JPEG, { path: '/api/v1/verify', filename: 'photo.jpg' });

beforeAll(async () => {
  smtp = await startSmtp();
  t = await startTestServer({ dataDir, clock, logTo: log, env: { OPTMARK_SMTP_URL: smtp.url, OPTMARK_MAIL_FROM: 'optmark <no-reply@example.org>' } });
  await t.server.admin.createAccount('studio', 'pro');
  await t.server.people.createUser({ account: 'studio', email: 'owner@studio.example', role: 'owner', password: PASSWORD, actor: 'cli' });
  await t.server.people.createUser({ account: 'studio', email: 'alice@studio.example', role: 'member', password: PASSWORD, displayName: 'Alice', actor: 'cli' });
  await t.server.admin.createAccount('team', 'pro');
  await t.server.people.createUser({ account: 'team', email: 'olga@ops.example', role: 'member', operator: true, password: PASSWORD, displayName: 'Olga', actor: 'cli' });
  await t.server.admin.createAccount('hobby', 'free');
  await t.server.people.createUser({ account: 'hobby', email: 'fred@free.example', role: 'owner', password: PASSWORD, actor: 'cli' });
}, 60_000);

afterAll(async () => {
  for (const browser of browsers) await browser.close();
  await t?.close();
  await smtp?.close();
  rmSync(scratch, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

describe('a key for an integration: requested, approved, revealed once, rolled, revoked', () => {
  let alice: Page;
  let olga: Page;
  let firstKey: string;
  let secondKey: string;

  it('a member requests access; the same name again is refused, with what was typed kept', async () => {
    alice = await page();
    await signIn(alice, 'alice@studio.example');
    await alice.getByRole('heading', { name: 'API keys', level: 1 }).first().waitFor({ state: 'visible' });
    await auditPage(alice, 'keys-empty');
    const fill = async (purpose: string) => {
      await alice.getByLabel('Integration name').fill('Upload pipeline');
      await alice.getByLabel('What it does with the API').fill(purpose);
      await alice.getByLabel('Expected calls per month').fill('2500');
      await alice.getByLabel('verify: read the opt-out and other signals').uncheck();
      await alice.getByLabel('How the team can reach you').fill('ops@studio.example');
      await alice.getByRole('button', { name: 'Request access' }).click();
    };
    await fill('Marks every photo our shop uploads');
    await sees(alice.getByRole('status'), 'Your request for Upload pipeline is sent');
    await sees(alice.getByRole('row', { name: /Upload pipeline/ }), 'Waiting for the team');
    await fill('A second try');
    await sees(alice.getByRole('alert'), 'pending request for "Upload pipeline" already');
    // What was typed is still in the form.
    expect(await alice.getByLabel('What it does with the API').inputValue()).toBe('A second try');
    expect(await alice.getByLabel('Expected calls per month').inputValue()).toBe('2500');
    expect(await alice.getByLabel('verify: read the opt-out and other signals').isChecked()).toBe(false);
    await auditPage(alice, 'keys-refused');
    // Neither scope ticked: said in words, not as what a parser expected.
    await alice.getByLabel('Integration name').fill('No scope');
    await alice.getByLabel('protect: write the opt-out into images').uncheck();
    await alice.getByRole('button', { name: 'Request access' }).click();
    await sees(alice.getByRole('alert'), 'Choose what the key may do: protect, verify, or both');
    await alice.getByLabel('protect: write the opt-out into images').check();
    expect(await t.server.apiKeys.listAll('pending')).toHaveLength(1);
  });

  it('an operator sees it first in the console, with its account, plan and requester, and approves it for protect only', async () => {
    olga = await page();
    await signIn(olga, 'olga@ops.example', '/operator');
    const card = olga.getByRole('article', { name: /Upload pipeline/ });
    await sees(card, 'studio · Pro');
    await sees(card, 'alice@studio.example');
    await sees(card, 'Marks every photo our shop uploads');
    await auditPage(olga, 'operator-pending');
    await card.getByLabel('verify').uncheck();
    await card.getByRole('button', { name: 'Approve Upload pipeline' }).click();
    await sees(olga.getByRole('status'), 'Approved Upload pipeline for studio (protect)');
    await olga.getByText('None: every request is decided.').first().waitFor({ state: 'visible' });
    // The requester is told by mail, without a key (there is none yet).
    await expect.poll(() => mails().filter((m) => m.to.includes('alice@studio.example')).length).toBe(1);
    expect(mails()[0]!.text).toContain('Upload pipeline');
    expect(mails()[0]!.text).toContain('/keys');
    expect(mails()[0]!.text).not.toMatch(/omk_[A-Za-z0-9]{20,}/);
  });

  it('the requester reveals the key once; a plain HTTP client protects with it; verify is out of its scope; a reload shows the prefix only', async () => {
    await alice.goto(`${t.url}/keys`);
    await alice.getByRole('button', { name: 'Reveal the key for Upload pipeline' }).click();
    const shown = alice.getByLabel('The new API key');
    firstKey = await shown.inputValue();
    keysSeen.push(firstKey);
    expect(firstKey).toMatch(/^omk_/);
    await alice.getByText('It is shown only this once').first().waitFor({ state: 'visible' });
    await auditPage(alice, 'keys-revealed');
    // Through a plain HTTP client, as an integration calls.
    expect((await protect(firstKey)).status).toBe(200);
    const refused = await verify(firstKey);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { code: string }).code).toBe('scope_not_allowed');
    // Reloading the answer sends the reveal again: refused, the key is not shown again.
    await alice.reload();
    await sees(alice.getByRole('alert'), 'This key was revealed already');
    expect(await alice.content()).not.toContain(firstKey);
    // The page later: the key is gone, its prefix stays.
    await alice.goto(`${t.url}/keys`);
    expect(await alice.content()).not.toContain(firstKey);
    await sees(alice.getByRole('row', { name: new RegExp(firstKey.slice(0, 10)) }), 'Active');
    expect(await alice.getByRole('button', { name: /Reveal the key/ }).count()).toBe(0);
    // A second reveal of the same grant is refused: a key is shown once.
    const request = (await t.server.apiKeys.listAll('approved'))[0]!;
    await expect(t.server.apiKeys.reveal({ kind: 'person', user: (await t.server.people.listUsers('studio')).find((u) => u.email === 'alice@studio.example')!, plan: 'pro', address: null }, request.id)).rejects.toMatchObject({ code: 'grant_not_available' });
  });

  it('a roll with a day of overlap: both keys work, then, a day later, only the new one', async () => {
    await alice.getByLabel('Old key works for').selectOption('1');
    await alice.getByRole('button', { name: /^Roll/ }).click();
    secondKey = await alice.getByLabel('The new API key').inputValue();
    keysSeen.push(secondKey);
    expect(secondKey).not.toBe(firstKey);
    await sees(alice.getByRole('status'), 'keeps working until');
    await auditPage(alice, 'keys-rolled');
    expect((await protect(firstKey)).status).toBe(200);
    expect((await protect(secondKey)).status).toBe(200);
    offsetMs += DAY_MS + 60_000;
    const old = await protect(firstKey);
    expect(old.status).toBe(401);
    expect(((await old.json()) as { code: string }).code).toBe('invalid_api_key');
    expect((await protect(secondKey)).status).toBe(200);
  });

  it('revoked from the page after a confirmation that says what it does ("Keep it" changes nothing): 401 at once', async () => {
    // A day passed by the server's clock: the session ended (8 idle hours).
    await signIn(alice, 'alice@studio.example');
    const prefix = secondKey.slice(0, 10);
    const row = alice.getByRole('row', { name: new RegExp(prefix) });
    await row.getByRole('button', { name: /^Revoke/ }).click();
    // Asked first, the question focused; nothing is revoked yet.
    const question = alice.getByRole('heading', { name: /^Revoke the key/ });
    await expect.poll(() => question.evaluate((h) => h === h.ownerDocument.activeElement)).toBe(true);
    const confirmation = alice.getByRole('group', { name: /^Revoke the key/ });
    expect(await confirmation.textContent()).toContain('Every call with it is refused from now on (401)');
    await auditPage(alice, 'keys-revoke-confirm');
    expect((await protect(secondKey)).status).toBe(200);
    await alice.getByRole('link', { name: 'Keep it' }).click();
    await expect.poll(() => confirmation.count()).toBe(0);
    expect((await protect(secondKey)).status).toBe(200);

    await alice.getByRole('row', { name: new RegExp(prefix) }).getByRole('button', { name: /^Revoke/ }).click();
    await confirmation.getByRole('button', { name: /^Revoke/ }).click();
    await sees(alice.getByRole('status'), 'is revoked');
    expect((await protect(secondKey)).status).toBe(401);
  });

  it('a denied request: the requester reads the reason, on the page and by mail', async () => {
    await alice.getByLabel('Integration name').fill('Scraper');
    await alice.getByLabel('What it does with the API').fill('Checks other sites');
    await alice.getByLabel('Expected calls per month').fill('900000');
    await alice.getByRole('button', { name: 'Request access' }).click();
    await sees(alice.getByRole('status'), 'Your request for Scraper is sent');
    await signIn(olga, 'olga@ops.example', '/operator');
    const card = olga.getByRole('article', { name: /Scraper/ });
    await sees(card, 'Upload pipeline: approved');
    await card.getByLabel('Reason (the requester reads it)').fill('Checking other sites is not what the API is for.');
    await card.getByRole('button', { name: 'Deny Scraper' }).click();
    await sees(olga.getByRole('status'), 'Denied Scraper');
    await auditPage(olga, 'operator-decided');
    await alice.goto(`${t.url}/keys`);
    await sees(alice.getByRole('row', { name: /Scraper/ }), 'Checking other sites is not what the API is for.');
    await expect.poll(() => mails().filter((m) => m.text.includes('Checking other sites is not what the API is for.')).length).toBe(1);
  });

  it('a member withdraws a pending request; the owner sees every request and the access activity', async () => {
    await alice.getByLabel('Integration name').fill('Later');
    await alice.getByLabel('What it does with the API').fill('Maybe');
    await alice.getByLabel('Expected calls per month').fill('10');
    await alice.getByRole('button', { name: 'Request access' }).click();
    await alice.getByRole('button', { name: 'Withdraw Later' }).click();
    await sees(alice.getByRole('status'), 'The request for Later is withdrawn');
    const owner = await page();
    await signIn(owner, 'owner@studio.example');
    for (const name of ['Upload pipeline', 'Scraper', 'Later']) await owner.getByRole('row', { name: new RegExp(name) }).first().first().waitFor({ state: 'visible' });
    const activity = owner.getByRole('region', { name: 'Access activity' }).or(owner.locator('section[aria-labelledby="activity-heading"]'));
    for (const words of ['requested access', 'approved a request', 'revealed a new key', 'rolled a key', 'revoked a key', 'denied a request', 'withdrew a request']) await sees(activity, words);
    // The owner sees a member's key, and is told what they may do with it: revoke it, not roll it.
    await sees(owner.locator('section[aria-labelledby="keys-heading"]'), 'you roll only your own keys and those bound to no one');
    expect(await alice.locator('section[aria-labelledby="keys-heading"]').textContent()).not.toContain('As an owner');
    await auditPage(owner, 'keys-owner');
  });

  it('a Free account is told why it cannot request, and nothing is stored', async () => {
    const fred = await page();
    await signIn(fred, 'fred@free.example');
    await fred.getByText('The Free plan does not include the API').first().waitFor({ state: 'visible' });
    expect(await fred.getByRole('button', { name: 'Request access' }).count()).toBe(0);
    await auditPage(fred, 'keys-free');
    const before = (await t.server.apiKeys.listAll()).length;
    const csrf = await fred.locator('meta[name="csrf-token"]').getAttribute('content');
    const refused = await fred.request.post(`${t.url}/keys/requests`, {
      form: { csrf: csrf!, name: 'Free try', purpose: 'x', monthlyVolume: '1', scopes: 'protect', contact: 'x' },
      headers: { Accept: 'application/json', Origin: t.url },
    });
    expect(refused.status()).toBe(403);
    expect(((await refused.json()) as { code: string }).code).toBe('plan_not_allowed');
    expect(await t.server.apiKeys.listAll()).toHaveLength(before);
  });

  it('the audit log holds each decision with who, when and from which address', async () => {
    const rows = (await sql<{ action: string; actor: string; address: string | null; detail: string }>`select action, actor, address, detail from audit_log order by id`.execute(t.server.database.db)).rows;
    // The people's decisions on the pages (the first start's own key, issued by the server, has no address).
    const access = rows.filter((r) => (r.action.startsWith('access.') || r.action.startsWith('key.')) && r.actor !== 'system');
    expect(access.map((r) => r.action)).toEqual([
      'access.requested',
      'access.approved',
      'key.issued',
      'key.rolled',
      'key.revoked',
      'access.requested',
      'access.denied',
      'access.requested',
      'access.withdrawn',
    ]);
    for (const row of access) expect(row.address, row.action).toMatch(/^(127\.0\.0\.1|::1|::ffff:127\.0\.0\.1)$/);
    expect(JSON.parse(access[1]!.detail)).toMatchObject({ by: 'olga@ops.example', scopes: ['protect'] });
    // Append-only: the database refuses to change or remove a line.
    await expect(sql`update audit_log set action = 'x'`.execute(t.server.database.db)).rejects.toThrow(/append-only/);
    await expect(sql`delete from audit_log`.execute(t.server.database.db)).rejects.toThrow(/append-only/);
  });

  it('no key is stored or written anywhere: not in the database, its files, the log or a mail', async () => {
    expect(keysSeen).toHaveLength(2);
    const tables = (await sql<{ table_name: string }>`select table_name from information_schema.tables where table_schema = 'public'`.execute(t.server.database.db)).rows;
    let dump = '';
    for (const { table_name } of tables) {
      const rows = await sql<{ row: string }>`select row_to_json(t)::text as row from ${sql.table(table_name)} t`.execute(t.server.database.db);
      dump += rows.rows.map((r) => r.row).join('\n');
    }
    expect(dump).toContain(keysSeen[0]!.slice(0, 10)); // the prefix is there: the dump holds the keys' rows
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        const stat = statSync(path);
        if (stat.isDirectory()) walk(path);
        else if (stat.isFile()) files.push(path);
      }
    };
    walk(dataDir);
    expect(files.length).toBeGreaterThan(10);
    expect(logText).toContain('"url":"/keys/reveal"');
    for (const key of keysSeen) {
      const secret = key.slice(12); // past the visible prefix
      expect(dump.includes(secret), 'the database').toBe(false);
      expect(logText.includes(secret), 'the log').toBe(false);
      expect(mails().some((m) => m.text.includes(secret)), 'a mail').toBe(false);
      for (const path of files) expect(readFileSync(path).includes(secret), path).toBe(false);
    }
    // The browser reports only the refusals the test asked for (a name pending already; no scope; a reveal sent again).
    expect(consoleErrors.map((e) => /^https?:\/\/[^/]+(\/[^:]*): .*status of (\d+)/.exec(e)?.slice(1).join(' ') ?? e)).toEqual(['/keys/requests 409', '/keys/requests 400', '/keys/reveal 409']);
  });
});
