/**
 * A scan's fix (app/scans/fix.ts) stopped at the scans' time limit: whichever
 * step was running (the fetch, a file's marking), the answer is the fix's
 * own error (502 repository_unavailable, in words) rather than the timer's
 * bare reason (which the HTTP layer could only answer as a 500), and every
 * unit reserved for it is given back.
 */
import { describe, expect, it } from 'vitest';
import { fixScan, type FixDeps, type Marked } from '../../src/app/scans/fix.js';
import type { Scan, ScanItem, ScanSource, ScanStore } from '../../src/app/scans/ports.js';
import { sha256Hex } from '../../src/core/bytes/digest.js';
import { OptmarkError } from '../../src/errors.js';

const BYTES = Buffer.from('not looked at: the marking is the test\'s own');
const SCAN = { id: 'scn_fix', accountId: 'acc_1', repository: 'file:///repos/site', ref: null, commit: 'c'.repeat(40), state: 'done' } as Scan;
const ITEMS = [{ path: 'a.png', status: 'notOptedOut', sha256: sha256Hex(BYTES) }, { path: 'b.png', status: 'notOptedOut', sha256: sha256Hex(BYTES) }] as ScanItem[];

const waitForAbort = (signal: AbortSignal) => new Promise<never>((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));

function deps(steps: { fetch?: (signal: AbortSignal) => Promise<void>; mark?: (signal: AbortSignal) => Promise<Marked> }) {
  const units = { reserved: 0, refunded: 0, committed: 0 };
  const source: ScanSource = {
    commit: SCAN.commit,
    fetchMs: 0,
    entries: ITEMS.map((item) => ({ path: item.path, kind: 'file' as const, size: BYTES.length, handle: item.path })),
    read: async () => BYTES,
    close: async () => {},
  };
  const fix: FixDeps = {
    store: { find: async () => SCAN, items: async () => ITEMS } as unknown as ScanStore,
    accounts: {
      reserveForAccount: async () => (units.reserved++, { kind: 'reserved', used: units.reserved, limit: 100 }),
      commit: async () => void units.committed++,
      refund: async () => void units.refunded++,
    },
    fetch: async (_request, limits) => {
      await steps.fetch?.(limits.signal);
      return source;
    },
    sources: { resolve: async () => [], realpath: async (path) => path },
    allowedSources: ['file:///repos/'],
    maxBytes: 1 << 20,
    maxFiles: 100,
    maxSeconds: 0.1,
    mark: async (_bytes, _path, signal) => (steps.mark ? steps.mark(signal) : { bytes: BYTES, sha256: sha256Hex(BYTES), value: 'DMI-PROHIBITED-AIMLTRAINING', tagKid: undefined }),
    clock: { now: () => new Date() },
  };
  return { fix, units };
}

const who = { accountId: 'acc_1', userId: 'usr_1', plan: 'pro' as const };

describe('a fix past its time limit', () => {
  it('while a file is marked: 502 repository_unavailable in words, every unit given back', async () => {
    const { fix, units } = deps({ mark: waitForAbort });
    const error = await fixScan(fix, who, { scanId: SCAN.id, confirm: 2 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OptmarkError);
    expect(error).toMatchObject({ code: 'repository_unavailable', message: expect.stringMatching(/^The fix took longer than its limit of 0\.1 s and was stopped: no call of the month was counted$/) });
    expect(units).toEqual({ reserved: 2, refunded: 2, committed: 0 });
  });

  it('while the repository is fetched, by a step that checks the signal only when it resumes', async () => {
    const { fix, units } = deps({
      fetch: async (signal) => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        signal.throwIfAborted();
      },
    });
    const error = await fixScan(fix, who, { scanId: SCAN.id, confirm: 2, push: true }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'repository_unavailable', message: expect.stringContaining('took longer than its limit of 0.1 s') });
    expect(units).toEqual({ reserved: 2, refunded: 2, committed: 0 });
  });

  it('a fix within its limit keeps its units', async () => {
    const { fix, units } = deps({});
    const outcome = await fixScan(fix, who, { scanId: SCAN.id, confirm: 2 });
    expect(outcome.files.map((f) => f.path)).toEqual(['a.png', 'b.png']);
    expect(units).toEqual({ reserved: 2, refunded: 0, committed: 2 });
  });
});
