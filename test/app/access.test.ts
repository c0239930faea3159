/**
 * The rules of API access that a browser flow does not reach (on the
 * embedded database, through the server's own use cases): a grant lapses 14
 * days after its approval; a key being rolled out does not count toward the
 * account's 5 active keys, but a reveal past 5 is refused; another account's
 * request or key reads as unknown; only operators decide.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/app/access/access.js';
import { startTestServer, type TestServer } from '../support/server.js';

const DAY_MS = 86_400_000;
let offsetMs = 0;
const clock = { now: () => new Date(Date.now() + offsetMs) };
let t: TestServer;
const people = {} as Record<'alice' | 'owner' | 'other', Extract<Actor, { kind: 'person' }>>;

const ask = (who: Extract<Actor, { kind: 'person' }>, name: string) => t.server.apiKeys.request(who, { name, purpose: 'Marks uploads', monthlyVolume: 10, scopes: ['protect', 'verify'], contact: 'x@example.org' });

beforeAll(async () => {
  t = await startTestServer({ clock });
  await t.server.admin.createAccount('studio', 'pro');
  await t.server.admin.createAccount('elsewhere', 'pro');
  const made: Array<[keyof typeof people, string, string, 'owner' | 'member']> = [
    ['alice', 'studio', 'alice@studio.example', 'member'],
    ['owner', 'studio', 'owner@studio.example', 'owner'],
    ['other', 'elsewhere', 'other@elsewhere.example', 'owner'],
  ];
  for (const [who, account, email, role] of made) {
    const { user } = await t.server.people.createUser({ account, email, role, password: 'correct horse battery staple', actor: 'cli' });
    people[who] = { kind: 'person', user, plan: 'pro', address: '127.0.0.1' };
  }
});
afterAll(async () => t?.close());

describe('API access rules', () => {
  it('a grant not revealed within 14 days lapses', async () => {
    const request = await ask(people.alice, 'Slow');
    await t.server.apiKeys.approve({ kind: 'cli' }, request.id);
    offsetMs += 14 * DAY_MS + 1000;
    await expect(t.server.apiKeys.reveal(people.alice, request.id)).rejects.toMatchObject({ code: 'grant_not_available', state: 'lapsed' });
    offsetMs = 0;
  });

  it('a key being rolled out does not count toward the 5 active keys; a reveal past 5 is refused', async () => {
    const keys: string[] = [];
    for (let i = 0; i < 4; i++) keys.push((await t.server.admin.issueKey('studio', { user: 'alice@studio.example' })).id);
    const rolled = await t.server.apiKeys.roll(people.alice, keys[0]!, 3);
    // 5 keys work now (the rolled one for 3 days), 4 count: one more may be issued.
    expect((await t.server.admin.listKeys('studio')).filter((k) => k.active)).toHaveLength(5);
    await t.server.admin.issueKey('studio', { user: 'alice@studio.example' });
    await expect(t.server.admin.issueKey('studio', { user: 'alice@studio.example' })).rejects.toMatchObject({ code: 'too_many_keys' });
    const request = await ask(people.alice, 'Sixth');
    await t.server.apiKeys.approve({ kind: 'cli' }, request.id);
    await expect(t.server.apiKeys.reveal(people.alice, request.id)).rejects.toMatchObject({ code: 'too_many_keys' });
    // Revoking one makes room; the grant is still there to reveal.
    await t.server.apiKeys.revoke(people.owner, rolled.info.id);
    expect((await t.server.apiKeys.reveal(people.alice, request.id)).key).toMatch(/^omk_/);
  });

  it("another account's request or key reads as unknown; an owner may withdraw a member's request", async () => {
    const request = await ask(people.alice, 'Shared');
    await expect(t.server.apiKeys.withdraw(people.other, request.id)).rejects.toMatchObject({ code: 'access_request_not_found' });
    const key = (await t.server.admin.listKeys('studio')).find((k) => k.active)!;
    await expect(t.server.apiKeys.revoke(people.other, key.id)).rejects.toMatchObject({ code: 'key_not_found' });
    await expect(t.server.apiKeys.roll(people.other, key.id, 1)).rejects.toMatchObject({ code: 'key_not_found' });
    expect((await t.server.apiKeys.withdraw(people.owner, request.id)).state).toBe('withdrawn');
  });

  it('only operators decide; a request is decided once', async () => {
    const request = await ask(people.alice, 'Decide');
    await expect(t.server.apiKeys.approve(people.owner, request.id)).rejects.toMatchObject({ code: 'role_not_allowed' });
    await t.server.apiKeys.deny({ kind: 'cli' }, request.id, 'No');
    await expect(t.server.apiKeys.approve({ kind: 'cli' }, request.id)).rejects.toMatchObject({ code: 'access_request_not_pending' });
    await expect(t.server.apiKeys.deny({ kind: 'cli' }, request.id, '   ')).rejects.toMatchObject({ code: 'invalid_option' });
  });
});
