/**
 * A deployment from before people existed: its accounts have keys and no
 * users. The next start hands over, once, a link per account that makes its
 * first owner, who receives the account's keys; the keys work throughout.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { migrationProvider } from '../../src/adapters/db/migrations.js';
import { apiKeyDigest, generateApiKey, visiblePrefix } from '../../src/core/keys/api-key.js';
import { randomBytes, randomUUID } from 'node:crypto';
import { generatedImages } from '../support/generated.js';
import { freshPgDatabase, postImage, startTestServer } from '../support/server.js';
import { linkToken, WebClient } from '../support/web-client.js';

const JPEG = (await generatedImages()).find((g) => g.name === 'baseline.jpg')!.bytes;
const dataDir = mkdtempSync(join(tmpdir(), 'optmark-upgrade-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

it('accounts made before people get a first-owner link in the first-start file, once; the owner made by it receives their keys', async () => {
  const db = await freshPgDatabase();
  try {
    // The schema as it was before people: migrations up to the limits table, an account and its key.
    const old = new Kysely<never>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: db.url }) }) });
    const { error } = await new Migrator({ db: old, provider: migrationProvider() }).migrateTo('002-plan-limits');
    expect(error).toBeUndefined();
    const key = generateApiKey(randomBytes);
    const accountId = randomUUID();
    await sql`insert into accounts (id, name, plan, created_at) values (${accountId}, 'legacy', 'pro', now())`.execute(old);
    await sql`insert into api_keys (id, account_id, prefix, digest, created_at) values ('key_legacy0001', ${accountId}, ${visiblePrefix(key)}, ${apiKeyDigest(key)}, now())`.execute(old);
    await old.destroy();

    let t = await startTestServer({ backend: 'postgres', databaseUrl: db.url, dataDir });
    expect(t.server.firstStart).toMatchObject({ ownerLinks: 1, local: undefined });
    const text = readFileSync(join(dataDir, 'first-start.txt'), 'utf8');
    expect(text).toContain('legacy:');
    const link = /https?:\/\/\S+\/link\?token=[A-Za-z0-9_-]{43}/.exec(text)![0];
    expect((await postImage(t.url, key, JPEG)).status).toBe(200);
    await t.close();

    // Once: the next start hands over nothing.
    t = await startTestServer({ backend: 'postgres', databaseUrl: db.url, dataDir });
    expect(t.server.firstStart).toBeUndefined();
    const browser = new WebClient(t.url);
    const path = link.slice(link.indexOf('/link'));
    expect((await browser.page(path)).html).toContain('<h1>Set up legacy</h1>');
    const pre = await browser.preToken(path);
    expect((await browser.form('/link', { pre, token: linkToken(link), email: 'first@legacy.example', password: 'correct horse battery staple' })).status).toBe(303);
    expect((await t.server.admin.listKeys('legacy'))[0]).toMatchObject({ user: 'first@legacy.example', active: true });
    expect((await t.server.people.listUsers('legacy')).map((u) => [u.email, u.role])).toEqual([['first@legacy.example', 'owner']]);
    expect((await postImage(t.url, key, JPEG)).status).toBe(200);
    await t.close();
  } finally {
    await db.drop();
  }
});
