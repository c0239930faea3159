/**
 * Dated service records in a real browser (Debian's chromium driven by
 * playwright-core): an owner marks three images on the Mark page; each
 * row offers its certificate (a PDF, downloaded) and the batch summary the
 * batch's certificate; the Records page, from the navigation, lists the
 * three, finds one by name and by the start of its hash, and exports CSV;
 * the owner turns the public lookup on and a browser of nobody signed in
 * reads the marked file's page; the check page links a marked file to its
 * record. Each page is checked with axe-core in light and dark at 1280 and
 * 375 pixels (photographed by `npm run test:screenshots`).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { texturedPhoto } from '../fingerprint/support.js';
import { auditPage, launchBrowser, watchConsole } from '../support/browser.js';
import { freshDataDir, startTestServer, type TestServer } from '../support/server.js';

const PASSWORD = 'correct horse battery staple';
const scratch = mkdtempSync(join(tmpdir(), 'optmark-records-browser-'));
const dataDir = freshDataDir();
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

let t: TestServer;
const browsers: BrowserContext[] = [];
const consoleErrors: string[] = [];
let page: Page;
const files: Array<{ path: string; name: string; bytes: Buffer }> = [];
let markedPath = '';

async function newPage(): Promise<Page> {
  const browser = await launchBrowser(scratch);
  browsers.push(browser);
  return watchConsole(browser.pages()[0] ?? (await browser.newPage()), consoleErrors);
}

async function sees(locator: Locator, text: string): Promise<void> {
  await expect.poll(async () => (await locator.allInnerTexts()).join('\n'), { timeout: 10_000 }).toContain(text);
}

beforeAll(async () => {
  t = await startTestServer({ dataDir });
  await t.server.admin.createAccount('studio', 'pro');
  await t.server.people.createUser({ account: 'studio', email: 'olga@studio.example', role: 'owner', password: PASSWORD, displayName: 'Olga Owner', actor: 'cli' });
  const dir = join(scratch, 'images');
  mkdirSync(dir, { recursive: true });
  for (const [i, name] of ['quay at dawn.jpg', 'market.png', 'lighthouse.webp'].entries()) {
    const bytes = await texturedPhoto(480 + 16 * i, 320, (['jpeg', 'png', 'webp'] as const)[i]!, 31 + i);
    const path = join(dir, name);
    writeFileSync(path, bytes);
    files.push({ path, name, bytes });
  }
  page = await newPage();
  await page.goto(`${t.url}/sign-in?next=%2Fmark`);
  await page.getByLabel('Email').fill('olga@studio.example');
  await page.getByLabel('Password').fill(PASSWORD);
  await Promise.all([page.waitForURL(`${t.url}/mark`), page.getByRole('button', { name: 'Sign in' }).click()]);
}, 60_000);

afterAll(async () => {
  for (const browser of browsers) await browser.close();
  await t?.close();
  rmSync(scratch, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

describe('records in a browser', () => {
  it('each marked file offers its certificate, and the batch summary the batch’s', { timeout: 120_000 }, async () => {
    await page.setInputFiles('#files', files.map((f) => f.path));
    await expect.poll(() => page.locator('#rows li[data-state="ready"]').count()).toBe(3);
    await page.getByRole('button', { name: 'Mark', exact: true }).click();
    await expect.poll(() => page.locator('#rows li[data-state="done"]').count(), { timeout: 60_000, interval: 250 }).toBe(3);
    expect(await page.getByRole('link', { name: /^Certificate \(PDF\)/ }).count()).toBe(3);
    await sees(page.locator('.batch-summary'), '3 files marked in this batch, each with a dated service record.');
    await auditPage(page, 'mark-records');

    const [single] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Certificate (PDF) of quay-at-dawn-optout.jpg' }).click()]);
    expect(single.suggestedFilename()).toMatch(/^optmark-certificate-rec_[A-Za-z0-9]+\.pdf$/);
    const singlePath = join(scratch, single.suggestedFilename());
    await single.saveAs(singlePath);
    expect(readFileSync(singlePath).subarray(0, 5).toString()).toBe('%PDF-');

    const [batch] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Certificate of this batch (PDF)' }).click()]);
    expect(batch.suggestedFilename()).toMatch(/^optmark-certificate-bat_.+\.pdf$/);
    const batchPath = join(scratch, batch.suggestedFilename());
    await batch.saveAs(batchPath);
    expect(readFileSync(batchPath).subarray(0, 5).toString()).toBe('%PDF-');

    const [file] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download quay-at-dawn-optout.jpg' }).click()]);
    markedPath = join(scratch, file.suggestedFilename());
    await file.saveAs(markedPath);
  });

  it('the Records page lists them, finds one by name and by hash, and exports CSV', { timeout: 120_000 }, async () => {
    await Promise.all([page.waitForURL(`${t.url}/history`), page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Records' }).click()]);
    await sees(page.getByRole('heading', { level: 2 }), '3 records');
    for (const f of files) await page.getByRole('row', { name: new RegExp(f.name) }).waitFor({ state: 'visible' });
    await auditPage(page, 'records');

    await page.getByLabel(/File name or SHA-256/).fill('MARKET');
    await Promise.all([page.waitForURL(/\/history\?q=MARKET&/), page.getByRole('button', { name: 'Search' }).click()]);
    await sees(page.getByRole('heading', { level: 2 }), '1 record found');
    expect(await page.getByRole('row', { name: /market\.png/ }).count()).toBe(1);

    const marked = sha256(readFileSync(markedPath));
    await page.getByLabel(/File name or SHA-256/).fill(marked.slice(0, 12));
    await page.getByLabel('From').fill(new Date().toISOString().slice(0, 10));
    await page.getByRole('button', { name: 'Search' }).click();
    await sees(page.getByRole('heading', { level: 2 }), '1 record found');
    await sees(page.getByRole('table'), marked);
    await auditPage(page, 'records-found');

    const [csv] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export CSV' }).click()]);
    const csvPath = join(scratch, 'records.csv');
    await csv.saveAs(csvPath);
    const lines = readFileSync(csvPath, 'utf8').trim().split('\r\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain('"quay at dawn.jpg"');
    expect(lines[1]).toContain(marked);
  });

  it('the owner turns the public lookup on; anyone then reads when and how the file was marked, and nothing else', { timeout: 120_000 }, async () => {
    await page.goto(`${t.url}/history`);
    await page.getByRole('button', { name: 'Turn the public lookup on' }).click();
    await sees(page.getByRole('status'), 'The public lookup is on');
    await auditPage(page, 'records-public-on');

    const marked = sha256(readFileSync(markedPath));
    const anyone = await newPage();
    await anyone.goto(`${t.url}/records/${marked}`);
    await sees(anyone.getByRole('heading', { level: 1 }), 'Marked by this service');
    await sees(anyone.locator('main'), 'Prohibited for AI/ML training');
    const text = await anyone.locator('main').innerText();
    for (const secret of ['quay at dawn', 'olga', 'studio', sha256(files[0]!.bytes)]) expect(text.toLowerCase()).not.toContain(secret);
    await auditPage(anyone, 'record-public');
    // The original's hash: nothing.
    const original = await anyone.goto(`${t.url}/records/${sha256(files[0]!.bytes)}`);
    expect(original?.status()).toBe(404);
  });

  it('the check page links a marked file to its record', { timeout: 120_000 }, async () => {
    await page.goto(`${t.url}/check`);
    await page.setInputFiles('#files', [markedPath]);
    await page.waitForSelector('#rows li[data-state="ready"]');
    await page.getByRole('button', { name: 'Check', exact: true }).click();
    await page.waitForSelector('#rows li[data-state="done"]', { timeout: 60_000 });
    await sees(page.locator('#rows li .result'), 'This is the file your account marked');
    await Promise.all([page.waitForURL(/\/history\?q=[0-9a-f]{64}$/), page.getByRole('link', { name: 'its record' }).click()]);
    await sees(page.getByRole('heading', { level: 2 }), '1 record found');
    // The browser saw no failure but the original's 404 it was sent to.
    expect(consoleErrors.map((e) => /status of (\d{3})/.exec(e)?.[1] ?? e)).toEqual(['404']);
  });
});
