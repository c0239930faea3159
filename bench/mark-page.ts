/**
 * A batch marked through the dashboard's Mark page in a browser, as a
 * person does it: the files chosen, every row ready, Mark pressed; the time
 * from the press until every row is done. Any row that failed fails the run.
 */
import type { Page } from 'playwright-core';

export async function markOnPage(page: Page, baseUrl: string, photos: readonly string[]): Promise<number> {
  await page.goto(`${baseUrl}/mark`);
  await page.setInputFiles('#files', [...photos]);
  await page.locator('#rows li[data-state="ready"]').nth(photos.length - 1).waitFor();
  const started = performance.now();
  await page.getByRole('button', { name: 'Mark', exact: true }).click();
  await page.waitForFunction(
    (n) => (globalThis as unknown as { document: { querySelectorAll(s: string): { length: number } } }).document.querySelectorAll('#rows li[data-state="done"], #rows li[data-state="failed"]').length === n,
    photos.length,
    { timeout: 600_000, polling: 50 },
  );
  const ms = performance.now() - started;
  const failed = await page.locator('#rows li[data-state="failed"]').count();
  if (failed > 0) throw new Error(`${failed} files failed on the page`);
  return ms;
}
