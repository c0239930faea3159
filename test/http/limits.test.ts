/**
 * Limits live in one table per plan, with per-account overrides: what the
 * server enforces, what GET /api/v1/usage and the CLI report, and how the
 * environment's settings fill the table once (when the database is created)
 * and are then only compared with it.
 */
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { generatedImages } from '../support/generated.js';
import { BACKENDS, freshPgDatabase, postImage, startTestServer, type TestServer } from '../support/server.js';

const JPEG = (await generatedImages()).find((g) => g.name === 'baseline.jpg')!.bytes;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const usageOf = async (url: string, key: string) =>
  (await (await fetch(`${url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } })).json()) as Record<'protect' | 'verify', { used: number; limit: number; remaining: number }>;

const protectStatus = async (url: string, key: string) => (await postImage(url, key, JPEG)).status;

describe.each(BACKENDS)('the limits table on %s', (backend) => {
  it("an account's own limit replaces its plan's at once, and 'plan' (null) gives the plan's back", async () => {
    server = await startTestServer({ backend });
    const key = await server.key('pro', 'studio');
    expect((await usageOf(server.url, key)).protect.limit).toBe(10_000);

    const changed = await server.server.admin.setLimits('studio', { protectPerMonth: 2, verifyPerMonth: 7 });
    expect(changed.overrides).toEqual({ protectPerMonth: 2, verifyPerMonth: 7, scansPerUserPerDay: null, vaultBytes: null });
    expect(changed.limits).toMatchObject({ protectPerMonth: 2, verifyPerMonth: 7, scansPerUserPerDay: 10, vaultBytes: 10_737_418_240 });
    expect(await usageOf(server.url, key)).toMatchObject({ protect: { used: 0, limit: 2, remaining: 2 }, verify: { limit: 7 } });
    expect([await protectStatus(server.url, key), await protectStatus(server.url, key), await protectStatus(server.url, key)]).toEqual([200, 200, 429]);

    // Another Pro account keeps the plan's limit.
    const other = await server.key('pro', 'other');
    expect((await usageOf(server.url, other)).protect.limit).toBe(10_000);

    await server.server.admin.setLimits('studio', { protectPerMonth: null });
    expect((await usageOf(server.url, key)).protect).toEqual({ used: 2, limit: 10_000, remaining: 9_998 });
    expect(await protectStatus(server.url, key)).toBe(200);
  });

  it("a plan's row applies to every account on it; an account's override still wins", async () => {
    server = await startTestServer({ backend });
    const a = await server.key('lifetime', 'a');
    const b = await server.key('lifetime', 'b');
    await server.server.admin.setLimits('b', { protectPerMonth: 5 });
    // A call first, so that a server that keeps limits in memory has them.
    expect(await protectStatus(server.url, a)).toBe(200);
    const plans = await server.server.admin.setPlanLimits('lifetime', { protectPerMonth: 2 });
    expect(plans.lifetime.protectPerMonth).toBe(2);
    expect(plans.pro.protectPerMonth).toBe(10_000);
    expect([await protectStatus(server.url, a), await protectStatus(server.url, a)]).toEqual([200, 429]);
    expect((await usageOf(server.url, b)).protect.limit).toBe(5);
  });

  it('a new plan takes effect on the next call (pro to free: 403; back: 200), and a rename too', async () => {
    server = await startTestServer({ backend });
    const key = await server.key('pro', 'shop');
    expect(await protectStatus(server.url, key)).toBe(200);
    expect((await server.server.admin.setPlan('shop', 'free')).plan).toBe('free');
    const refused = await postImage(server.url, key, JPEG);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 'plan_not_allowed' });
    await server.server.admin.setPlan('shop', 'lifetime');
    expect(await protectStatus(server.url, key)).toBe(200);

    const renamed = await server.server.admin.renameAccount('shop', 'shop-2');
    expect(renamed.name).toBe('shop-2');
    expect((await server.server.admin.showAccount('shop-2')).usage.protect.used).toBe(2);
    await expect(server.server.admin.showAccount('shop')).rejects.toMatchObject({ code: 'account_not_found' });
    await server.server.admin.createAccount('taken', 'pro');
    await expect(server.server.admin.renameAccount('shop-2', 'taken')).rejects.toMatchObject({ code: 'account_exists' });
  });

  it('refuses values that are not limits, naming what is allowed', async () => {
    server = await startTestServer({ backend });
    await server.server.admin.createAccount('x', 'pro');
    await expect(server.server.admin.setLimits('x', { protectPerMonth: -1 })).rejects.toMatchObject({ code: 'invalid_option' });
    await expect(server.server.admin.setLimits('x', { protectPerMonth: 1.5 })).rejects.toMatchObject({ code: 'invalid_option' });
    await expect(server.server.admin.setLimits('x', { reportRetentionDays: 3 } as never)).rejects.toMatchObject({ code: 'invalid_option' });
    await expect(server.server.admin.setPlanLimits('gold', { protectPerMonth: 1 })).rejects.toMatchObject({ code: 'invalid_option' });
    await expect(server.server.admin.setPlanLimits('pro', { reportRetentionDays: 0 })).rejects.toMatchObject({ code: 'invalid_option' });
    await expect(server.server.admin.setPlan('x', 'gold')).rejects.toMatchObject({ code: 'invalid_option' });
    expect((await server.server.admin.showAccount('x')).limits.protectPerMonth).toBe(10_000);
  });
});

describe('the settings fill the table once', () => {
  it('a new database takes OPTMARK_PROTECT_LIMIT and OPTMARK_VERIFY_LIMIT for the paid plans; a later start with others keeps the table and says so', async () => {
    const db = await freshPgDatabase();
    try {
      server = await startTestServer({ backend: 'postgres', databaseUrl: db.url, env: { OPTMARK_PROTECT_LIMIT: '3', OPTMARK_VERIFY_LIMIT: '4' } });
      const plans = await server.server.admin.planLimits();
      expect(plans.pro).toMatchObject({ protectPerMonth: 3, verifyPerMonth: 4, scansPerUserPerDay: 10, vaultBytes: 10_737_418_240, reportRetentionDays: 90 });
      expect(plans.lifetime).toMatchObject({ protectPerMonth: 3, verifyPerMonth: 4 });
      expect(plans.free).toMatchObject({ protectPerMonth: 0, verifyPerMonth: 0, scansPerUserPerDay: 0, vaultBytes: 0 });
      await server.close();

      const log = new PassThrough();
      let logged = '';
      log.on('data', (chunk: Buffer) => (logged += chunk.toString()));
      server = await startTestServer({ backend: 'postgres', databaseUrl: db.url, logTo: log, env: { OPTMARK_PROTECT_LIMIT: '500', OPTMARK_VERIFY_LIMIT: '4' } });
      expect((await server.server.admin.planLimits()).pro.protectPerMonth).toBe(3);
      const warnings = logged
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { level: number; msg: string })
        .filter((line) => line.level === 40);
      expect(warnings.map((w) => w.msg)).toEqual([expect.stringMatching(/^OPTMARK_PROTECT_LIMIT differs from the limits table.*optmark plans set pro --protect 500/)]);
    } finally {
      await server?.close();
      server = undefined;
      await db.drop();
    }
  });
});

describe('a PostgreSQL database that goes away', () => {
  it('is a 503 service_unavailable with Retry-After, not a 500', async () => {
    const db = await freshPgDatabase();
    const own = await startTestServer({ backend: 'postgres', databaseUrl: db.url });
    try {
      const key = await own.key('pro', 'vanishing');
      expect((await fetch(`${own.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } })).status).toBe(200);
      await db.drop();
      const response = await fetch(`${own.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } });
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).not.toBeNull();
      expect(await response.json()).toMatchObject({ code: 'service_unavailable' });
    } finally {
      await own.close().catch(() => {});
      await db.drop();
    }
  });
});
