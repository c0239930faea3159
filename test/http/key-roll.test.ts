/**
 * Rolling a key (docs/api-access.md): only its own person rolls it (the new
 * key is shown to whoever rolls, and nobody but its person sees a key of
 * theirs; an owner may revoke it; another member finds no such key), and the new key ends when the old one was
 * to end: an operator's expiry is not renewed by rolling (it was: each roll
 * gave a new full term, so access never ended). With an injected clock.
 * And of two decisions on one request at once, the loser is told the state
 * the request is in now (it was told "pending"); of two reveals at once at
 * the account's fifth key, the second is told the grant is revealed already
 * before it is told of the limit.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Clock } from '../../src/app/ports.js';
import { startTestServer, type TestServer } from '../support/server.js';

const DAY = 86_400_000;
let now = new Date('2027-03-01T12:00:00Z');
const clock: Clock = { now: () => new Date(now) };
let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ clock });
});
afterAll(() => t?.close());

it('only the key’s person rolls it, and the new key ends when the old one was to end', async () => {
  const { admin, people, apiKeys } = t.server;
  await admin.createAccount('rolling', 'pro');
  for (const [email, role] of [['carol@rolling.example', 'member'], ['olga@rolling.example', 'owner'], ['mia@rolling.example', 'member']] as const) {
    await people.createUser({ account: 'rolling', email, role, password: 'correct horse battery staple', actor: 'cli' });
  }
  const person = async (email: string) => ({ kind: 'person' as const, user: (await people.listUsers('rolling')).find((u) => u.email === email)!, plan: 'pro' as const, address: null });
  const carol = await person('carol@rolling.example');
  const olga = await person('olga@rolling.example');
  const made = await apiKeys.request(carol, { name: 'Uploads', purpose: 'Marks uploads', monthlyVolume: 100, scopes: ['protect'], contact: 'ops@rolling.example' });
  await apiKeys.approve({ kind: 'cli' }, made.id, { expiresInDays: 30 });
  const revealed = await apiKeys.reveal(carol, made.id);
  const endsAt = revealed.info.expiresAt!;
  expect(endsAt.getTime()).toBe(now.getTime() + 30 * DAY);

  // The owner may revoke Carol's key, not roll it (which would show the owner a key of Carol's).
  await expect(apiKeys.roll(olga, revealed.info.id, 1)).rejects.toMatchObject({ code: 'role_not_allowed' });
  await expect(apiKeys.reveal(olga, made.id)).rejects.toMatchObject({ code: 'role_not_allowed' });
  // Another member, who never sees Carol's keys or requests, finds none: the answer of an id that does not exist.
  const mia = await person('mia@rolling.example');
  for (const attempt of [apiKeys.roll(mia, revealed.info.id, 1), apiKeys.revoke(mia, revealed.info.id), apiKeys.roll(mia, '00000000-0000-4000-8000-000000000000', 1)]) {
    await expect(attempt).rejects.toMatchObject({ code: 'key_not_found', message: 'There is no such key in your account' });
  }
  await expect(apiKeys.reveal(mia, made.id)).rejects.toMatchObject({ code: 'access_request_not_found' });

  // On day 29 Carol rolls: the new key still ends on day 30.
  now = new Date(now.getTime() + 29 * DAY);
  const rolled = await apiKeys.roll(carol, revealed.info.id, 7);
  expect(rolled.info.expiresAt?.toISOString()).toBe(endsAt.toISOString());
  expect(rolled.rolledFrom?.endsAt.toISOString()).toBe(endsAt.toISOString());
  now = new Date(endsAt.getTime() + 1000);
  const usage = await fetch(`${t.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${rolled.key}` } });
  expect(usage.status).toBe(401);
});

it('a chain of rolls keeps two keys working, the newest and the one it replaced; each roll ends the overlap of the key before', async () => {
  const { people, apiKeys } = t.server;
  const carol = { kind: 'person' as const, user: (await people.listUsers('rolling')).find((u) => u.email === 'carol@rolling.example')!, plan: 'pro' as const, address: null };
  const made = await apiKeys.request(carol, { name: 'Chain', purpose: 'Marks uploads', monthlyVolume: 100, scopes: ['verify'], contact: 'ops@rolling.example' });
  await apiKeys.approve({ kind: 'cli' }, made.id);
  const first = await apiKeys.reveal(carol, made.id);
  const secrets = [first.key];
  let id = first.info.id;
  for (let i = 0; i < 6; i++) {
    const rolled = await apiKeys.roll(carol, id, 7);
    secrets.push(rolled.key);
    id = rolled.info.id;
  }
  const status = async (key: string) => (await fetch(`${t.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } })).status;
  const statuses = [];
  for (const key of secrets) statuses.push(await status(key));
  // Seven keys made by six rolls within the week: the last two work, the five before have stopped.
  expect(statuses).toEqual([401, 401, 401, 401, 401, 200, 200]);
});

it('of two decisions on one request at once, one holds; the other is told the state the request is in now', async () => {
  const { people, apiKeys } = t.server;
  const carol = { kind: 'person' as const, user: (await people.listUsers('rolling')).find((u) => u.email === 'carol@rolling.example')!, plan: 'pro' as const, address: null };
  const made = await apiKeys.request(carol, { name: 'Thumbnails', purpose: 'Marks thumbnails', monthlyVolume: 100, scopes: ['verify'], contact: 'ops@rolling.example' });
  const both = await Promise.allSettled([apiKeys.approve({ kind: 'cli' }, made.id), apiKeys.deny({ kind: 'cli' }, made.id, 'Not this time')]);
  expect(both.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
  const lost = (both.find((o) => o.status === 'rejected') as PromiseRejectedResult).reason as { code: string; message: string };
  const state = both[0]!.status === 'fulfilled' ? 'approved' : 'denied';
  expect(lost).toMatchObject({ code: 'access_request_not_pending', message: `This request is ${state} already: only a pending request can be decided or withdrawn` });
});

it('of two reveals of one grant at once, at the account’s fifth key, the second is told the grant is revealed already (it was told to revoke a key)', async () => {
  const { admin, people, apiKeys } = t.server;
  await admin.createAccount('full-reveal', 'pro');
  await people.createUser({ account: 'full-reveal', email: 'dana@full-reveal.example', role: 'owner', password: 'correct horse battery staple', actor: 'cli' });
  const dana = { kind: 'person' as const, user: (await people.listUsers('full-reveal'))[0]!, plan: 'pro' as const, address: null };
  const made = await apiKeys.request(dana, { name: 'Shop', purpose: 'Marks shop images', monthlyVolume: 100, scopes: ['protect'], contact: 'ops@full-reveal.example' });
  await apiKeys.approve({ kind: 'cli' }, made.id);
  for (let i = 0; i < 4; i++) await admin.issueKey('full-reveal', { user: 'dana@full-reveal.example' });
  const both = await Promise.allSettled([apiKeys.reveal(dana, made.id), apiKeys.reveal(dana, made.id)]);
  expect(both.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
  expect((both.find((o) => o.status === 'rejected') as PromiseRejectedResult).reason).toMatchObject({ code: 'grant_not_available' });
});
