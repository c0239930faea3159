/**
 * Pages in a real browser: Debian's chromium driven by playwright-core, with
 * what each page reported on its console collected (a script or stylesheet
 * the policy blocked shows there), and an audit of a page as it is: axe-core
 * in light and dark mode at 1280 and 375 pixels (no moderate, serious or critical
 * violation, nothing wider than the window), each state photographed into
 * test-output/screenshots (not committed) for a person to look at when
 * OPTMARK_TEST_SCREENSHOTS=1 (`npm run test:screenshots`): a full-page
 * picture is most of an audit's time on a 2-core machine, and no test reads it.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
export const SHOTS = join(import.meta.dirname, '..', '..', 'test-output', 'screenshots');
/** Whether audits photograph the states they check (`npm run test:screenshots`). */
const SCREENSHOTS = process.env.OPTMARK_TEST_SCREENSHOTS === '1';

export async function launchBrowser(scratch: string, options: { acceptDownloads?: boolean; javaScriptEnabled?: boolean } = {}): Promise<BrowserContext> {
  return chromium.launchPersistentContext(mkdtempSync(join(scratch, 'profile-')), {
    executablePath: execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim(),
    headless: true,
    acceptDownloads: options.acceptDownloads ?? true,
    javaScriptEnabled: options.javaScriptEnabled ?? true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** Collect the page's console errors and uncaught exceptions into `into`. */
export function watchConsole(p: Page, into: string[]): Page {
  p.on('console', (message) => {
    if (message.type() === 'error') into.push(`${p.url()}: ${message.text()}`);
  });
  p.on('pageerror', (error) => into.push(`${p.url()}: ${error.message}`));
  return p;
}

/**
 * axe-core on the page as it is, in light and dark, at 1280 and 375 pixels:
 * no moderate, serious or critical violation (minor ones are best practices
 * only); a screenshot of each. (axe runs through
 * the browser's debugging protocol, which the page's policy does not govern.)
 */
export interface AuditOptions {
  /** Emulate "reduce motion" (a page whose colours transition would show axe a mix of two schemes). */
  readonly reducedMotion?: boolean;
  /** Wait, after each scheme is set, until the page has followed it. */
  readonly settled?: (scheme: 'light' | 'dark') => Promise<void>;
  /** What may be wider than the window: inside a `.table-scroll` (the default), or inside any box that scrolls sideways. */
  readonly overflowInside?: 'table-scroll' | 'any-scroller';
  /**
   * The part of the page axe checks (a CSS selector), when the rest was audited unchanged in an
   * earlier state: an operation just opened, a dialog. The width check and the picture cover the whole page.
   */
  readonly within?: string;
}

const OVERFLOW_IN_TABLES =
  "[document.documentElement.scrollWidth - document.documentElement.clientWidth, ...[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5 && !e.closest('.table-scroll')).map((e) => e.tagName + '.' + e.className).slice(0, 5)]";
const OVERFLOW_IN_SCROLLERS = `(() => {
  const width = document.documentElement.clientWidth;
  const scrolled = (e) => { for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) if (['auto', 'scroll'].includes(getComputedStyle(a).overflowX)) return true; return false; };
  return [document.documentElement.scrollWidth - width, ...[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > width + 0.5 && !scrolled(e)).map((e) => e.tagName + '.' + e.className).slice(0, 5)];
})()`;

export async function auditPage(p: Page, name: string, options: AuditOptions = {}): Promise<void> {
  if (SCREENSHOTS) mkdirSync(SHOTS, { recursive: true });
  const context = options.within
    ? `(() => { const e = document.querySelector(${JSON.stringify(options.within)}); if (!e) throw new Error('nothing on the page matches ' + ${JSON.stringify(options.within)}); return e; })()`
    : 'document';
  for (const scheme of ['light', 'dark'] as const) {
    for (const width of [1280, 375]) {
      await p.emulateMedia({ colorScheme: scheme, ...(options.reducedMotion ? { reducedMotion: 'reduce' as const } : {}) });
      await p.setViewportSize({ width, height: 900 });
      await options.settled?.(scheme);
      // axe once per document (it stays loaded across the four runs); only violations are collected in full.
      if (await p.evaluate("typeof axe === 'undefined'")) await p.evaluate(AXE);
      const [passed, ...violations] = (await p.evaluate(
        `axe.run(${context}, { resultTypes: ['violations'] }).then((r) => [r.passes.length, ...r.violations.filter((v) => v.impact !== 'minor').map((v) => v.id + ': ' + v.nodes.map((n) => n.target.join(' ')).join(', '))])`,
      )) as [number, ...string[]];
      // axe ran its rules (contrast, names, labels, landmarks...) on this page.
      expect(passed, `${name}: rules axe passed`).toBeGreaterThan(options.within ? 5 : 10);
      // JPEG: a long page's full-length PNG took Chromium about twice as long to encode.
      if (SCREENSHOTS) await p.screenshot({ path: join(SHOTS, `${name}-${scheme}-${width}.jpg`), fullPage: true, type: 'jpeg', quality: 80 });
      expect(violations, `${name}, ${scheme}, ${width} px`).toEqual([]);
      // Nothing wider than the window: at 375 px every control stays reachable.
      const overflow = (await p.evaluate(options.overflowInside === 'any-scroller' ? OVERFLOW_IN_SCROLLERS : OVERFLOW_IN_TABLES)) as [number, ...string[]];
      expect(overflow[0], `${name}, ${scheme}, ${width} px: horizontal overflow (${overflow.slice(1).join(', ')})`).toBeLessThanOrEqual(0);
    }
  }
  await p.emulateMedia({ colorScheme: 'light' });
  await p.setViewportSize({ width: 1280, height: 900 });
}
