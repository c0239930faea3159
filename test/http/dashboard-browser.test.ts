/**
 * The dashboard in a real browser (Debian's chromium driven by
 * playwright-core): what the forms, the cookie, the same-site checks, the
 * content security policy and the download do there, not what a test client
 * imitates. Sign in, mark a photo with the fingerprint ticked, get the
 * download, check it, sign out.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { texturedPhoto } from '../fingerprint/support.js';
import { postImage, startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let context: BrowserContext;
let page: Page;
const scratch = mkdtempSync(join(tmpdir(), 'optmark-browser-'));
/** What the page reported on its console: a blocked stylesheet or form would show here. */
const consoleErrors: string[] = [];

beforeAll(async () => {
  t = await startTestServer();
  context = await chromium.launchPersistentContext(join(scratch, 'profile'), {
    executablePath: execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim(),
    headless: true,
    acceptDownloads: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
}, 60_000);

afterAll(async () => {
  await context?.close();
  await t?.close();
  rmSync(scratch, { recursive: true, force: true });
});

it('signs in, marks with the fingerprint, downloads, checks and signs out', { timeout: 60_000 }, async () => {
  const account = 'browser-user';
  const key = await t.key('pro', account);
  const photoPath = join(scratch, 'Beach day.jpg');
  writeFileSync(photoPath, await texturedPhoto(640, 480, 'jpeg'));

  await page.goto(`${t.url}/`);
  expect(page.url()).toBe(`${t.url}/dashboard`);
  await page.fill('#key', key);
  await Promise.all([page.waitForURL(`${t.url}/dashboard`), page.click('button:has-text("Sign in")')]);
  await page.waitForSelector('text=This month');
  expect(await page.textContent('header')).toContain(account);
  // The stylesheet loaded under the page's policy.
  // (A string, evaluated in the page: this project compiles without the DOM's types.)
  expect(await page.evaluate("getComputedStyle(document.querySelector('.brand')).fontWeight")).toBe('700');

  await page.setInputFiles('#protect-image', photoPath);
  await page.check('input[name=fingerprint]');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('button:has-text("Mark and download")')]);
  expect(download.suggestedFilename()).toBe('Beach-day-optout.jpg');
  const markedPath = join(scratch, download.suggestedFilename());
  await download.saveAs(markedPath);
  const verified = (await (await postImage(t.url, key, readFileSync(markedPath), { path: '/api/v1/verify' })).json()) as {
    optedOut: boolean;
    provenance: { valid: boolean };
    fingerprint: { present: boolean };
  };
  expect(verified).toMatchObject({ optedOut: true, provenance: { valid: true }, fingerprint: { present: true } });

  await page.reload();
  expect(await page.textContent('table')).toMatch(/Marked\s*1\s*10000\s*9999/);
  await page.setInputFiles('#verify-image', markedPath);
  await Promise.all([page.waitForURL(/\/dashboard\/verify\?/), page.click('button:has-text("Check")')]);
  expect(await page.textContent('h1')).toBe('Beach-day-optout.jpg: opted out');
  expect(await page.textContent('.result')).toMatch(/Fingerprint \(experimental\)\s*found/);

  await Promise.all([page.waitForURL(`${t.url}/dashboard`), page.click('button:has-text("Sign out")')]);
  await page.waitForSelector('#key');
  expect((await context.cookies()).filter((c) => c.name === 'optmark_session')).toEqual([]);
  expect(consoleErrors).toEqual([]);
});
