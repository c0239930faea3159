/**
 * At most 5 active keys per account (DESIGN §6), kept when keys are issued
 * at the same moment, on both back ends: the count and the insert happen in
 * one transaction with the account's row locked, so of two issues at the
 * fifth key one is refused too_many_keys, whichever path issues them (the
 * command line's, a reveal on the keys page).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, startTestServer, type TestServer } from '../support/server.js';

describe.each(BACKENDS)('on %s', (backend) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ backend });
  });
  afterAll(() => t?.close());

  it('two keys issued at once for the last place: one is issued, the other refused', async () => {
    const { admin, people } = t.server;
    await admin.createAccount('crowded', 'pro');
    await people.createUser({ account: 'crowded', email: 'owner@crowded.example', role: 'owner', password: 'correct horse battery staple', actor: 'cli' });
    for (let i = 0; i < 4; i++) await admin.issueKey('crowded', { user: 'owner@crowded.example' });
    for (let round = 0; round < 5; round++) {
      const both = await Promise.allSettled([admin.issueKey('crowded', { user: 'owner@crowded.example' }), admin.issueKey('crowded', { user: 'owner@crowded.example' })]);
      expect(both.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
      const refused = both.find((o) => o.status === 'rejected') as PromiseRejectedResult;
      expect(refused.reason).toMatchObject({ code: 'too_many_keys' });
      expect((await admin.listKeys('crowded')).filter((k) => k.active)).toHaveLength(5);
      // One place again for the next round.
      const last = (await admin.listKeys('crowded')).filter((k) => k.active).at(-1)!;
      await admin.revokeKey(last.id);
    }
  });
});
