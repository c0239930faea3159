/**
 * Repository scans on the dashboard, in a real browser (Debian's chromium
 * driven by playwright-core) against a real server and real repositories
 * served on loopback by git daemon and git http-backend: an owner scans a
 * repository with the keyboard only, watches it to the end, reads the
 * summary, filters the report, exports CSV (the API's report, byte for
 * byte), confirms the fix and downloads the zip (its paths, and the records
 * page then lists the marked files); cancels a scan while it runs; is told
 * in words why a scan is refused (a source not allowed keeps the typed URL;
 * scans paused for everyone; the 11th scan of the day). An operator pauses,
 * resumes and changes today's ceiling, each an audit line. Over HTTP: the
 * account's member sees the owner's scans, another account gets 404, and a
 * fix pushed as a branch leaves a record per marked file. Each page is
 * checked with axe-core in light and dark at 1280 and 375 pixels and
 * photographed by `npm run test:screenshots`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unzipSync } from 'fflate';
import sharp from 'sharp';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { protect } from '../../src/app/protect-image.js';
import { auditPage, launchBrowser, watchConsole } from '../support/browser.js';
import { git, makeRepository, serveRepositories, type GitServers } from '../support/git-server.js';
import { freshDataDir, startTestServer, type TestServer } from '../support/server.js';
import { WebClient } from '../support/web-client.js';

const PASSWORD = 'correct horse battery staple';
const TOKEN = 'ghp_PageToken_8c1d5e_DoNotLeak';
const scratch = mkdtempSync(join(tmpdir(), 'optmark-scans-browser-'));
const root = mkdtempSync(join(tmpdir(), 'optmark-scans-repos-'));
const dataDir = freshDataDir();

const solid = (seed: number) => sharp({ create: { width: 24, height: 24, channels: 3, background: { r: seed * 40, g: 90, b: 200 - seed * 30 } } });
const jpeg = await solid(1).jpeg().toBuffer();
const SITE = [
  { path: 'README.md', bytes: '# site\n' },
  { path: 'images/marked.jpg', bytes: protect(jpeg).bytes },
  { path: 'images/deep/photo.png', bytes: await solid(2).png().toBuffer() },
  { path: 'assets/logo.webp', bytes: await solid(3).webp().toBuffer() },
  { path: 'images/broken.jpg', bytes: Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from('not really a jpeg')]) },
];
const FIXABLE = ['assets/logo.webp', 'images/deep/photo.png'];

let t: TestServer;
let servers: GitServers;
/** A git:// server that accepts and never answers: a scan of it stays running until cancelled. */
let silent: Server;
let silentUrl = '';
const browsers: BrowserContext[] = [];
const consoleErrors: string[] = [];
let page: Page;
let owner = { id: '', accountId: '' };
let doneScan = '';

async function newPage(): Promise<Page> {
  const browser = await launchBrowser(scratch);
  browsers.push(browser);
  return watchConsole(browser.pages()[0] ?? (await browser.newPage()), consoleErrors);
}

async function sees(locator: Locator, text: string | RegExp, timeout = 10_000): Promise<void> {
  await expect.poll(async () => (await locator.allInnerTexts()).join('\n'), { timeout }).toMatch(text);
}

async function signIn(p: Page, email: string, next: string): Promise<void> {
  await p.goto(`${t.url}/sign-in?next=${encodeURIComponent(next)}`);
  await p.getByLabel('Email').fill(email);
  await p.getByLabel('Password').fill(PASSWORD);
  await Promise.all([p.waitForURL(`${t.url}${next}`), p.getByRole('button', { name: 'Sign in' }).click()]);
}

beforeAll(async () => {
  makeRepository(root, 'site', SITE);
  makeRepository(root, 'private', SITE);
  makeRepository(root, 'tiny', [{ path: 'README.md', bytes: 'nothing to see\n' }]);
  servers = await serveRepositories(root, { private: TOKEN });
  silent = createServer(() => {});
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  silentUrl = `git://127.0.0.1:${(silent.address() as { port: number }).port}/`;
  t = await startTestServer({ dataDir, env: { OPTMARK_SCAN_SOURCES: `${servers.daemonUrl},${servers.httpUrl},${silentUrl}` } });
  await t.server.admin.createAccount('studio', 'pro');
  const made = await t.server.people.createUser({ account: 'studio', email: 'olga@studio.example', role: 'owner', password: PASSWORD, displayName: 'Olga Owner', actor: 'cli' });
  owner = { id: made.user.id, accountId: made.user.accountId };
  await t.server.people.createUser({ account: 'studio', email: 'max@studio.example', role: 'member', password: PASSWORD, actor: 'cli' });
  await t.server.admin.createAccount('elsewhere', 'pro');
  await t.server.people.createUser({ account: 'elsewhere', email: 'eve@elsewhere.example', role: 'owner', password: PASSWORD, actor: 'cli' });
  await t.server.admin.createAccount('ops', 'pro');
  await t.server.people.createUser({ account: 'ops', email: 'oscar@ops.example', role: 'member', operator: true, password: PASSWORD, actor: 'cli' });
  page = await newPage();
  await signIn(page, 'olga@studio.example', '/scans');
}, 60_000);

afterAll(async () => {
  for (const browser of browsers) await browser.close();
  await t?.close();
  await servers?.close();
  silent?.close();
  rmSync(scratch, { recursive: true, force: true });
  rmSync(root, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

describe('scans in a browser', () => {
  it('scans a repository with the keyboard only, follows it to the end and reads the summary', { timeout: 60_000 }, async () => {
    await sees(page.getByRole('navigation', { name: 'Main' }), 'Scans');
    await sees(page.locator('#scans-today'), '0 of 10 scans today');
    // From the top of the page, Tab reaches the form's fields in order.
    await page.locator('body').focus();
    const focused = () => page.evaluate('document.activeElement?.id || document.activeElement?.tagName');
    let presses = 0;
    while ((await focused()) !== 'repository' && presses++ < 30) await page.keyboard.press('Tab');
    expect(await focused()).toBe('repository');
    await page.keyboard.type(`${servers.daemonUrl}site.git`);
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('ref');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('token');
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Scan the repository');
    await Promise.all([page.waitForURL(/\/scans\/scn_[0-9a-f]{32}$/), page.keyboard.press('Enter')]);
    doneScan = page.url().split('/').pop()!;
    // Queued or running: the progress (a live region for screen readers) until the page script loads the report.
    if ((await page.locator('#summary').count()) === 0) expect(await page.locator('#scan-announce[aria-live="polite"]').count()).toBe(1);
    await sees(page.locator('#summary'), '4 images found: 1 carries the opt-out, 2 do not, 1 could not be read. 1 other file was not an image.', 20_000);
    await sees(page.locator('.scan-state'), 'Done');
    await sees(page.locator('#coverage-words'), '1 of 4 images carry the opt-out');
    await sees(page.locator('.coverage .meter-text'), '25');
    expect(await page.locator('table.report tbody tr').count()).toBe(4);
    await auditPage(page, 'scan-done');
  });

  it('filters the report by status and exports the API’s report as CSV', { timeout: 30_000 }, async () => {
    await page.getByLabel('Show').selectOption('notOptedOut');
    await Promise.all([page.waitForURL(/status=notOptedOut/), page.getByRole('button', { name: 'Filter' }).click()]);
    await sees(page.locator('#report-count'), '2 images: no opt-out');
    expect((await page.locator('table.report tbody th').allInnerTexts()).sort()).toEqual(FIXABLE);

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export CSV' }).click()]);
    const path = join(scratch, 'report.csv');
    await download.saveAs(path);
    const key = (await t.server.admin.issueKey('studio', { user: 'olga@studio.example' })).key;
    const api = await fetch(`${t.url}/api/v1/scans/${doneScan}/report`, { headers: { Authorization: `Bearer ${key}`, Accept: 'text/csv' } });
    const csv = readFileSync(path, 'utf8');
    expect(csv).toBe(await api.text());
    expect(csv.trim().split('\r\n')).toHaveLength(5);
  });

  it('confirms the fix, downloads the zip keeping the paths; the records page lists the marked files', { timeout: 40_000 }, async () => {
    await page.goto(`${t.url}/scans/${doneScan}`);
    await Promise.all([page.waitForURL(/\/fix$/), page.getByRole('link', { name: 'Mark the 2 images without the opt-out' }).click()]);
    await sees(page.locator('#confirm-words'), /This marks 2 images of .* Each uses one of the account's protections this month: 2 of the 10,000 left/);
    await auditPage(page, 'scan-fix-confirm');
    // A double click sends the fix once: the button is disabled once the form is sent.
    const fixPosts: string[] = [];
    page.on('request', (r) => r.method() === 'POST' && r.url().endsWith('/fix') && fixPosts.push(r.url()));
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Mark 2 images' }).dblclick()]);
    expect(download.suggestedFilename()).toBe(`${doneScan}-fix.zip`);
    expect(fixPosts).toHaveLength(1);
    // The page says what was done, in words, where the form was: no button is left to mark them again.
    await sees(page.getByRole('status').filter({ hasText: 'marked' }), `2 images are marked, each with a dated service record, and the zip ${doneScan}-fix.zip is downloading.`);
    expect(await page.locator('form.fix-form').count()).toBe(0);
    expect(await page.evaluate('document.activeElement?.className')).toBe('notice success');
    // The page tells what was done, not what would be: no words asking to confirm are left.
    expect(await page.textContent('h1')).toBe('2 images marked');
    expect(await page.title()).toBe('2 images marked · optmark');
    expect(await page.locator('#confirm-words').count()).toBe(0);
    expect(await page.textContent('#paths-heading')).toBe('The images marked');
    expect(await page.getByRole('link', { name: 'Back to the scan' }).getAttribute('href')).toBe(`/scans/${doneScan}`);
    await auditPage(page, 'scan-fix-done');
    const zipPath = join(scratch, 'fix.zip');
    await download.saveAs(zipPath);
    expect(Object.keys(unzipSync(new Uint8Array(readFileSync(zipPath)))).sort()).toEqual(FIXABLE);
    // The zip again, from the page's memory: the same bytes, and nothing sent.
    const [again] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download the zip again' }).click()]);
    const againPath = join(scratch, 'fix-again.zip');
    await again.saveAs(againPath);
    expect(readFileSync(againPath).equals(readFileSync(zipPath))).toBe(true);
    expect(fixPosts).toHaveLength(1);

    await Promise.all([page.waitForURL(`${t.url}/history`), page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Records' }).click()]);
    await sees(page.getByRole('heading', { level: 2 }), '2 records');
    // Marked once: the month counted 2 protections.
    expect((await t.server.admin.usage('studio')).protect.used).toBe(2);
    for (const file of FIXABLE) await page.getByRole('row', { name: new RegExp(file.replace(/[./]/g, '\\$&')) }).waitFor({ state: 'visible' });
  });

  it('cancels a scan while it runs', { timeout: 40_000 }, async () => {
    await page.goto(`${t.url}/scans`);
    await page.getByLabel('Repository URL').fill(`${silentUrl}slow.git`);
    await Promise.all([page.waitForURL(/\/scans\/scn_/), page.getByRole('button', { name: 'Scan the repository' }).click()]);
    await sees(page.locator('#scan-counts'), 'Fetching the repository…');
    await sees(page.locator('.scan-state'), 'Running');
    await auditPage(page, 'scan-running');
    await Promise.all([page.waitForURL(/(\/cancel|\?cancelled=1)$/), page.getByRole('button', { name: 'Cancel the scan' }).click()]);
    // Should the scan have ended on its own first, the page's words say how (its state and reason).
    expect(page.url(), (await page.textContent('main')) ?? '').toMatch(/\?cancelled=1$/);
    await sees(page.locator('.scan-state'), 'Cancelled');
    await sees(page.getByRole('status').first(), 'The scan is cancelled');
  });

  it('explains a refusal in words and keeps what was typed: a source not allowed, scans paused, the 11th scan of the day', { timeout: 40_000 }, async () => {
    await page.goto(`${t.url}/scans`);
    const typed = 'https://example.com/owner/repo.git';
    await page.getByLabel('Repository URL').fill(typed);
    await page.getByLabel(/Branch or tag/).fill('release');
    await page.getByLabel(/Read token/).fill(TOKEN);
    await page.getByRole('button', { name: 'Scan the repository' }).click();
    await sees(page.getByRole('alert'), 'This repository cannot be scanned here');
    expect(await page.getByLabel('Repository URL').inputValue()).toBe(typed);
    expect(await page.getByLabel(/Branch or tag/).inputValue()).toBe('release');
    expect(await page.getByLabel(/Read token/).inputValue()).toBe('');
    expect(await page.getByLabel('Repository URL').getAttribute('aria-invalid')).toBe('true');
    expect(await page.content()).not.toContain(TOKEN);

    await t.server.scans.pause();
    await page.getByLabel('Repository URL').fill(`${servers.daemonUrl}tiny.git`);
    await page.getByRole('button', { name: 'Scan the repository' }).click();
    await sees(page.getByRole('alert'), /paused for everyone .* temporary and not about your account/);
    expect(await page.getByLabel('Repository URL').inputValue()).toBe(`${servers.daemonUrl}tiny.git`);
    await t.server.scans.resume();

    // The rest of the day's 10, then the 11th from the form.
    const { used, limit } = await t.server.scans.today(owner.accountId, owner.id);
    for (let i = used; i < limit; i++) await t.server.scans.submit({ accountId: owner.accountId, userId: owner.id, plan: 'pro' }, { repository: `${servers.daemonUrl}tiny.git` });
    await page.getByRole('button', { name: 'Scan the repository' }).click();
    await sees(page.getByRole('alert'), /You have started 10 repository scans today, your daily limit; you can start more after midnight UTC\. That is in \d+ (hours?|minutes?)/);
    await sees(page.locator('#scans-today'), '10 of 10 scans today');
    expect(await page.getByLabel('Repository URL').inputValue()).toBe(`${servers.daemonUrl}tiny.git`);
    await sees(page.locator('table.scans'), /1 of 4 images carry the opt-out/);
    await auditPage(page, 'scans-refused');
  });

  it('an operator pauses, resumes and changes today’s ceiling; each is an audit line', { timeout: 40_000 }, async () => {
    const operator = await newPage();
    await signIn(operator, 'oscar@ops.example', '/operator');
    await sees(operator.locator('#scans-today'), /\d+ of 250/);
    await sees(operator.locator('#scans-state'), 'Open');
    await operator.getByRole('button', { name: 'Pause scans' }).click();
    await sees(operator.getByRole('status').first(), 'paused for everyone');
    await sees(operator.locator('#scans-state'), 'Paused');
    expect((await t.server.scans.status()).paused).toBe(true);
    await operator.getByRole('button', { name: 'Resume scans' }).click();
    await sees(operator.locator('#scans-state'), 'Open');
    // A number too long is not cut short by the field (it was: 1000000000 became 100000000 without a word): the server says why, the number stays.
    await operator.getByLabel(/Today's ceiling/).fill('1000000000');
    await operator.getByRole('button', { name: 'Set the ceiling' }).click();
    await sees(operator.getByRole('alert').first(), "Type today's ceiling as a whole number of scans, from 0 to 999,999,999");
    expect(await operator.getByLabel(/Today's ceiling/).inputValue()).toBe('1000000000');
    expect((await t.server.scans.status()).ceiling).toBe(250);
    await operator.getByLabel(/Today's ceiling/).fill('40');
    await operator.getByRole('button', { name: 'Set the ceiling' }).click();
    await sees(operator.getByRole('status').first(), "Today's ceiling is now 40 scans for the whole service (it was 250)");
    expect(await t.server.scans.status()).toMatchObject({ ceiling: 40, paused: false });
    const audit = operator.locator('#audit-heading + ul');
    await sees(audit, /oscar@ops\.example changed today's scan ceiling \(from 250 to 40\)/);
    await sees(audit, /oscar@ops\.example resumed repository scans/);
    await sees(audit, /oscar@ops\.example paused repository scans for everyone/);
    // The console shows counts only: no account's scans.
    expect(await operator.locator('main').innerText()).not.toContain('site.git');
    await auditPage(operator, 'operator-scans');
    // The browser saw no failure but the refused forms' own answers (422, 503, 429).
    expect(consoleErrors.map((e) => /status of (\d{3})/.exec(e)?.[1] ?? e)).toEqual(['422', '503', '429', '400']);
  });
});

describe('scans over HTTP', () => {
  it('the account’s member sees the owner’s scans; another account and an operator get 404', async () => {
    const member = new WebClient(t.url);
    await member.signIn('max@studio.example', PASSWORD);
    const list = await member.page('/scans');
    expect(list.html).toContain(`/scans/${doneScan}`);
    expect((await member.page(`/scans/${doneScan}`)).status).toBe(200);
    const json = await member.request(`/scans/${doneScan}/report.json`, { site: 'same-origin' });
    expect(((await json.json()) as { items: unknown[] }).items).toHaveLength(4);
    for (const email of ['eve@elsewhere.example', 'oscar@ops.example']) {
      const other = new WebClient(t.url);
      await other.signIn(email, PASSWORD);
      expect((await other.page('/scans')).html).not.toContain(doneScan);
      for (const path of [`/scans/${doneScan}`, `/scans/${doneScan}/report.csv`, `/scans/${doneScan}/progress`]) expect((await other.page(path)).status, `${email} ${path}`).toBe(404);
    }
  });

  it('a fix pushed as a branch shows the branch and leaves one record per marked file', { timeout: 30_000 }, async () => {
    const scan = await t.server.scans.submit({ accountId: owner.accountId, userId: owner.id, plan: 'pro' }, { repository: `${servers.httpUrl}private.git`, token: TOKEN }).catch(async (error: { code?: string }) => {
      // The day's 10 are used: the member scans.
      if (error.code !== 'scan_limit_reached') throw error;
      const max = (await t.server.people.listUsers('studio')).find((u) => u.email === 'max@studio.example')!;
      return t.server.scans.submit({ accountId: max.accountId, userId: max.id, plan: 'pro' }, { repository: `${servers.httpUrl}private.git`, token: TOKEN });
    });
    for (const until = Date.now() + 20_000; (await t.server.scans.get(owner.accountId, scan.id)).state !== 'done'; ) {
      if (Date.now() > until) throw new Error('the scan did not end');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const person = new WebClient(t.url);
    await person.signIn('max@studio.example', PASSWORD);
    const csrf = await person.csrf();
    const before = (await t.server.records.search(owner.accountId, {})).total;
    const noToken = await person.form(`/scans/${scan.id}/fix`, { csrf, confirm: '2', mode: 'push' });
    expect(noToken.status).toBe(400);
    expect(await noToken.text()).toContain('To push a branch, give a token that may write to the repository');
    // A token the repository refuses: the form again, with the reason in words (and no record, no unit spent).
    const refused = await person.form(`/scans/${scan.id}/fix`, { csrf, confirm: '2', mode: 'push', token: `${TOKEN}-wrong` });
    expect(refused.status).toBe(502);
    const refusedHtml = await refused.text();
    expect(refusedHtml).toContain('The repository could not be fetched: the server refused the read token');
    expect(refusedHtml).toContain('action="/scans/');
    const pushed = await person.form(`/scans/${scan.id}/fix`, { csrf, confirm: '2', mode: 'push', token: TOKEN });
    expect(pushed.status).toBe(200);
    const html = await pushed.text();
    const branch = /<code class="branch">([^<]+)<\/code>/.exec(html)?.[1];
    expect(branch).toMatch(/^optmark\/opt-out-\d{8}-[0-9a-f]{8}$/);
    expect(html).not.toContain(TOKEN);
    expect(git(join(root, 'private.git'), 'diff', '--name-only', `${branch}^`, branch!).split('\n').sort()).toEqual(FIXABLE);
    const records = await t.server.records.search(owner.accountId, {});
    expect(records.total - before).toBe(2);
    expect(records.records.slice(0, 2).map((r) => r.fileName).sort()).toEqual(FIXABLE);
    expect(records.records[0]!.batchId).toBeNull();
  });
});
