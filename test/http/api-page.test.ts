/**
 * The public API page, `GET /api`, from a real server: without a session it
 * is a page with the dashboard's headers, its strict Content-Security-Policy
 * included, saying the limits of the limits table and the server's upload
 * limit. In Debian's chromium (playwright-core): the reference is rendered
 * by the bundled Swagger UI, and names every operation of the server's own
 * OpenAPI document; the page logs no error (a script, style, font or image
 * refused by the policy would show as one); no request leaves the server's
 * origin; axe-core finds no moderate, serious or critical violation (but four
 * moderate ones of Swagger UI's own markup, named) in light and dark
 * mode at 1280 and 375 pixels (screenshots in test-output/screenshots with
 * `npm run test:screenshots`); the "Request access" link is reached by keyboard and takes a
 * signed-out visitor to sign in, then to /keys.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAGE_HEADERS } from '../../src/http/page-headers.js';
import { acceptsGzip } from '../../src/http/web/assets.js';
import { auditPage, launchBrowser, watchConsole } from '../support/browser.js';
import { freshDataDir, startTestServer, type TestServer } from '../support/server.js';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const scratch = mkdtempSync(join(tmpdir(), 'optmark-api-page-'));
const dataDir = freshDataDir();

let t: TestServer;
let context: BrowserContext;
let page: Page;
/** What the page reported on its console, and its uncaught errors. */
const consoleErrors: string[] = [];
/** Every request the browser made, to any address. */
const requested: string[] = [];

beforeAll(async () => {
  t = await startTestServer({ dataDir });
  // The page says the limits table's numbers, not constants: Lifetime gets its own here.
  await t.server.admin.setPlanLimits('lifetime', { protectPerMonth: 20_000, verifyPerMonth: 75_000 });
  context = await launchBrowser(scratch, { acceptDownloads: false });
  context.on('request', (request) => requested.push(request.url()));
  page = watchConsole(context.pages()[0] ?? (await context.newPage()), consoleErrors);
}, 60_000);

afterAll(async () => {
  await context?.close();
  await t?.close();
  rmSync(scratch, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

/** axe-core in light and dark, at 1280 and 375 pixels (test/support/browser.ts), with less motion (Swagger UI's colour transitions are off, so axe sees the colours of the scheme, not a mix of two), once the reference follows the scheme (Swagger UI's dark theme is a class the page script sets); nothing wider than the window but inside a box that scrolls (a table, an example, an open operation). */
const audit = (p: Page, name: string, within?: string) =>
  auditPage(p, name, {
    within,
    reducedMotion: true,
    settled: (scheme) => expect.poll(() => p.evaluate("document.documentElement.classList.contains('dark-mode')")).toBe(scheme === 'dark'),
    overflowInside: 'any-scroller',
  });

/** The reference's block of one operation. */
const operation = (method: string, path: string) => page.locator(`#reference .opblock-${method}`, { has: page.locator(`[data-path="${path}"]`) });

/** Each operation of the server's OpenAPI document, by the name the reference shows: its summary, else its operationId. */
async function operations(): Promise<Array<{ method: string; path: string; name: string; operationId: string | undefined }>> {
  const document = (await (await fetch(`${t.url}/api/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, { summary?: string; operationId?: string }>> };
  return Object.entries(document.paths).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({ method, path, name: item[method]!.summary ?? item[method]!.operationId!, operationId: item[method]!.operationId })),
  );
}

describe('the public API page', () => {
  it('answers a visitor without a session with a page, the dashboard’s headers and the limits of the table', async () => {
    const response = await fetch(`${t.url}/api`, { headers: { Accept: 'text/html' }, redirect: 'manual' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    for (const [name, value] of Object.entries(PAGE_HEADERS)) expect(response.headers.get(name), name).toBe(value);
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('set-cookie')).toBeNull();
    const body = await response.text();
    expect(body).toContain('<h1>The optmark API</h1>');
    for (const words of ['POST /api/v1/protect', 'POST /api/v1/verify', 'GET /api/v1/usage', 'plus:DataMining', 'guarantees nothing', '25 MB (26,214,400 bytes)', 'JPEG, PNG and WebP', 'from &#39;optmark/client&#39;', 'shown to you once']) {
      expect(body, words).toContain(words);
    }
    // Pro at the default seeds, Lifetime as set above, Free without the API.
    expect(body).toMatch(/<th scope="row">Pro<\/th><td>Included<\/td><td>10,000<\/td><td>50,000<\/td>/);
    expect(body).toMatch(/<th scope="row">Lifetime<\/th><td>Included<\/td><td>20,000<\/td><td>75,000<\/td>/);
    expect(body).toMatch(/<th scope="row">Free<\/th><td>Not included<\/td>/);
    expect(body).toContain('<a class="button" href="/keys">Request access</a>');
    // The examples name the address the visitor reached.
    expect(body).toContain(`${t.url}/api/v1/protect`);
    // Every page links to it, also for people not signed in.
    expect(await (await fetch(`${t.url}/sign-in`)).text()).toContain('<a href="/api">');
  });

  it('serves the reference renderer from this site, gzipped to a browser that takes gzip', async () => {
    const html = await (await fetch(`${t.url}/api`)).text();
    const script = /<script type="module" src="(\/assets\/api-reference\.js\?v=[\w-]+)">/.exec(html)?.[1];
    const stylesheet = /data-stylesheet="(\/assets\/api-reference\.css\?v=[\w-]+)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    expect(stylesheet).toBeDefined();
    for (const path of [script!, stylesheet!]) {
      const plain = await fetch(`${t.url}${path}`, { headers: { 'Accept-Encoding': 'identity' } });
      expect(plain.status).toBe(200);
      expect(plain.headers.get('content-encoding')).toBeNull();
      expect(plain.headers.get('vary')).toBe('Accept-Encoding');
      expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      const bytes = Buffer.from(await plain.arrayBuffer());
      const zipped = await fetch(`${t.url}${path}`, { headers: { 'Accept-Encoding': 'gzip, br;q=0.5' } });
      expect(zipped.headers.get('content-encoding')).toBe('gzip');
      expect(Number(zipped.headers.get('content-length'))).toBeLessThan(bytes.length / 3);
      // (fetch decodes it:) the same bytes.
      expect(Buffer.from(await zipped.arrayBuffer()).equals(bytes)).toBe(true);
      const refused = await fetch(`${t.url}${path}`, { headers: { 'Accept-Encoding': 'gzip;q=0, *' } });
      expect(refused.headers.get('content-encoding')).toBeNull();
    }
    expect(acceptsGzip('deflate, gzip;q=0.8')).toBe(true);
    expect(acceptsGzip('*')).toBe(true);
    expect(acceptsGzip('identity')).toBe(false);
    expect(acceptsGzip(undefined)).toBe(false);
    expect(acceptsGzip('*;q=0')).toBe(false);
    // Swagger UI's licence, and those of what it bundles, are served next to it.
    const licences = await fetch(`${t.url}/assets/api-reference.licenses.txt`);
    expect(licences.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await licences.text()).toMatch(/Swagger UI [\d.]+.*Apache License/s);
  });

  it('renders the reference with every operation of the OpenAPI document, under the strict policy, asking no other site; "Try it out" calls this server', { timeout: 180_000 }, async () => {
    const ops = await operations();
    expect(ops.length).toBeGreaterThanOrEqual(7);
    await page.goto(`${t.url}/api`);
    await page.waitForSelector('#reference .opblock', { timeout: 30_000 });
    expect(await page.getAttribute('#reference', 'aria-busy')).toBe('false');
    const text = (await page.textContent('#reference'))!.replace(/\s+/g, ' ');
    for (const op of ops) {
      expect(text, `${op.method.toUpperCase()} ${op.path}: "${op.name}"`).toContain(op.name);
      // Each operation's block, by its method and path.
      expect(await operation(op.method, op.path).count(), `${op.method} ${op.path}`).toBe(1);
    }
    // The stylesheet of the reference loaded (under style-src 'self'): Swagger UI's rules apply.
    expect(await page.evaluate("getComputedStyle(document.querySelector('#reference .opblock')).borderStyle")).toBe('solid');
    // Nothing was refused by the page's policy (Chromium reports each refusal on the console).
    expect(consoleErrors).toEqual([]);
    await audit(page, 'api');

    // An operation opened by keyboard shows its answers; "Try it out" shows its form.
    const protect = operation('post', '/api/v1/protect');
    await protect.locator('.opblock-summary-control').focus();
    await page.keyboard.press('Enter');
    await protect.locator('.responses-wrapper').waitFor();
    expect(await protect.textContent()).toContain('quota_exceeded');
    await protect.locator('.try-out__btn').focus();
    await page.keyboard.press('Enter');
    await protect.locator('input[type="file"]').waitFor();
    // The page around it was audited above: axe checks the operation (Swagger UI's DOM is large, four runs of axe on all of it take seconds).
    await audit(page, 'api-protect-try', '#reference .opblock-post:has([data-path="/api/v1/protect"])');

    // Authorize with a key, in the dialog, then try the usage: the call goes to this server and its answer is shown.
    const key = await t.key('pro');
    await page.locator('#reference .btn.authorize').first().click();
    await page.locator('#reference .modal-ux input').waitFor();
    await audit(page, 'api-authorize', '#reference .modal-ux');
    await page.locator('#reference .modal-ux input').fill(key);
    await page.getByRole('button', { name: /^Authorize/ }).last().click();
    await page.getByRole('button', { name: 'Close', exact: true }).last().click();
    const usage = operation('get', '/api/v1/usage');
    await usage.locator('.opblock-summary-control').click();
    await usage.locator('.try-out__btn').click();
    await usage.locator('.execute').click();
    await usage.locator('.live-responses-table tr.response .response-col_status').first().waitFor();
    expect((await usage.locator('.live-responses-table tr.response .response-col_status').first().textContent())?.trim()).toBe('200');
    expect(await usage.locator('.live-responses-table').textContent()).toMatch(/"limit": 10000/);
    expect(requested).toContain(`${t.url}/api/v1/usage`);
    await audit(page, 'api-usage-tried', '#reference .opblock-get:has([data-path="/api/v1/usage"])');

    const origin = new URL(t.url).origin;
    expect(requested.filter((url) => !url.startsWith('data:') && !url.startsWith('blob:') && new URL(url).origin !== origin)).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });

  it('"Request access", reached by keyboard, takes a signed-out visitor to sign in and then to /keys', { timeout: 60_000 }, async () => {
    await page.goto(`${t.url}/api`);
    const link = page.getByRole('link', { name: 'Request access' });
    expect(await link.getAttribute('href')).toBe('/keys');
    // By keyboard: Tab until the link has the focus (the skip link, the header, the text's links come first).
    await page.locator('body').focus();
    const focused = () => page.evaluate("document.activeElement?.getAttribute('href') + ' ' + document.activeElement?.textContent");
    for (let i = 0; i < 40 && (await focused()) !== '/keys Request access'; i++) await page.keyboard.press('Tab');
    expect(await focused()).toBe('/keys Request access');
    // /keys is a page for signed-in people: a visitor is taken to sign in, and back there afterwards.
    await Promise.all([page.waitForURL(/\/sign-in\?/), page.keyboard.press('Enter')]);
    const url = new URL(page.url());
    expect(url.pathname).toBe('/sign-in');
    expect(url.searchParams.get('next')).toBe('/keys');
    expect(await page.inputValue('input[name="next"]')).toBe('/keys');
  });
});
