/**
 * Getting an account, in a real browser (Debian's chromium driven by
 * playwright-core), by keyboard: a visitor follows "Create a Free account"
 * from the sign-in page, gives their email, opens the mailed link (a real
 * SMTP server on loopback), is told when the name is taken with what they
 * typed kept, and lands on their Free account's overview; an operator opens
 * an account for a customer on the console and hands over its link. Every
 * page is checked with axe-core in light and dark mode at 1280 and 375
 * pixels (photographed by `npm run test:screenshots`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { auditPage, launchBrowser, watchConsole } from '../support/browser.js';
import { linkIn as linkInMail, startSmtp, type TestSmtp } from '../support/smtp.js';
import { freshDataDir, startTestServer, type TestServer } from '../support/server.js';

const PASSWORD = 'correct horse battery staple';
const scratch = mkdtempSync(join(tmpdir(), 'optmark-signup-browser-'));
const dataDir = freshDataDir();
let smtp: TestSmtp;
let t: TestServer;
let context: BrowserContext;
let page: Page;
const consoleErrors: string[] = [];

beforeAll(async () => {
  smtp = await startSmtp();
  t = await startTestServer({ dataDir, env: { OPTMARK_SMTP_URL: smtp.url, OPTMARK_SIGNUP: 'open' } });
  await t.server.admin.createAccount('taken-name', 'pro');
  await t.server.admin.createAccount('service-team', 'pro');
  await t.server.people.createUser({ account: 'service-team', email: 'ops@team.example', role: 'owner', operator: true, password: PASSWORD, displayName: 'Oskar Ops', actor: 'cli' });
  context = await launchBrowser(scratch);
  page = watchConsole(context.pages()[0] ?? (await context.newPage()), consoleErrors);
}, 60_000);

afterAll(async () => {
  await context?.close();
  await t?.close();
  await smtp?.close();
  rmSync(scratch, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

const linkIn = (text: string) => linkInMail(text, '/sign-up/confirm')!;

it('a visitor signs up by keyboard, from the sign-in page to their Free account', { timeout: 90_000 }, async () => {
  await page.goto(`${t.url}/sign-in`);
  await page.getByRole('link', { name: 'Create a Free account' }).focus();
  await Promise.all([page.waitForURL(`${t.url}/sign-up`), page.keyboard.press('Enter')]);
  await auditPage(page, 'sign-up');
  await page.getByLabel('Email').fill('mina@studio.example');
  await page.keyboard.press('Enter');
  await page.waitForSelector('[role="status"]');
  expect(await page.textContent('[role="status"]')).toContain('A link is on its way to mina@studio.example');
  await auditPage(page, 'sign-up-sent');

  await expect.poll(() => smtp.received.some((m) => m.to.includes('mina@studio.example'))).toBe(true);
  await page.goto(linkIn(smtp.received.find((m) => m.to.includes('mina@studio.example'))!.text));
  expect(await page.textContent('main')).toContain('Your email mina@studio.example is confirmed');
  await auditPage(page, 'sign-up-confirm');
  await page.getByLabel('Account name').fill('taken-name');
  await page.getByLabel('Your name').fill('Mina');
  await page.getByLabel('New password').fill(PASSWORD);
  await page.keyboard.press('Enter');
  await page.waitForSelector('[role="alert"]');
  expect(await page.textContent('[role="alert"]')).toContain('An account named "taken-name" already exists');
  expect(await page.inputValue('#account-name')).toBe('taken-name');
  expect(await page.inputValue('#display-name')).toBe('Mina');
  await auditPage(page, 'sign-up-confirm-error');
  await page.getByLabel('Account name').fill('studio-mina');
  await page.getByLabel('New password').fill(PASSWORD);
  await Promise.all([page.waitForURL(`${t.url}/overview?welcome=1`), page.keyboard.press('Enter')]);
  expect(await page.textContent('main')).toContain('studio-mina · Free plan');
  expect(await page.textContent('header')).toContain('Mina');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${t.url}/sign-in`);
});

it('an operator opens an account for a customer on the console and hands over its set-up link', { timeout: 90_000 }, async () => {
  // Mail is configured here: the link is mailed, and the console says so.
  await page.getByLabel('Email').fill('ops@team.example');
  await page.getByLabel('Password').fill(PASSWORD);
  await Promise.all([page.waitForURL(`${t.url}/overview`), page.keyboard.press('Enter')]);
  await page.goto(`${t.url}/operator`);
  const section = page.locator('section[aria-labelledby="accounts-heading"]');
  await section.getByLabel('Account name').fill('taken-name');
  await section.getByLabel('Plan').selectOption('lifetime');
  await section.getByLabel("Owner's email").fill('boss@customer.example');
  await section.getByRole('button', { name: 'Open the account' }).click();
  await page.waitForSelector('section[aria-labelledby="accounts-heading"] [role="alert"]');
  expect(await page.inputValue('#account-owner')).toBe('boss@customer.example');
  expect(await page.inputValue('#account-plan')).toBe('lifetime');
  await auditPage(page, 'operator-open-account-error');
  await section.getByLabel('Account name').fill('customer');
  await section.getByRole('button', { name: 'Open the account' }).click();
  await page.getByRole('status').filter({ hasText: 'The account customer (Lifetime) is open; its owner boss@customer.example was sent a set-up link by mail' }).waitFor();
  await auditPage(page, 'operator-open-account');
  expect(consoleErrors.map((e) => /status of (\d{3})/.exec(e)?.[1] ?? e)).toEqual(['422', '409']);
});
