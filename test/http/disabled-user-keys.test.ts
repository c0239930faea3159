/**
 * A key whose person is disabled does not work, revoked or not. Disabling
 * someone revokes the keys they have; a key revealed or rolled at that very
 * moment could commit after the revocation, unrevoked, and went on working
 * (the reveal holds the account's lock, the disabling does not). The key's
 * check now looks at its person too, on both back ends (the embedded one
 * caches what it found). The race's outcome is made here directly: the
 * person disabled, their key left unrevoked. And each key revoked with its
 * person (disabled or removed) is a `key.revoked` line of the audit log.
 */
import { sql } from 'kysely';
import { visiblePrefix } from '../../src/core/keys/api-key.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, postImage, startTestServer, type TestServer } from '../support/server.js';
import { generatedImages } from '../support/generated.js';

const JPEG = (await generatedImages()).find((g) => g.name === 'baseline.jpg')!.bytes;

describe.each(BACKENDS)('on %s', (backend) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ backend });
  });
  afterAll(() => t?.close());

  it('the key of a disabled person is refused 401 even when it escaped the revocation', async () => {
    const { admin, people } = t.server;
    await admin.createAccount('disabling', 'pro');
    await people.createUser({ account: 'disabling', email: 'alice@disabling.example', role: 'member', password: 'correct horse battery staple', actor: 'cli' });
    await people.createUser({ account: 'disabling', email: 'bob@disabling.example', role: 'owner', password: 'correct horse battery staple', actor: 'cli' });
    const alice = (await admin.issueKey('disabling', { user: 'alice@disabling.example' })).key;
    const bob = (await admin.issueKey('disabling', { user: 'bob@disabling.example' })).key;
    const usage = (key: string) => fetch(`${t.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } });
    expect((await usage(alice)).status).toBe(200);
    expect((await postImage(t.url, alice, JPEG)).status).toBe(200);

    await people.disableUser('alice@disabling.example', 'cli');
    // Her key's revocation is a line of the audit log, as every revocation is (docs/api-access.md).
    const revokedLines = async () =>
      (await sql<{ detail: Record<string, unknown> | string }>`select detail from audit_log where action = 'key.revoked' order by at`.execute(t.server.database.db)).rows.map((r) => (typeof r.detail === 'string' ? JSON.parse(r.detail) : r.detail) as Record<string, unknown>);
    expect(await revokedLines()).toEqual([expect.objectContaining({ by: 'cli', prefix: visiblePrefix(alice), reason: 'its person, alice@disabling.example, was disabled' })]);
    // What a reveal committing just after the disabling leaves: her key, unrevoked.
    await sql`update api_keys set revoked_at = null where user_id = (select id from users where email = 'alice@disabling.example')`.execute(t.server.database.db);
    expect((await usage(alice)).status).toBe(401);
    const refused = await postImage(t.url, alice, JPEG);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ code: 'invalid_api_key' });
    // Another person's key of the account is untouched.
    expect((await usage(bob)).status).toBe(200);

    // A member removed by an owner: their keys go with them, each revocation a line too.
    await people.createUser({ account: 'disabling', email: 'carl@disabling.example', role: 'member', password: 'correct horse battery staple', actor: 'cli' });
    const carl = (await admin.issueKey('disabling', { user: 'carl@disabling.example' })).key;
    const users = await people.listUsers('disabling');
    await people.removeMember(users.find((u) => u.email === 'bob@disabling.example')!, users.find((u) => u.email === 'carl@disabling.example')!.id);
    expect((await usage(carl)).status).toBe(401);
    expect((await revokedLines()).at(-1)).toMatchObject({ by: 'bob@disabling.example', prefix: visiblePrefix(carl), reason: 'its person, carl@disabling.example, was removed' });
  });
});
