/**
 * One scan's loop (app/scans/run.ts) on a tree held in memory: a check that
 * fails while the loop is busy elsewhere (reading the files after it) ends
 * the scan with that failure, its unit given back, and is never an
 * unhandled rejection (which stops a Node process); and a save that fails
 * leaves no unit charged for a line not saved, nor any open.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { runScan, type Unit } from '../../src/app/scans/run.js';
import type { ScanSource, SourceEntry } from '../../src/app/scans/ports.js';
import { inspect } from '../../src/app/verify-image.js';
import { generatedImages } from '../support/generated.js';

const PNG = (await generatedImages()).find((g) => g.name === 'rgb8.png')!.bytes;
const TEXT = Buffer.from('just some text\n');

/** An image, then `others` text files, each read in `readMs`. */
function tree(others: number, readMs: number): ScanSource {
  const entries: SourceEntry[] = [{ path: 'a.png', kind: 'file', size: PNG.length, handle: 'a' }];
  for (let i = 0; i < others; i++) entries.push({ path: `notes/${i}.txt`, kind: 'file', size: TEXT.length, handle: `t${i}` });
  return {
    commit: null,
    fetchMs: 0,
    entries,
    async read(entry) {
      if (entry.handle === 'a') return PNG;
      await new Promise((resolve) => setTimeout(resolve, readMs));
      return TEXT;
    },
    async close() {},
  };
}

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeEach(() => {
  unhandled.length = 0;
  process.on('unhandledRejection', onUnhandled);
});
afterEach(() => {
  process.off('unhandledRejection', onUnhandled);
});

it('a scan cancelled while its loop reads other files ends with the cancellation, the image\'s unit given back, nothing unhandled', async () => {
  const controller = new AbortController();
  const units: string[] = [];
  const unit: Unit = {
    keep: async () => void units.push('kept'),
    giveBack: async () => void units.push('given back'),
  };
  const scanning = runScan({
    source: tree(50, 20),
    // A check that runs until the scan is cancelled.
    check: (_bytes, signal) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true })),
    reserve: async () => unit,
    concurrency: 4,
    save: async () => {},
    signal: controller.signal,
  });
  const cancelled = new Error('cancelled');
  setTimeout(() => controller.abort(cancelled), 100);
  await expect(scanning).rejects.toBe(cancelled);
  // A turn of the event loop for a rejection nobody handled to be reported.
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(unhandled).toEqual([]);
  expect(units).toEqual(['given back']);
});

it('a save that fails while the loop reads other files ends the scan with that failure, nothing unhandled', async () => {
  const failure = new Error('database unavailable');
  const scanning = runScan({
    source: tree(20, 20),
    check: async () => {
      throw Object.assign(new Error('broken'), {});
    },
    concurrency: 4,
    // Every report line is saved at once, and the save fails.
    batch: 1,
    save: async () => {
      throw failure;
    },
    signal: new AbortController().signal,
  });
  await expect(scanning).rejects.toBe(failure);
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(unhandled).toEqual([]);
});

it('a save that fails leaves no unit charged and none open: the batch not saved, and every later one, give theirs back', async () => {
  const failure = new Error('database unavailable');
  const units = { reserved: 0, kept: 0, givenBack: 0 };
  const many: ScanSource = {
    commit: null,
    fetchMs: 0,
    entries: Array.from({ length: 6 }, (_, i) => ({ path: `${i}.png`, kind: 'file' as const, size: PNG.length, handle: String(i) })),
    read: async () => PNG,
    close: async () => {},
  };
  let saves = 0;
  const scanning = runScan({
    source: many,
    check: (bytes) => Promise.resolve(inspect(bytes)),
    reserve: async () => {
      units.reserved += 1;
      return { keep: async () => void (units.kept += 1), giveBack: async () => void (units.givenBack += 1) };
    },
    concurrency: 1,
    batch: 2,
    // The first batch is saved; the second fails; the rest are never saved.
    save: async () => {
      saves += 1;
      if (saves >= 2) throw failure;
    },
    signal: new AbortController().signal,
  });
  await expect(scanning).rejects.toBe(failure);
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(unhandled).toEqual([]);
  expect(units.reserved).toBe(units.kept + units.givenBack);
  expect(units.kept).toBe(2);
});
