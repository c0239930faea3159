/**
 * A slow link in a real browser (Chromium's own throttling of uploads): the
 * server refuses an upload slower than its minimum average, and three
 * uploads at once share the link. The mark page, refused for files that
 * were too slow together, sends one file at a time and sends them again,
 * after the others: every file is marked, each counted once.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { auditPage, launchBrowser } from '../support/browser.js';
import { startTestServer, type TestServer } from '../support/server.js';

const PASSWORD = 'correct horse battery staple';
const scratch = mkdtempSync(join(tmpdir(), 'optmark-slow-'));
/** The link: 300 KB/s up. A file of about 1.2 MB takes 4 s alone, 12 s when three share the link. */
const LINK = 300 * 1024;
let t: TestServer;
let context: BrowserContext;

beforeAll(async () => {
  // The minimum average, 150 KB/s, is checked 10 s into an upload: one alone ends before; three at once are each at 100 KB/s then.
  t = await startTestServer({ env: { OPTMARK_MIN_UPLOAD_RATE: String(150 * 1024) } });
  await t.server.admin.createAccount('slow', 'pro');
  await t.server.people.createUser({ account: 'slow', email: 'owner@slow.example', role: 'owner', password: PASSWORD, actor: 'cli' });
  context = await launchBrowser(scratch);
}, 60_000);

afterAll(async () => {
  await context?.close();
  await t?.close();
  rmSync(scratch, { recursive: true, force: true });
});

it('three files too slow together are each sent again, alone, after the others; every file is marked and counted once', { timeout: 120_000 }, async () => {
  const paths: string[] = [];
  for (let i = 0; i < 3; i++) {
    // Noise does not compress: about 1.2 MB of PNG.
    const noise = Buffer.alloc(640 * 640 * 3);
    for (let j = 0; j < noise.length; j++) noise[j] = (Math.imul(j + 1, 2654435761 + i * 97) >>> 13) & 0xff;
    const path = join(scratch, `noise ${i + 1}.png`);
    writeFileSync(path, await sharp(noise, { raw: { width: 640, height: 640, channels: 3 } }).png({ compressionLevel: 0 }).toBuffer());
    paths.push(path);
  }
  const p = await context.newPage();
  const sent: string[] = [];
  p.on('request', (request) => {
    if (request.method() === 'POST' && request.url().endsWith('/app/mark')) sent.push(request.url());
  });
  await p.goto(`${t.url}/sign-in`);
  await p.getByLabel('Email').fill('owner@slow.example');
  await p.getByLabel('Password').fill(PASSWORD);
  await Promise.all([p.waitForURL(`${t.url}/overview`), p.getByRole('button', { name: 'Sign in' }).click()]);
  await p.goto(`${t.url}/mark`);
  const cdp = await context.newCDPSession(p);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: LINK });
  await p.setInputFiles('#files', paths);
  await expect.poll(() => p.locator('#rows li[data-state="ready"]').count()).toBe(3);
  await p.getByRole('button', { name: 'Mark', exact: true }).click();
  // Refused together, they say they go again.
  await expect.poll(() => p.locator('#rows li .state', { hasText: 'The link is slow' }).count(), { timeout: 40_000 }).toBeGreaterThan(0);
  await auditPage(p, 'mark-slow-link');
  await expect.poll(() => p.locator('#rows li[data-state="done"]').count(), { timeout: 90_000 }).toBe(3);
  expect(sent.length).toBeGreaterThanOrEqual(4);
  expect((await t.server.admin.usage('slow')).protect.used).toBe(3);
  await p.close();
});
