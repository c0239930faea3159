/**
 * Dashboard sessions without HTTP: a session stands for a key that may call
 * the API, ends at its time, and the number held is bounded (the oldest goes).
 */
import { describe, expect, it } from 'vitest';
import { createDashboardSessions } from '../../src/app/dashboard-sessions.js';
import type { ApiAccess } from '../../src/app/api-access.js';
import { apiKeyDigest, generateApiKey } from '../../src/core/keys/api-key.js';
import { randomBytes } from 'node:crypto';
import { InvalidApiKeyError } from '../../src/errors.js';

const clock = { time: new Date('2026-01-01T00:00:00Z'), now: () => clock.time };
const plans = new Map<string, 'free' | 'pro'>();
const access = {
  async authenticate(credential: { keyDigest: Buffer }) {
    const plan = plans.get(credential.keyDigest.toString('hex'));
    if (!plan) throw new InvalidApiKeyError();
    return { accountId: 'a', accountName: 'acct', plan, keyId: 'k' };
  },
} as unknown as ApiAccess;

function keyWith(plan: 'free' | 'pro'): string {
  const key = generateApiKey(randomBytes);
  plans.set(apiKeyDigest(key).toString('hex'), plan);
  return key;
}

describe('dashboard sessions', () => {
  it('open for a Pro key only, and are found by their token, not by anything else', async () => {
    const sessions = createDashboardSessions({ access, clock });
    const signed = await sessions.signIn(keyWith('pro'));
    expect(sessions.find(signed.token)).toBe(signed.session);
    expect(sessions.find(signed.token.slice(0, -1) + (signed.token.endsWith('A') ? 'B' : 'A'))).toBeUndefined();
    expect(sessions.find(undefined)).toBeUndefined();
    await expect(sessions.signIn(keyWith('free'))).rejects.toMatchObject({ code: 'plan_not_allowed' });
    await expect(sessions.signIn('omk_nonsense')).rejects.toMatchObject({ code: 'invalid_api_key' });
    await expect(sessions.signIn(generateApiKey(randomBytes))).rejects.toMatchObject({ code: 'invalid_api_key' });
  });

  it('check form tokens exactly', async () => {
    const sessions = createDashboardSessions({ access, clock });
    const { session } = await sessions.signIn(keyWith('pro'));
    expect(sessions.formTokenMatches(session, session.formToken)).toBe(true);
    expect(sessions.formTokenMatches(session, session.formToken.slice(1))).toBe(false);
    expect(sessions.formTokenMatches(session, `${session.formToken}x`)).toBe(false);
    expect(sessions.formTokenMatches(session, undefined)).toBe(false);
  });

  it('hold at most maxSessions, dropping the expired first and then the oldest', async () => {
    const sessions = createDashboardSessions({ access, clock, maxSessions: 3 });
    const key = keyWith('pro');
    const first = await sessions.signIn(key);
    clock.time = new Date(clock.time.getTime() + 11 * 3_600_000);
    const second = await sessions.signIn(key);
    const third = await sessions.signIn(key);
    clock.time = new Date(clock.time.getTime() + 2 * 3_600_000); // the first has expired
    const fourth = await sessions.signIn(key);
    expect(sessions.size).toBe(3);
    expect(sessions.find(first.token)).toBeUndefined();
    const fifth = await sessions.signIn(key);
    expect(sessions.size).toBe(3);
    expect(sessions.find(second.token)).toBeUndefined();
    for (const s of [third, fourth, fifth]) expect(sessions.find(s.token)).toBeDefined();
    sessions.signOut(fifth.token);
    expect(sessions.find(fifth.token)).toBeUndefined();
  });
});
