/**
 * Screenshots taken by a real browser (Debian's Chromium, driven by
 * playwright-core), the research note's optional "screenshot" attack: the
 * marked picture shown in an <img> and captured, as someone re-sharing a
 * picture from a web page would. Chromium decodes the PNG, applies its
 * colour management and, at a device pixel ratio of 2 or when the picture
 * is fitted into a window, resamples it with its own filter.
 *
 * Reported, not required. When Chromium is missing and cannot be installed,
 * the benchmark runs without these rows and says so.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import sharp from 'sharp';
import type { Attack } from './fingerprint-attacks.js';
import type { RgbImage } from './fingerprint-images.js';

const CHROMIUM = '/usr/bin/chromium';
/** A name the page loads the picture from; the route handler answers it, nothing goes to the network. */
const PICTURE_URL = 'http://picture.test/marked.png';
/** The window of the "fitted" screenshot: a common laptop screen's page area. */
const WINDOW = { width: 1280, height: 720 };

function ensureChromium(log: (line: string) => void): boolean {
  if (existsSync(CHROMIUM)) return true;
  log('chromium missing; installing it for the screenshot rows ...');
  try {
    execFileSync('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  } catch {
    return false;
  }
  return existsSync(CHROMIUM);
}

export interface BrowserAttacks {
  readonly attacks: readonly Attack[];
  close(): Promise<void>;
}

export async function browserAttacks(log: (line: string) => void): Promise<BrowserAttacks | undefined> {
  if (!ensureChromium(log)) return undefined;
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Without the networking switches Chromium keeps trying hosts a closed network refuses.
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const shot = (id: string, description: string, scale: number, fit: boolean): Attack => ({
    id,
    description,
    target: undefined,
    apply: (image) => screenshot(browser, image, scale, fit),
  });
  return {
    attacks: [
      shot('browser1', 'Chromium screenshot, natural size, DPR 1', 1, false),
      shot('browser2', 'Chromium screenshot, natural size, DPR 2', 2, false),
      shot('browserfit', `Chromium screenshot, fitted to ${WINDOW.width} × ${WINDOW.height}, DPR 1`, 1, true),
    ],
    close: () => browser.close(),
  };
}

async function screenshot(browser: Browser, image: RgbImage, deviceScaleFactor: number, fit: boolean): Promise<Buffer> {
  const png = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } }).png({ compressionLevel: 1 }).toBuffer();
  const viewport = fit ? WINDOW : { width: image.width, height: image.height };
  const context = await browser.newContext({ viewport, deviceScaleFactor });
  try {
    const page = await context.newPage();
    await page.route(PICTURE_URL, (route) => route.fulfill({ status: 200, contentType: 'image/png', body: png }));
    const style = fit ? 'max-width:100vw;max-height:100vh' : `width:${image.width}px;height:${image.height}px`;
    await page.setContent(`<!doctype html><body style="margin:0;background:#000"><img src="${PICTURE_URL}" style="display:block;${style}"></body>`);
    // (A string, evaluated in the page: this project compiles without the DOM's types.)
    await page.evaluate("document.querySelector('img').decode()");
    return await page.locator('img').screenshot({ type: 'png' });
  } finally {
    await context.close();
  }
}
