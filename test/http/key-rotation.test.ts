/**
 * Key rotation (hardening plan, AUTH-3, adapted to our contract): the plan
 * allows 2 active keys per account and answers a third with
 * `key_limit_reached`; docs/errors.md allows MAX_ACTIVE_KEYS (5) and answers
 * a sixth with `too_many_keys` (409), through administration (CLI, admin
 * socket), not HTTP. Keys overlap: all active keys work at the same time,
 * and a revoked or expired key stops at once and frees its place.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_ACTIVE_KEYS } from '../../src/app/admin.js';
import { AdminError } from '../../src/errors.js';
import { STATUS } from '../../src/http/error-handler.js';
import { generatedImages } from '../support/generated.js';
import { BACKENDS, postImage, startTestServer, type TestServer } from '../support/server.js';

const JPEG = (await generatedImages()).find((g) => g.name === 'baseline.jpg')!.bytes;

let t: TestServer | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const usageStatus = async (key: string) => (await fetch(`${t!.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } })).status;

/** The refusal administration gives for a sixth active key. */
async function expectTooManyKeys(issuing: Promise<unknown>): Promise<void> {
  const error = await issuing.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AdminError);
  expect(error).toMatchObject({ code: 'too_many_keys', message: expect.stringMatching(/5 active keys/) });
  expect(STATUS[(error as AdminError).code]).toBe(409);
}

describe.each(BACKENDS)('API keys on %s', (backend) => {
  it(`an account holds ${MAX_ACTIVE_KEYS} active keys that all work at once; a sixth is too_many_keys until one is revoked`, async () => {
    expect(MAX_ACTIVE_KEYS).toBe(5);
    t = await startTestServer({ backend });
    const name = `rotation-${backend}`;
    await t.server.admin.createAccount(name, 'pro');
    const issued = [];
    for (let i = 0; i < MAX_ACTIVE_KEYS; i++) issued.push(await t.server.admin.issueKey(name));

    // All five at the same moment, each a real (counted) call.
    const statuses = await Promise.all(issued.map(async ({ key }) => (await postImage(t!.url, key, JPEG)).status));
    expect(statuses).toEqual([200, 200, 200, 200, 200]);

    await expectTooManyKeys(t.server.admin.issueKey(name));
    // The refused creation left nothing behind.
    const listed = await t.server.admin.listKeys(name);
    expect(listed.map((k) => [k.id, k.active])).toEqual(issued.map((k) => [k.id, true]));

    await t.server.admin.revokeKey(issued[0]!.id);
    // Revoked: refused at once (the embedded store had it cached from the call above); the others go on.
    expect(await usageStatus(issued[0]!.key)).toBe(401);
    expect((await postImage(t.url, issued[0]!.key, JPEG)).status).toBe(401);
    for (const { key } of issued.slice(1)) expect(await usageStatus(key)).toBe(200);

    const replacement = await t.server.admin.issueKey(name);
    expect((await postImage(t.url, replacement.key, JPEG)).status).toBe(200);
    // Five active again: the limit holds after a rotation too.
    await expectTooManyKeys(t.server.admin.issueKey(name));
    expect((await t.server.admin.listKeys(name)).filter((k) => k.active)).toHaveLength(MAX_ACTIVE_KEYS);
    // Keys share the account's allowance: 5 calls, then the replacement's one; the 401s counted nothing.
    expect((await t.server.admin.usage(name)).protect.used).toBe(6);
  });

  // test/http/malformed.test.ts row 2 checks that an expired key (two days
  // past, embedded store) gets the same 401 body as an unknown one. This
  // pins the moment instead: usable one millisecond before expires_at,
  // refused at expires_at, on both stores, right after a call (the embedded
  // store keeps used keys in memory), and the expired key frees its place.
  it('a key stops working the moment its expiry passes, and no longer counts toward the five', async () => {
    const clock = { time: new Date('2026-06-10T12:00:00.000Z'), now: () => clock.time };
    t = await startTestServer({ backend, clock });
    const name = `expiry-${backend}`;
    await t.server.admin.createAccount(name, 'pro');
    const expiring = await t.server.admin.issueKey(name, { expiresInDays: 1 });
    expect(expiring.expiresAt).toEqual(new Date('2026-06-11T12:00:00.000Z'));
    for (let i = 1; i < MAX_ACTIVE_KEYS; i++) await t.server.admin.issueKey(name);
    await expectTooManyKeys(t.server.admin.issueKey(name));

    clock.time = new Date(expiring.expiresAt!.getTime() - 1);
    expect((await postImage(t.url, expiring.key, JPEG)).status).toBe(200);
    expect(await usageStatus(expiring.key)).toBe(200);

    clock.time = expiring.expiresAt!;
    const refused = await postImage(t.url, expiring.key, JPEG);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ code: 'invalid_api_key' });
    expect(await usageStatus(expiring.key)).toBe(401);
    expect((await t.server.admin.usage(name)).protect.used).toBe(1);

    // Expired, it is no longer active: a new key can be made in its place.
    expect((await t.server.admin.listKeys(name)).find((k) => k.id === expiring.id)?.active).toBe(false);
    const next = await t.server.admin.issueKey(name);
    expect((await postImage(t.url, next.key, JPEG)).status).toBe(200);
    await expectTooManyKeys(t.server.admin.issueKey(name));
  });
});
