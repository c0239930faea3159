/**
 * The Private Vault in a real browser (Debian's chromium driven by
 * playwright-core), by keyboard where a person would: the owner reaches the
 * Vault from the navigation, turns it on, marks two images on the Mark page
 * (each row says it was kept), then on the Vault page sees the meter and the
 * two files, opens a preview (both images load), chooses every file and
 * downloads them as one ZIP, deletes one after confirming, and turns the
 * vault off with its files deleted. Each state is checked with axe-core in
 * light and dark at 1280 and 375 pixels (photographed into
 * test-output/screenshots by `npm run test:screenshots`).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unzipSync } from 'fflate';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { texturedPhoto } from '../fingerprint/support.js';
import { auditPage, launchBrowser, watchConsole } from '../support/browser.js';
import { freshDataDir, startTestServer, type TestServer } from '../support/server.js';
import { markOnPage, storedFiles, turnVault } from '../support/vault.js';
import { WebClient } from '../support/web-client.js';

const PASSWORD = 'correct horse battery staple';
const scratch = mkdtempSync(join(tmpdir(), 'optmark-vault-browser-'));
const dataDir = freshDataDir();

let t: TestServer;
let browser: BrowserContext;
let page: Page;
const consoleErrors: string[] = [];
const files: Array<{ path: string; name: string; bytes: Buffer }> = [];

async function sees(locator: Locator, text: string): Promise<void> {
  await expect.poll(async () => (await locator.allInnerTexts()).join('\n'), { timeout: 10_000 }).toContain(text);
}

beforeAll(async () => {
  t = await startTestServer({ dataDir });
  await t.server.admin.createAccount('atelier', 'pro');
  await t.server.people.createUser({ account: 'atelier', email: 'vera@atelier.example', role: 'owner', password: PASSWORD, displayName: 'Vera Owner', actor: 'cli' });
  const dir = join(scratch, 'images');
  mkdirSync(dir, { recursive: true });
  for (const [i, name] of ['olive grove.jpg', 'harbour wall.png'].entries()) {
    const bytes = await texturedPhoto(520 + 16 * i, 340, (['jpeg', 'png'] as const)[i]!, 51 + i);
    const path = join(dir, name);
    writeFileSync(path, bytes);
    files.push({ path, name, bytes });
  }
  browser = await launchBrowser(scratch);
  page = watchConsole(browser.pages()[0] ?? (await browser.newPage()), consoleErrors);
  page.on('dialog', (dialog) => void dialog.accept());
  await page.goto(`${t.url}/sign-in?next=%2Foverview`);
  await page.getByLabel('Email').fill('vera@atelier.example');
  await page.getByLabel('Password').fill(PASSWORD);
  await Promise.all([page.waitForURL(`${t.url}/overview`), page.getByRole('button', { name: 'Sign in' }).click()]);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  rmSync(scratch, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the Private Vault in a browser', () => {
  it('the owner turns it on from its page, by keyboard', { timeout: 120_000 }, async () => {
    await Promise.all([page.waitForURL(`${t.url}/vault`), page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Vault' }).click()]);
    await sees(page.getByRole('heading', { level: 2 }), 'Private Vault is off');
    await auditPage(page, 'vault-off');
    await page.getByRole('button', { name: 'Turn the vault on' }).focus();
    await Promise.all([page.waitForLoadState('load'), page.keyboard.press('Enter')]);
    await sees(page.getByRole('status'), 'The Private Vault is on');
  });

  it('marked files are kept, and their rows say so', { timeout: 120_000 }, async () => {
    await page.goto(`${t.url}/mark`);
    await page.setInputFiles('#files', files.map((f) => f.path));
    await expect.poll(() => page.locator('#rows li[data-state="ready"]').count()).toBe(2);
    await page.getByRole('button', { name: 'Mark', exact: true }).click();
    await expect.poll(() => page.locator('#rows li[data-state="done"]').count(), { timeout: 60_000, interval: 250 }).toBe(2);
    expect(await page.locator('#rows .vault-note', { hasText: 'Kept in your Private Vault' }).count()).toBe(2);
  });

  it('the Vault page shows the meter and the files, previews both images, and downloads a choice as one ZIP', { timeout: 120_000 }, async () => {
    await page.goto(`${t.url}/vault`);
    await sees(page.getByRole('heading', { level: 2 }), '2 markings kept');
    const used = Number(await page.locator('#vault-meter').getAttribute('data-used'));
    expect(used).toBeGreaterThan(files[0]!.bytes.byteLength + files[1]!.bytes.byteLength);
    await auditPage(page, 'vault');
    // A preview, opened by keyboard: both images load.
    await page.locator('summary', { hasText: 'of olive grove.jpg' }).focus();
    await page.keyboard.press('Enter');
    const images = page.locator('details[open] .previews img');
    await expect.poll(() => images.evaluateAll((list) => list.map((img) => (img as unknown as { naturalWidth: number }).naturalWidth)), { timeout: 10_000 }).toEqual([520, 520]);
    await auditPage(page, 'vault-preview');
    // Every file chosen by keyboard, and downloaded as one ZIP.
    await sees(page.locator('#chosen-count'), 'No file chosen');
    await page.getByLabel('Choose every file listed').focus();
    await page.keyboard.press('Space');
    await sees(page.locator('#chosen-count'), '2 of 2 chosen');
    const [zip] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download chosen (zip)' }).click()]);
    const zipPath = join(scratch, zip.suggestedFilename());
    await zip.saveAs(zipPath);
    const entries = unzipSync(readFileSync(zipPath));
    expect(Object.keys(entries).sort()).toEqual(['marked/harbour-wall-optout.png', 'marked/olive-grove-optout.jpg', 'original/harbour wall.png', 'original/olive grove.jpg']);
    expect(Buffer.from(entries['original/olive grove.jpg']!).equals(files[0]!.bytes)).toBe(true);
  });

  it('finds a file by name, deletes it after confirming, and turns the vault off with its files deleted', { timeout: 120_000 }, async () => {
    await page.getByLabel(/File name or SHA-256/).fill('HARBOUR');
    await Promise.all([page.waitForURL(/\/vault\?q=HARBOUR$/), page.getByRole('button', { name: 'Search' }).click()]);
    await sees(page.getByRole('heading', { level: 2 }), '1 marking found');
    await page.getByLabel('Choose harbour wall.png').check();
    // Done, the browser is sent back to the vault (Post/Redirect/Get), which says what was deleted.
    await Promise.all([page.waitForURL(`${t.url}/vault`), page.getByRole('button', { name: 'Delete chosen' }).click()]);
    await sees(page.getByRole('status'), 'Deleted 1 marking from the vault');
    await sees(page.getByRole('heading', { level: 2 }), '1 marking kept');
    await auditPage(page, 'vault-deleted');

    await page.getByLabel(/Are deleted now/).check();
    await Promise.all([page.waitForURL(`${t.url}/vault`), page.getByRole('button', { name: 'Turn the vault off' }).click()]);
    await sees(page.getByRole('status'), 'everything it held is deleted');
    await sees(page.getByRole('heading', { level: 2 }), '0 markings kept');
    expect(storedFiles(join(dataDir, 'vault')).files).toEqual([]);
    await auditPage(page, 'vault-emptied');
    expect(consoleErrors).toEqual([]);
  });

  it('an account moved to the Free plan is told what its vault still holds, and deletes it by keyboard', { timeout: 120_000 }, async () => {
    // A marking kept while the account was on Pro (through the page script's route, as the Mark page sends it).
    const vera = new WebClient(t.url);
    await vera.signIn('vera@atelier.example', PASSWORD);
    expect((await turnVault(vera, true)).status).toBe(200);
    expect((await markOnPage(vera, files[0]!.bytes, files[0]!.name)).vault?.state).toBe('stored');
    await t.server.admin.setPlan('atelier', 'free');
    await page.goto(`${t.url}/vault`);
    await sees(page.locator('main'), "This account's vault still holds 1 marking kept before it moved to the Free plan");
    await auditPage(page, 'vault-free-kept');
    await page.getByRole('button', { name: 'Delete the 1 marking kept, bytes and all' }).focus();
    await Promise.all([page.waitForURL(`${t.url}/vault/settings`), page.keyboard.press('Enter')]);
    // Asked first, on the page, the question focused; nothing is deleted yet.
    const question = page.getByRole('heading', { name: 'Delete the 1 marking the vault holds?' });
    await expect.poll(() => question.evaluate((h) => h === h.ownerDocument.activeElement)).toBe(true);
    expect(storedFiles(join(dataDir, 'vault')).files).not.toEqual([]);
    await auditPage(page, 'vault-free-confirm');
    await page.getByRole('button', { name: 'Delete 1 marking' }).focus();
    await Promise.all([page.waitForURL(`${t.url}/vault`), page.keyboard.press('Enter')]);
    await sees(page.getByRole('status'), 'everything it held is deleted (1 marking)');
    expect(storedFiles(join(dataDir, 'vault')).files).toEqual([]);
    expect(await page.getByRole('button', { name: /Delete the/ }).count()).toBe(0);
    expect(consoleErrors).toEqual([]);
  });
});
