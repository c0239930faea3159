/**
 * A scan's jobs (app/scans/scans.ts) on the real scan store: a second job of
 * a scan this server runs already (recover() may queue one again) does not
 * run it a second time, which checked and charged its images twice; and a
 * job a stopping server takes from the queue is queued again, where it was
 * marked done without the scan having run, leaving it queued and counted
 * until some server started. An account runs one fix at a time (each
 * fetches the whole repository again; twelve at once were all let through).
 * The queue, the fetch and the units are the test's own, to put the steps
 * in that order.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SqlScanStore } from '../../src/adapters/db/scan-store.js';
import { systemClock } from '../../src/app/ports.js';
import type { ScanSource } from '../../src/app/scans/ports.js';
import { createScans } from '../../src/app/scans/scans.js';
import { inspect } from '../../src/app/verify-image.js';
import { generatedImages } from '../support/generated.js';
import { startTestServer, type TestServer } from '../support/server.js';

const PNG = (await generatedImages()).find((g) => g.name === 'rgb8.png')!.bytes;

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t?.close());

async function setUp(account: string, mark: Parameters<typeof createScans>[0]['mark'] = async () => {
  throw new Error('no fix in this test');
}) {
  await t.server.admin.createAccount(account, 'pro');
  const { user } = await t.server.people.createUser({ account, email: `owner@${account}.example`, role: 'owner', password: 'correct horse battery staple', actor: 'cli' });
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const counts = { reads: 0, kept: 0, givenBack: 0 };
  const source: ScanSource = {
    commit: 'c'.repeat(40),
    fetchMs: 0,
    entries: [{ path: 'a.png', kind: 'file', size: PNG.length, handle: 'a' }],
    async read() {
      counts.reads += 1;
      await released;
      return PNG;
    },
    close: async () => {},
  };
  const sent: Array<Record<string, unknown>> = [];
  let handler: ((data: Record<string, unknown>) => Promise<void>) | undefined;
  const scans = createScans({
    store: new SqlScanStore(t.server.database.db),
    accounts: {
      accountLimits: async () => ({ protectPerMonth: 100, verifyPerMonth: 100, scansPerUserPerDay: 10, vaultBytes: 0, reportRetentionDays: 30 }),
      reserveForAccount: async () => ({ kind: 'reserved', used: 1, limit: 100 }),
      commit: async () => void (counts.kept += 1),
      refund: async () => void (counts.givenBack += 1),
      serviceSettings: async () => ({ scanCeilingPerDay: 250, scansPaused: false }),
    },
    jobs: {
      send: async (_name, data) => void sent.push(data),
      work: async (_name, _concurrency, work) => void (handler = work),
    },
    fetch: async () => source,
    sources: { resolve: async () => [], realpath: async (path) => path },
    check: async (bytes) => inspect(bytes),
    limits: { sources: ['file:///repos/'], maxBytes: 1 << 20, maxFiles: 100, maxSeconds: 60, concurrency: 2, checkConcurrency: 1 },
    clock: systemClock,
    instanceId: `test-${account}`,
    liveInstances: async () => [],
    soleServer: false,
    onError: () => {},
    audit: async () => {},
    mark,
  });
  await scans.start();
  const scan = await scans.submit({ accountId: user.accountId, userId: user.id, plan: 'pro' }, { repository: 'file:///repos/site' });
  return { scans, scan, user, sent, counts, release, run: (scanId: string) => handler!({ scanId }) };
}

it('a second job of a scan this server runs already does not run it again: its image is checked and charged once', async () => {
  const { scans, scan, counts, release, run } = await setUp('scan-twice');
  const first = run(scan.id);
  while (counts.reads === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  const second = run(scan.id);
  await new Promise((resolve) => setTimeout(resolve, 200));
  release();
  await Promise.all([first, second]);
  expect(counts).toEqual({ reads: 1, kept: 1, givenBack: 0 });
  expect((await scans.get(scan.accountId, scan.id)).state).toBe('done');
  await scans.stop();
});

it('a job a stopping server takes from the queue is queued again, the scan left queued for another server', async () => {
  const { scans, scan, sent, counts, run } = await setUp('scan-stopping');
  expect(sent).toEqual([{ scanId: scan.id }]);
  await scans.stop();
  await run(scan.id);
  expect(sent).toEqual([{ scanId: scan.id }, { scanId: scan.id }]);
  expect(counts.reads).toBe(0);
  expect((await scans.get(scan.accountId, scan.id)).state).toBe('queued');
});

it('an account runs one fix at a time on a server: a second while the first runs is 503 server_busy, and one after it goes', async () => {
  let unblock!: () => void;
  const blocked = new Promise<void>((resolve) => (unblock = resolve));
  let marks = 0;
  const { scans, scan, user, release, run } = await setUp('scan-fixes', async (bytes) => {
    marks += 1;
    await blocked;
    return { bytes, sha256: 'f'.repeat(64), value: 'DMI-PROHIBITED-AIMLTRAINING', tagKid: undefined };
  });
  release();
  await run(scan.id);
  const who = { accountId: user.accountId, userId: user.id, plan: 'pro' as const };
  const first = scans.fix(who, { scanId: scan.id, confirm: 1 });
  while (marks === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  await expect(scans.fix(who, { scanId: scan.id, confirm: 1 })).rejects.toMatchObject({ code: 'server_busy', message: expect.stringContaining('A fix of this account is running already') });
  unblock();
  expect((await first).files).toHaveLength(1);
  expect((await scans.fix(who, { scanId: scan.id, confirm: 1 })).files).toHaveLength(1);
  await scans.stop();
});
