/**
 * The people's pages in a real browser (Debian's chromium driven by
 * playwright-core), as a person uses them: an invitation, a password, sign-in;
 * a batch of 25 mixed images marked with progress and downloaded as one zip
 * (every file read back by ExifTool, every non-XMP byte as it was); a file
 * marked "Prohibited, see plus:OtherConstraints" with its text; a 26th
 * file refused in the page; a double click that counts one; the check page's
 * verdicts; the usage meters against the API's own count; a session that
 * survives a restart; a sign-out forged by another site refused; what a
 * member may not do. Every page is checked with axe-core in light and dark
 * mode at 1280 and 375 pixels, and photographed into test-output/screenshots
 * by `npm run test:screenshots` for a person to look at.
 */
import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unzipSync } from 'fflate';
import { chromium, type BrowserContext, type Page, type Request } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sniff } from '../../src/core/formats/sniff.js';
import { fixFingerprintKey, texturedPhoto } from '../fingerprint/support.js';
import { ExifTool } from '../support/exiftool.js';
import { auditPage, launchBrowser, SHOTS, watchConsole } from '../support/browser.js';
import { freshDataDir, postImage, startTestServer, type TestServer } from '../support/server.js';

const PASSWORD = 'correct horse battery staple';
const scratch = mkdtempSync(join(tmpdir(), 'optmark-browser-'));
const dataDir = freshDataDir();
fixFingerprintKey(dataDir, 'optmark test: the browser');

let t: TestServer;
let context: BrowserContext;
let page: Page;
let apiKey: string;
const exiftool = new ExifTool();
/** What the pages reported on their console: a script or stylesheet blocked by the policy would show here. */
const consoleErrors: string[] = [];
const pagesChecked: string[] = [];

const launch = () => launchBrowser(scratch);
const watch = async (p: Page): Promise<Page> => watchConsole(p, consoleErrors);

async function audit(p: Page, name: string): Promise<void> {
  await auditPage(p, name);
  pagesChecked.push(name);
}

/** Images of every format, each distinct, some with metadata of their own. */
async function images(dir: string, count: number): Promise<string[]> {
  mkdirSync(dir, { recursive: true });
  const paths: string[] = [];
  for (let i = 0; i < count; i++) {
    const format = (['jpeg', 'png', 'webp'] as const)[i % 3]!;
    const bytes = await texturedPhoto(200 + i, 150, format, i + 1);
    const path = join(dir, `image ${String(i + 1).padStart(2, '0')}.${format === 'jpeg' ? 'jpg' : format}`);
    writeFileSync(path, bytes);
    paths.push(path);
  }
  return paths;
}

/** Every block of the file that is not XMP (nor a header announcing it), as bytes. */
function otherBlocks(bytes: Uint8Array): string[] {
  return sniff(bytes)
    .blocks(bytes)
    .filter((b) => b.kind === 'other')
    .map((b) => Buffer.from(bytes.subarray(b.offset, b.offset + b.length)).toString('base64'));
}

async function usageOnPage(p: Page): Promise<{ protect: number; verify: number }> {
  const read = async (id: string) => Number(await p.getAttribute(`#${id}`, 'data-used'));
  return { protect: await read('usage-protect'), verify: await read('usage-verify') };
}

async function apiUsage(): Promise<{ protect: number; verify: number }> {
  const usage = (await (await fetch(`${t.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${apiKey}` } })).json()) as Record<string, { used: number }>;
  return { protect: usage.protect!.used, verify: usage.verify!.used };
}

beforeAll(async () => {
  t = await startTestServer({ dataDir });
  await t.server.admin.createAccount('studio', 'pro');
  await t.server.people.createUser({ account: 'studio', email: 'owner@studio.example', role: 'owner', password: PASSWORD, displayName: 'Olga Owner', actor: 'cli' });
  apiKey = (await t.server.admin.issueKey('studio', { user: 'owner@studio.example' })).key;
  context = await launch();
  page = await watch(context.pages()[0] ?? (await context.newPage()));
}, 60_000);

afterAll(async () => {
  await context?.close();
  await t?.close();
  await exiftool.close();
  rmSync(scratch, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the people’s pages in a browser', () => {
  it('signs the owner in, by keyboard; the sign-in page keeps the email after a wrong password', { timeout: 60_000 }, async () => {
    await page.goto(`${t.url}/`);
    expect(page.url()).toBe(`${t.url}/sign-in`);
    await audit(page, 'sign-in');
    await page.getByLabel('Email').fill('owner@studio.example');
    await page.getByLabel('Password').fill('not the password');
    await page.keyboard.press('Enter');
    await page.waitForSelector('[role="alert"]');
    expect(await page.textContent('[role="alert"]')).toContain('The email or the password is not right');
    expect(await page.inputValue('#email')).toBe('owner@studio.example');
    // The password field, where the keyboard is, is marked and tied to the words of the refusal.
    expect(await page.evaluate("[document.activeElement.id, document.activeElement.getAttribute('aria-invalid'), document.activeElement.getAttribute('aria-describedby')]")).toEqual(['password', 'true', 'sign-in-error']);
    await audit(page, 'sign-in-error');
    await page.getByLabel('Password').fill(PASSWORD);
    await Promise.all([page.waitForURL(`${t.url}/overview`), page.getByRole('button', { name: 'Sign in' }).press('Enter')]);
    expect(await page.textContent('header')).toContain('Olga Owner');
    // The stylesheet loaded under the page's policy.
    expect(await page.evaluate("getComputedStyle(document.querySelector('.brand')).fontWeight")).toBe('700');
    await audit(page, 'overview');
  });

  it('an owner invites a member; the invitation link sets the member up and signs them in', { timeout: 60_000 }, async () => {
    await page.goto(`${t.url}/account`);
    await page.getByLabel('Email').fill('mia@studio.example');
    await Promise.all([page.waitForURL(`${t.url}/account/members`), page.getByRole('button', { name: 'Invite' }).click()]);
    const link = await page.inputValue('#invitation-link');
    expect(link).toMatch(/\/link\?token=/);
    // The answer, far down the page, has the focus (and so the view, at phone width too).
    expect(await page.evaluate('document.activeElement?.className')).toBe('notice info');
    await audit(page, 'account-owner');

    const other = await launch();
    try {
      const member = await watch(other.pages()[0] ?? (await other.newPage()));
      await member.goto(link);
      expect(await member.textContent('h1')).toBe('Join studio');
      await audit(member, 'invitation');
      await member.getByLabel('Your name').fill('Mia Member');
      await member.getByLabel('New password').fill(PASSWORD);
      await Promise.all([member.waitForURL(/\/overview\?welcome=1$/), member.getByRole('button', { name: 'Set the password and sign in' }).click()]);
      expect(await member.textContent('[role="status"]')).toContain('Your password is set');
      // A member sees the people of the account, and no invitation form.
      await member.goto(`${t.url}/account`);
      expect(await member.locator('#invite-email').count()).toBe(0);
      expect(await member.textContent('section[aria-labelledby="members"]')).toContain('Owners of the account invite and remove people.');
      await audit(member, 'account-member');

      // Removing her asks the owner first, by keyboard, saying what it does; "Keep them" changes nothing.
      await page.goto(`${t.url}/account`);
      await page.getByRole('button', { name: 'Remove mia@studio.example' }).press('Enter');
      const question = page.getByRole('heading', { name: 'Remove mia@studio.example from studio?' });
      await expect.poll(() => question.evaluate((h) => h === h.ownerDocument.activeElement)).toBe(true);
      const confirmation = page.getByRole('group', { name: 'Remove mia@studio.example from studio?' });
      expect(await confirmation.textContent()).toContain('Their sessions end at once');
      await audit(page, 'account-remove-confirm');
      await page.getByRole('link', { name: 'Keep them' }).click();
      await expect.poll(() => confirmation.count()).toBe(0);
      await member.goto(`${t.url}/overview`);
      expect(member.url()).toBe(`${t.url}/overview`);
    } finally {
      await other.close();
    }

    // A form done sends the browser back to its page (Post/Redirect/Get), which says so once: a reload sends nothing again.
    const requests: string[] = [];
    const listen = (request: Request) => requests.push(`${request.method()} ${new URL(request.url()).pathname}`);
    page.on('request', listen);
    await page.getByLabel('Name', { exact: true }).fill('Olga O.');
    await Promise.all([page.waitForURL(`${t.url}/account`), page.getByRole('button', { name: 'Save the name' }).click()]);
    expect(await page.textContent('[role="status"]')).toContain('Your name is now Olga O.');
    expect(await page.evaluate('document.activeElement?.textContent')).toContain('Your name is now Olga O.');
    await page.reload();
    expect(page.url()).toBe(`${t.url}/account`);
    expect(await page.locator('text=Your name is now').count()).toBe(0);
    page.off('request', listen);
    expect(requests.filter((r) => r.startsWith('POST '))).toEqual(['POST /account/profile']);
  });

  it('marks a batch of 25 mixed images with progress, and the zip holds every file marked, read back by ExifTool', { timeout: 180_000 }, async () => {
    const paths = await images(join(scratch, 'batch'), 26);
    await page.goto(`${t.url}/mark`);
    await audit(page, 'mark-empty');
    // 26 chosen: the page takes 25 and names the one it refused, before sending anything.
    await page.setInputFiles('#files', paths);
    await expect.poll(() => page.locator('#rows li').count()).toBe(25);
    expect(await page.textContent('.notice.error')).toContain('image 26.png: a batch takes 25 images at most');
    expect((await apiUsage()).protect).toBe(0);

    const before = await apiUsage();
    await page.getByRole('button', { name: 'Mark', exact: true }).click();
    expect(await page.isDisabled('#start')).toBe(true);
    await expect.poll(() => page.locator('#rows li[data-state="done"], #rows li[data-state="failed"]').count(), { timeout: 150_000, interval: 250 }).toBe(25);
    const states = await page.$$eval('#rows li', (items) => items.map((li) => li.getAttribute('data-state')));
    expect(states).toEqual(Array(25).fill('done'));
    expect(await page.textContent('#rows li:first-child .result')).toMatch(/Opt-out written: Prohibited for AI\/ML training\. Size: .+ → .+\. Signed by this service\./);
    await audit(page, 'mark-done');

    // The meters say what the API says.
    await expect.poll(() => page.getAttribute('#usage-protect', 'data-used')).toBe(String(before.protect + 25));
    expect(await usageOnPage(page)).toEqual(await apiUsage());

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download all (zip)' }).click()]);
    expect(download.suggestedFilename()).toBe('optmark-marked.zip');
    const zipPath = join(scratch, 'marked.zip');
    await download.saveAs(zipPath);
    const entries = unzipSync(readFileSync(zipPath));
    const names = Object.keys(entries).sort();
    expect(names).toHaveLength(25);
    const outDir = join(scratch, 'unzipped');
    mkdirSync(outDir, { recursive: true });
    for (const [i, path] of paths.slice(0, 25).entries()) {
      const original = readFileSync(path);
      const name = names.find((n) => n.startsWith(`image-${String(i + 1).padStart(2, '0')}-optout.`))!;
      expect(name, `entry for ${path}`).toBeDefined();
      const marked = entries[name]!;
      expect(otherBlocks(marked)).toEqual(otherBlocks(original));
      writeFileSync(join(outDir, name), marked);
      const tags = await exiftool.readJson(join(outDir, name), ['-XMP-plus:DataMining']);
      // ExifTool's own short form of the vocabulary URI (with -n): the value read is the value written.
      expect(tags['XMP-plus:DataMining'], name).toBe('DMI-PROHIBITED-AIMLTRAINING');
    }
  });

  it('a double click on Mark marks and counts the file once', { timeout: 60_000 }, async () => {
    const [path] = await images(join(scratch, 'double'), 1);
    await page.goto(`${t.url}/mark`);
    const before = await apiUsage();
    await page.setInputFiles('#files', [path!]);
    await page.waitForSelector('#rows li[data-state="ready"]');
    await page.getByRole('button', { name: 'Mark', exact: true }).dblclick();
    await page.waitForSelector('#rows li[data-state="done"]');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await apiUsage()).protect).toBe(before.protect + 1);
    expect(await page.locator('#rows li').count()).toBe(1);
  });

  it('the same file picked twice makes one row, marked and counted once; a row is removed by keyboard, the focus kept in the list', { timeout: 90_000 }, async () => {
    const dir = join(scratch, 'twice');
    const [first, second] = await images(dir, 2);
    // The same bytes under another name are the same file.
    const renamed = join(dir, 'renamed.jpg');
    writeFileSync(renamed, readFileSync(first!));
    // A page of its own: its refusals are not the ones the last test counts.
    const p = await context.newPage();
    try {
      await p.goto(`${t.url}/mark`);
      await p.setInputFiles('#files', [first!]);
      await p.waitForSelector('#rows li[data-state="ready"]');
      await p.setInputFiles('#files', [first!, second!]);
      await expect.poll(() => p.locator('#rows li[data-state="ready"]').count()).toBe(2);
      expect(await p.textContent('.notice.error')).toBe('image 01.jpg is already in the list');
      await p.setInputFiles('#files', [renamed]);
      await expect.poll(() => p.textContent('.notice.error')).toBe('renamed.jpg is already in the list, as image 01.jpg');
      expect(await p.locator('#rows li').count()).toBe(2);
      await audit(p, 'mark-duplicate');

      // Remove, by keyboard: the keyboard lands on the next row, then, with none left, on the file picker.
      await p.getByRole('button', { name: 'Remove image 01.jpg' }).focus();
      await p.keyboard.press('Enter');
      expect(await p.locator('#rows li').count()).toBe(1);
      expect(await p.evaluate("document.activeElement?.closest('li')?.querySelector('.name')?.textContent")).toBe('image 02.png');
      expect(await p.textContent('#status')).toBe('image 01.jpg removed from the list');
      await p.keyboard.press('Tab');
      expect(await p.evaluate('document.activeElement?.textContent')).toBe('Remove image 02.png');
      await p.keyboard.press('Enter');
      expect(await p.locator('#rows li').count()).toBe(0);
      expect(await p.evaluate('document.activeElement?.id')).toBe('files');

      // Removed, the file may come back; marked, it is counted once.
      await p.setInputFiles('#files', [first!, renamed]);
      await expect.poll(() => p.locator('#rows li[data-state="ready"]').count()).toBe(1);
      const before = await apiUsage();
      await p.getByRole('button', { name: 'Mark', exact: true }).click();
      await p.waitForSelector('#rows li[data-state="done"]', { timeout: 30_000 });
      await p.setInputFiles('#files', [first!]);
      await expect.poll(() => p.textContent('.notice.error')).toBe('image 01.jpg is already in the list');
      expect(await p.locator('#rows li').count()).toBe(1);
      expect(await p.isDisabled('#start')).toBe(true);
      expect((await apiUsage()).protect).toBe(before.protect + 1);

      // The check page, the same.
      await p.goto(`${t.url}/check`);
      await p.setInputFiles('#files', [first!, renamed]);
      await expect.poll(() => p.textContent('.notice.error')).toBe('renamed.jpg is already in the list, as image 01.jpg');
      expect(await p.locator('#rows li').count()).toBe(1);
      await p.getByRole('button', { name: 'Remove image 01.jpg' }).press('Enter');
      expect(await p.locator('#rows li').count()).toBe(0);
      expect(await p.evaluate('document.activeElement?.id')).toBe('files');
    } finally {
      await p.close();
    }
  });

  it('when the month’s markings run out mid-batch the rest is not sent, said in words with the date they return; a batch longer than the meter’s rest asks first', { timeout: 120_000 }, async () => {
    const dir = join(scratch, 'quota');
    const paths = await images(dir, 7);
    const p = await context.newPage();
    const sent: string[] = [];
    p.on('request', (request) => {
      if (request.method() === 'POST' && /\/app\/(mark|check)$/.test(request.url())) sent.push(new URL(request.url()).pathname);
    });
    const now = new Date();
    const returns = new Intl.DateTimeFormat(String(await p.evaluate('navigator.language')), { dateStyle: 'long', timeZone: 'UTC' }).format(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)));
    const usedUp = (what: string) => new RegExp(`^Not (sent|marked|checked): this month's ${what} are used up; they start again on ${returns}\\.$`);
    try {
      // The meter says plenty are left; the limit changes under it: one marking left.
      await p.goto(`${t.url}/mark`);
      await t.server.admin.setLimits('studio', { protectPerMonth: (await apiUsage()).protect + 1 });
      await p.setInputFiles('#files', paths.slice(0, 5));
      await expect.poll(() => p.locator('#rows li[data-state="ready"]').count()).toBe(5);
      await p.getByRole('button', { name: 'Mark', exact: true }).click();
      await expect.poll(() => p.locator('#rows li[data-state="done"], #rows li[data-state="unsent"]').count(), { timeout: 60_000 }).toBe(5);
      expect(await p.locator('#rows li[data-state="done"]').count()).toBe(1);
      for (const text of await p.$$eval('#rows li[data-state="unsent"] .state', (items) => items.map((i) => i.textContent))) expect(text).toMatch(usedUp('markings'));
      // Three go at a time, and the refusal stops the files that had not gone (a fourth may go when the one marking
      // allowed is answered before the refusals of the other two); the run has stopped: nothing more is sent.
      expect(sent.length).toBeLessThanOrEqual(4);
      const stoppedAt = sent.length;
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(sent.length).toBe(stoppedAt);
      expect(await p.locator('#rows button', { hasText: 'Retry' }).count()).toBe(0);
      expect(await p.isDisabled('#start')).toBe(true);
      await audit(p, 'mark-used-up');

      // The meter says one is left: three files are asked about first; nothing is sent until the answer.
      await t.server.admin.setLimits('studio', { protectPerMonth: (await apiUsage()).protect + 1 });
      await p.goto(`${t.url}/mark`);
      sent.length = 0;
      await p.setInputFiles('#files', paths.slice(0, 3));
      await expect.poll(() => p.locator('#rows li[data-state="ready"]').count()).toBe(3);
      await p.getByRole('button', { name: 'Mark', exact: true }).click();
      expect(await p.textContent('.confirm')).toContain('Only one marking is left this month, for 3 files: the first file will be marked, the other 2 not sent. Go on?');
      expect(sent).toEqual([]);
      await audit(p, 'mark-confirm');
      await p.getByRole('button', { name: 'Mark 1 of 3' }).click();
      await expect.poll(() => p.locator('#rows li[data-state="done"]').count(), { timeout: 30_000 }).toBe(1);
      expect(await p.$$eval('#rows li .state', (items) => items.map((i) => i.textContent))).toEqual(['Marked', expect.stringMatching(/^Not sent: /), expect.stringMatching(/^Not sent: /)]);
      expect(await p.textContent('#rows li:nth-child(3) .state')).toMatch(usedUp('markings'));
      expect(sent).toEqual(['/app/mark']);

      // The check page, the same: one check left, two files; Cancel sends nothing, going on checks one.
      await t.server.admin.setLimits('studio', { verifyPerMonth: (await apiUsage()).verify + 1 });
      await p.goto(`${t.url}/check`);
      sent.length = 0;
      await p.setInputFiles('#files', paths.slice(5, 7));
      await expect.poll(() => p.locator('#rows li[data-state="ready"]').count()).toBe(2);
      await p.getByRole('button', { name: 'Check', exact: true }).click();
      expect(await p.textContent('.confirm')).toContain('Only one check is left this month, for 2 files: the first file will be checked, the other file not sent. Go on?');
      await p.getByRole('button', { name: 'Cancel' }).click();
      expect(await p.locator('.confirm').count()).toBe(0);
      expect(await p.evaluate('document.activeElement?.id')).toBe('start');
      expect(sent).toEqual([]);
      await p.getByRole('button', { name: 'Check', exact: true }).click();
      await p.getByRole('button', { name: 'Check 1 of 2' }).click();
      await expect.poll(() => p.locator('#rows li[data-state="done"]').count(), { timeout: 30_000 }).toBe(1);
      expect(await p.textContent('#rows li:nth-child(2) .state')).toMatch(usedUp('checks'));
      expect(sent).toEqual(['/app/check']);
      expect(await p.isDisabled('#start')).toBe(true);
    } finally {
      await t.server.admin.setLimits('studio', { protectPerMonth: null, verifyPerMonth: null });
      await p.close();
    }
  });

  it('a file refused with one option is marked when retried with another: the retry is a new call, not a repeat of the refusal', { timeout: 60_000 }, async () => {
    // Too small to carry the fingerprint: refused with it, marked without it.
    const path = join(scratch, 'tiny.png');
    writeFileSync(path, await sharp({ create: { width: 40, height: 30, channels: 3, background: '#8a6' } }).png().toBuffer());
    await page.goto(`${t.url}/mark`);
    const fingerprint = page.getByLabel('Experimental in-pixel fingerprint');
    await fingerprint.check();
    await page.setInputFiles('#files', [path]);
    await page.waitForSelector('#rows li[data-state="ready"]');
    const before = await apiUsage();
    await page.getByRole('button', { name: 'Mark', exact: true }).click();
    await page.waitForSelector('#rows li[data-state="failed"]', { timeout: 30_000 });
    expect(await page.textContent('#rows li .state')).toMatch(/^Not marked: /);
    await fingerprint.uncheck();
    await page.getByRole('button', { name: 'Retry' }).click();
    await page.waitForSelector('#rows li[data-state="done"]', { timeout: 30_000 });
    expect(await page.textContent('#rows li .result')).toContain('Opt-out written');
    expect((await apiUsage()).protect).toBe(before.protect + 1);
  });

  it('a file that cannot carry the fingerprint is offered, on its row, to be marked without it: that file only, a new call, counted once', { timeout: 60_000 }, async () => {
    // Too small to carry the fingerprint.
    const path = join(scratch, 'tiny-without.png');
    writeFileSync(path, await sharp({ create: { width: 40, height: 30, channels: 3, background: '#6a8' } }).png().toBuffer());
    const p = await context.newPage();
    try {
      await p.goto(`${t.url}/mark`);
      const fingerprint = p.getByLabel('Experimental in-pixel fingerprint');
      await fingerprint.check();
      await p.setInputFiles('#files', [path]);
      await p.waitForSelector('#rows li[data-state="ready"]');
      const before = await apiUsage();
      await p.getByRole('button', { name: 'Mark', exact: true }).click();
      await p.waitForSelector('#rows li[data-state="failed"]', { timeout: 30_000 });
      expect(await p.textContent('#rows li .state')).toMatch(/^Not marked: /);
      await audit(p, 'mark-fingerprint-not-possible');
      await p.getByRole('button', { name: 'Mark without the fingerprint' }).click();
      await p.waitForSelector('#rows li[data-state="done"]', { timeout: 30_000 });
      const result = await p.textContent('#rows li .result');
      expect(result).toContain('Opt-out written');
      expect(result).not.toContain('Fingerprint');
      // The form's own choice is kept for the next files.
      expect(await fingerprint.isChecked()).toBe(true);
      expect((await apiUsage()).protect).toBe(before.protect + 1);
    } finally {
      await p.close();
    }
  });

  it('"Prohibited, see plus:OtherConstraints" asks for its text, and the file carries both, read back by ExifTool', { timeout: 60_000 }, async () => {
    const text = `Licensed for search indexing only — Tom & Jerry's <"studio">, Zürich`;
    const [path, second] = await images(join(scratch, 'constraints'), 2);
    await page.goto(`${t.url}/mark`);
    // The field is there for that value only.
    expect(await page.isHidden('#other-constraints')).toBe(true);
    await page.getByLabel('Opt-out to write').selectOption('DMI-PROHIBITED-SEECONSTRAINT');
    expect(await page.isVisible('#other-constraints')).toBe(true);
    expect(await page.evaluate("document.getElementById('other-constraints').required")).toBe(true);
    await page.setInputFiles('#files', [path!]);
    await page.waitForSelector('#rows li[data-state="ready"]');
    // Without the text the browser asks for it and nothing is sent.
    const before = await apiUsage();
    await page.getByRole('button', { name: 'Mark', exact: true }).click();
    expect(await page.evaluate("document.getElementById('other-constraints').validity.valueMissing")).toBe(true);
    expect(await page.getAttribute('#rows li', 'data-state')).toBe('ready');
    await page.getByLabel('Constraints text').fill(text);
    await audit(page, 'mark-constraints');
    await page.getByRole('button', { name: 'Mark', exact: true }).click();
    await page.waitForSelector('#rows li[data-state="done"]', { timeout: 30_000 });
    expect(await page.textContent('#rows li .result')).toContain(`Opt-out written: Prohibited, see plus:OtherConstraints. Constraints: “${text}”.`);
    expect((await apiUsage()).protect).toBe(before.protect + 1);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: /^Download image-01-optout/ }).click()]);
    const markedPath = join(scratch, 'constraints', download.suggestedFilename());
    await download.saveAs(markedPath);
    const tags = await exiftool.readJson(markedPath, ['-XMP-plus:DataMining', '-XMP-plus:OtherConstraints']);
    expect(tags).toMatchObject({ 'XMP-plus:DataMining': 'DMI-PROHIBITED-SEECONSTRAINT', 'XMP-plus:OtherConstraints': text });
    expect(otherBlocks(readFileSync(markedPath))).toEqual(otherBlocks(readFileSync(path!)));
    // Another value hides the field again; the text still typed in it is not sent with that value (which would refuse it).
    await page.getByLabel('Opt-out to write').selectOption('DMI-PROHIBITED');
    expect(await page.isHidden('#other-constraints')).toBe(true);
    await page.setInputFiles('#files', [second!]);
    await page.waitForSelector('#rows li:nth-child(2)[data-state="ready"]');
    await page.getByRole('button', { name: 'Mark', exact: true }).click();
    await page.waitForSelector('#rows li:nth-child(2)[data-state="done"]', { timeout: 30_000 });
    expect(await page.textContent('#rows li:nth-child(2) .result')).toContain('Opt-out written: Prohibited. Size');
  });

  it('the check page gives its verdict in words: opted out, not opted out, and stripped but fingerprinted', { timeout: 120_000 }, async () => {
    const dir = join(scratch, 'check');
    mkdirSync(dir, { recursive: true });
    const plain = await texturedPhoto(640, 480, 'jpeg', 11);
    writeFileSync(join(dir, 'plain.jpg'), plain);
    // Marked with the fingerprint by the page itself.
    await page.goto(`${t.url}/mark`);
    await page.check('input[name=fingerprint]');
    await page.setInputFiles('#files', [join(dir, 'plain.jpg')]);
    await page.waitForSelector('#rows li[data-state="ready"]');
    await page.getByRole('button', { name: 'Mark', exact: true }).click();
    await page.waitForSelector('#rows li[data-state="done"]', { timeout: 60_000 });
    expect(await page.textContent('#rows li .result')).toContain('Fingerprint added');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: /^Download plain-optout/ }).click()]);
    const markedPath = join(dir, download.suggestedFilename());
    await download.saveAs(markedPath);
    writeFileSync(join(dir, 'stripped.png'), await sharp(readFileSync(markedPath)).png().toBuffer());

    await page.goto(`${t.url}/check`);
    await audit(page, 'check-empty');
    await page.setInputFiles('#files', [markedPath, join(dir, 'plain.jpg'), join(dir, 'stripped.png')]);
    await expect.poll(() => page.locator('#rows li[data-state="ready"]').count()).toBe(3);
    await page.getByRole('button', { name: 'Check', exact: true }).click();
    await expect.poll(() => page.locator('#rows li[data-state="done"]').count(), { timeout: 60_000, interval: 250 }).toBe(3);
    const headlines = await page.$$eval('#rows li .verdict .headline', (items) => items.map((h) => h.textContent));
    expect(headlines).toEqual(['Opted out', 'Not opted out', "Not opted out in the metadata, but this service's fingerprint is in the pixels"]);
    const texts = await page.$$eval('#rows li .result', (items) => items.map((r) => r.textContent ?? ''));
    for (const text of texts) expect(text).not.toMatch(/\d %|\d%/);
    expect(texts[1]).toContain('Fingerprint (experimental)Not found.');
    expect(await page.locator('#rows li:nth-child(3) button', { hasText: 'Mark it again' }).count()).toBe(1);
    await audit(page, 'check-done');
    const verified = String((await apiUsage()).verify);
    await expect.poll(() => page.getAttribute('#usage-verify', 'data-used')).toBe(verified);
    expect(await usageOnPage(page)).toEqual(await apiUsage());
  });

  it('the keyboard stays on the row after Enter on Mark it anyway, Retry, Mark without the fingerprint and Mark it again; a long run tells its progress', { timeout: 120_000 }, async () => {
    const dir = join(scratch, 'focus');
    const paths = await images(dir, 6);
    // Already opted out: the file the check test marked, under a name of its own.
    const optedOut = join(dir, 'opted-out.jpg');
    writeFileSync(optedOut, readFileSync(join(scratch, 'check', 'plain-optout.jpg')));
    const tiny = join(dir, 'tiny.png');
    writeFileSync(tiny, await sharp({ create: { width: 40, height: 30, channels: 3, background: '#a86' } }).png().toBuffer());
    const focused = (p: Page) => p.evaluate("[document.activeElement?.className, document.activeElement?.closest('li')?.querySelector('.name')?.textContent ?? null]");
    const p = await context.newPage();
    try {
      await p.goto(`${t.url}/mark`);
      // Every word the live region says, kept.
      await p.evaluate("window.said = []; new MutationObserver(() => window.said.push(document.getElementById('status').textContent)).observe(document.getElementById('status'), { childList: true, characterData: true, subtree: true })");
      await p.setInputFiles('#files', [optedOut]);
      await p.waitForSelector('#rows li[data-state="skipped"]');
      await p.getByRole('button', { name: 'Mark it anyway' }).press('Enter');
      expect(await focused(p)).toEqual(['state', 'opted-out.jpg']);
      expect(await p.evaluate('document.activeElement.textContent')).toBe('Ready');
      await p.getByRole('button', { name: 'Remove opted-out.jpg' }).press('Enter');

      // Six files: the live region tells the fifth before the end.
      await p.setInputFiles('#files', paths.slice(0, 6));
      await expect.poll(() => p.locator('#rows li[data-state="ready"]').count()).toBe(6);
      await p.getByRole('button', { name: 'Mark', exact: true }).click();
      await expect.poll(() => p.locator('#rows li[data-state="done"]').count(), { timeout: 60_000 }).toBe(6);
      await expect.poll(() => p.evaluate('window.said')).toEqual(expect.arrayContaining(['Progress: 5 of 6 files done', '6 marked.']));

      // Refused for the fingerprint: Retry, then Mark without the fingerprint, by keyboard.
      await p.getByLabel('Experimental in-pixel fingerprint').check();
      await p.setInputFiles('#files', [tiny]);
      await p.waitForSelector('#rows li[data-state="ready"]');
      await p.getByRole('button', { name: 'Mark', exact: true }).click();
      await p.waitForSelector('#rows li[data-state="failed"]', { timeout: 30_000 });
      await p.getByRole('button', { name: 'Retry' }).press('Enter');
      expect(await focused(p)).toEqual(['state', 'tiny.png']);
      await p.waitForSelector('#rows li[data-state="failed"] button:text("Retry")', { timeout: 30_000 });
      await p.waitForSelector('#work-form:not([aria-busy])');
      await p.getByRole('button', { name: 'Mark without the fingerprint' }).press('Enter');
      expect(await focused(p)).toEqual(['state', 'tiny.png']);
      await p.waitForSelector('#rows li:last-child[data-state="done"]', { timeout: 30_000 });
      expect(await focused(p)).toEqual(['state', 'tiny.png']);
      await p.getByLabel('Experimental in-pixel fingerprint').uncheck();

      // The check page: Mark it again, on a file whose metadata was stripped (the check test's).
      await p.goto(`${t.url}/check`);
      await p.setInputFiles('#files', [join(scratch, 'check', 'stripped.png')]);
      await p.waitForSelector('#rows li[data-state="ready"]');
      await p.getByRole('button', { name: 'Check', exact: true }).click();
      await p.waitForSelector('#rows li[data-state="done"]', { timeout: 30_000 });
      await p.getByRole('button', { name: 'Mark it again' }).press('Enter');
      expect(await focused(p)).toEqual(['remark', 'stripped.png']);
      await p.waitForSelector('.remark button', { timeout: 30_000 });
      expect(await p.textContent('.remark')).toContain('Marked again');
      expect(await focused(p)).toEqual(['remark', 'stripped.png']);
    } finally {
      await p.close();
    }
  });

  it('without JavaScript, one image is marked and downloaded and one checked, and the form token never shows in the address', { timeout: 60_000 }, async () => {
    const plain = join(scratch, 'no-js.jpg');
    writeFileSync(plain, await texturedPhoto(320, 240, 'jpeg', 21));
    const before = await apiUsage();
    const noScript = await launchBrowser(scratch, { javaScriptEnabled: false });
    try {
      const p = noScript.pages()[0] ?? (await noScript.newPage());
      await p.goto(`${t.url}/sign-in`);
      await p.getByLabel('Email').fill('owner@studio.example');
      await p.getByLabel('Password').fill(PASSWORD);
      await Promise.all([p.waitForURL(`${t.url}/overview`), p.getByRole('button', { name: 'Sign in' }).click()]);
      await p.goto(`${t.url}/mark`);
      await p.setInputFiles('#files', [plain]);
      const [download] = await Promise.all([p.waitForEvent('download'), p.getByRole('button', { name: 'Mark', exact: true }).click()]);
      expect(download.suggestedFilename()).toBe('no-js-optout.jpg');
      const marked = join(scratch, 'no-js-optout.jpg');
      await download.saveAs(marked);
      await p.goto(`${t.url}/check`);
      await p.setInputFiles('#files', [marked]);
      await Promise.all([p.waitForURL(`${t.url}/check`), p.getByRole('button', { name: 'Check', exact: true }).click()]);
      await p.waitForSelector('.headline');
      expect(await p.textContent('.headline')).toBe('Opted out');
      // The page the browser keeps in its history is a plain address: the token went in the body.
      expect(p.url()).toBe(`${t.url}/check`);
      expect(await apiUsage()).toEqual({ protect: before.protect + 1, verify: before.verify + 1 });
    } finally {
      await noScript.close();
    }
  });

  it('a sign-out forged by another site is refused; the session survives a restart of the server; signing out ends it', { timeout: 60_000 }, async () => {
    // Another site: a page on another port whose form posts to our sign-out as soon as it loads.
    const evil: Server = createServer((_request, response) => {
      response.setHeader('Content-Type', 'text/html');
      response.end(`<form id="f" method="post" action="${t.url}/sign-out"><input name="csrf" value="guess"></form><script>document.getElementById('f').submit()</script>`);
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    try {
      const port = (evil.address() as { port: number }).port;
      await page.goto(`http://127.0.0.1:${port}/`);
      await page.waitForLoadState('networkidle');
      await page.goto(`${t.url}/overview`);
      expect(page.url()).toBe(`${t.url}/overview`);
    } finally {
      evil.close();
    }

    const port = Number(new URL(t.url).port);
    await t.close();
    t = await startTestServer({ dataDir, env: { PORT: String(port) } });
    await page.goto(`${t.url}/overview`);
    expect(page.url()).toBe(`${t.url}/overview`);
    expect(await page.textContent('h1')).toBe('Overview');

    await Promise.all([page.waitForURL(`${t.url}/sign-in`), page.getByRole('button', { name: 'Sign out' }).click()]);
    await page.goto(`${t.url}/overview`);
    expect(page.url()).toBe(`${t.url}/sign-in?next=%2Foverview`);
  });

  /** Sign the owner in, in a page of the browser's, unless the browser is signed in (the test before these signs out). */
  async function signInOn(p: Page): Promise<void> {
    await p.goto(`${t.url}/overview`);
    if (!p.url().includes('/sign-in')) return;
    await p.getByLabel('Email').fill('owner@studio.example');
    await p.getByLabel('Password').fill(PASSWORD);
    await Promise.all([p.waitForURL(`${t.url}/overview`), p.getByRole('button', { name: 'Sign in' }).click()]);
  }

  it('a session that ends mid-batch stops the run and keeps the files; signed in again in another tab, Mark sends them without a reload', { timeout: 120_000 }, async () => {
    const paths = await images(join(scratch, 'session-ends'), 6);
    const p = await context.newPage();
    const other = await context.newPage();
    await signInOn(other);
    const sent: string[] = [];
    p.on('request', (request) => {
      if (request.method() === 'POST' && request.url().endsWith('/app/mark')) sent.push(request.url());
    });
    // The first files' uploads wait until the session has ended elsewhere: they reach the server signed out.
    let signOut: Promise<void> | undefined;
    await p.route('**/app/mark', async (route) => {
      signOut ??= (async () => {
        await other.goto(`${t.url}/overview`);
        await Promise.all([other.waitForURL(`${t.url}/sign-in`), other.getByRole('button', { name: 'Sign out' }).click()]);
      })();
      await signOut;
      await route.continue();
    });
    try {
      await p.goto(`${t.url}/mark`);
      await p.setInputFiles('#files', paths);
      await expect.poll(() => p.locator('#rows li[data-state="ready"]').count()).toBe(6);
      await p.getByRole('button', { name: 'Mark', exact: true }).press('Enter');
      // The keyboard follows the run to its first file.
      await expect.poll(() => p.evaluate("document.activeElement?.closest('li')?.querySelector('.name')?.textContent")).toBe('image 01.jpg');
      await p.waitForSelector('#work-form:not([aria-busy])', { timeout: 60_000 });
      // Three went before the session's end was known; none after; every file is kept, ready, and says why.
      expect(sent.length).toBe(3);
      expect(await p.locator('#rows li[data-state="ready"]').count()).toBe(6);
      for (const text of await p.$$eval('#rows li .state', (items) => items.map((i) => i.textContent))) expect(text).toBe('Not sent: you are signed out. Sign in again, then press Mark.');
      expect(await p.textContent('[role="alert"]')).toContain('You are signed out');
      await audit(p, 'mark-signed-out');
      await p.unroute('**/app/mark');

      // Still signed out: Mark says so again, and sends nothing.
      await p.getByRole('button', { name: 'Mark', exact: true }).click();
      await expect.poll(() => p.textContent('[role="alert"]')).toContain('You are signed out');
      expect(sent.length).toBe(3);

      // Signed in again in the other tab: the same page, not reloaded, marks them all.
      await signInOn(other);
      await p.getByRole('button', { name: 'Mark', exact: true }).click();
      await expect.poll(() => p.locator('#rows li[data-state="done"]').count(), { timeout: 60_000 }).toBe(6);
      await audit(p, 'mark-after-sign-in-again');
    } finally {
      await p.close();
      await other.close();
    }
  });

  it('Stop ends a running batch: the files being sent finish, the rest stay, ready; the keyboard is back on Mark, which sends them', { timeout: 120_000 }, async () => {
    const paths = await images(join(scratch, 'stopped'), 7);
    const p = await context.newPage();
    const sent: string[] = [];
    p.on('request', (request) => {
      if (request.method() === 'POST' && request.url().endsWith('/app/mark')) sent.push(request.url());
    });
    // Each upload waits a moment before it goes: time to press Stop while the first three are on their way.
    await p.route('**/app/mark', async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await route.continue();
    });
    try {
      await signInOn(p);
      await p.goto(`${t.url}/mark`);
      expect(await p.isVisible('#stop')).toBe(false);
      await p.setInputFiles('#files', paths);
      await expect.poll(() => p.locator('#rows li[data-state="ready"]').count()).toBe(7);
      await p.getByRole('button', { name: 'Mark', exact: true }).click();
      // Pressed once the first three are on their way.
      await expect.poll(() => sent.length).toBe(3);
      await p.getByRole('button', { name: 'Stop' }).focus();
      await p.keyboard.press('Enter');
      await p.waitForSelector('#work-form:not([aria-busy])', { timeout: 60_000 });
      expect(sent.length).toBe(3);
      expect(await p.locator('#rows li[data-state="done"]').count()).toBe(3);
      expect(await p.locator('#rows li[data-state="ready"]').count()).toBe(4);
      for (const text of await p.$$eval('#rows li[data-state="ready"] .state', (items) => items.map((i) => i.textContent))) expect(text).toBe('Not sent: the run was stopped.');
      expect(await p.isVisible('#stop')).toBe(false);
      expect(await p.evaluate('document.activeElement?.id')).toBe('start');
      await p.unroute('**/app/mark');
      await p.keyboard.press('Enter');
      await expect.poll(() => p.locator('#rows li[data-state="done"]').count(), { timeout: 60_000 }).toBe(7);
    } finally {
      await p.close();
    }
  });

  it('the in-page question before a batch the month cannot reach closes with Escape, saying no, the keyboard back on Mark', { timeout: 60_000 }, async () => {
    const paths = await images(join(scratch, 'escape'), 3);
    const p = await context.newPage();
    try {
      await signInOn(p);
      await p.goto(`${t.url}/mark`);
      await t.server.admin.setLimits('studio', { protectPerMonth: (await apiUsage()).protect + 1 });
      await p.reload();
      await p.setInputFiles('#files', paths);
      await expect.poll(() => p.locator('#rows li[data-state="ready"]').count()).toBe(3);
      await p.getByRole('button', { name: 'Mark', exact: true }).click();
      await p.waitForSelector('.confirm');
      await p.keyboard.press('Escape');
      expect(await p.locator('.confirm').count()).toBe(0);
      expect(await p.evaluate('document.activeElement?.id')).toBe('start');
      expect(await p.locator('#rows li[data-state="ready"]').count()).toBe(3);
    } finally {
      await t.server.admin.setLimits('studio', { protectPerMonth: null });
      await p.close();
    }
  });

  it('the API key of the account still works, and no page logged an error but the refusals asked for', async () => {
    const [path] = await images(join(scratch, 'api'), 1);
    expect((await postImage(t.url, apiKey, readFileSync(path!), { path: '/api/v1/verify' })).status).toBe(200);
    // The wrong password's page (401), the file too small for the fingerprint (422, on the mark page) and the forged
    // sign-out (403) are the only failures the browser saw: no script, style or icon was refused.
    const status = (text: string) => /status of (\d{3})/.exec(text)?.[1];
    expect(consoleErrors.map((e) => `${new URL(e.slice(0, e.indexOf(': '))).pathname} ${status(e) ?? e}`)).toEqual(['/sign-in 401', '/mark 422', '/sign-out 403']);
    expect(pagesChecked).toEqual(
      expect.arrayContaining(['sign-in', 'sign-in-error', 'overview', 'account-owner', 'invitation', 'account-member', 'mark-empty', 'mark-done', 'mark-constraints', 'check-empty', 'check-done']),
    );
  });
});
