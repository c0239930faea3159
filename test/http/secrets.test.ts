/**
 * On PostgreSQL too, a raw API key is stored nowhere: every row of every
 * table, read back as text, holds neither the key nor its secret part. (The
 * embedded database's files and the server's logs are searched the same way
 * in test/process/admin-embedded.test.ts.)
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { corpusFile } from '../support/corpus.js';
import { postImage, startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ backend: 'postgres' });
});
afterAll(async () => t?.close());

it('no table row contains a raw key or its secret part', async () => {
  const keys = [await t.key('pro', 'secrets-a'), await t.key('pro', 'secrets-b'), await t.key('free', 'secrets-c')];
  const jpeg = corpusFile('exiftool/XMP.jpg').bytes;
  for (const key of keys) {
    await postImage(t.url, key, jpeg);
    await postImage(t.url, key, jpeg, { path: '/api/v1/verify' });
  }
  const revoked = (await t.server.admin.listKeys('secrets-a'))[0]!;
  await t.server.admin.revokeKey(revoked.id);

  const client = new pg.Client({ connectionString: t.databaseUrl });
  await client.connect();
  try {
    const tables = (await client.query<{ name: string }>(`select quote_ident(table_name) as name from information_schema.tables where table_schema = 'public'`)).rows;
    expect(tables.length).toBeGreaterThan(2);
    let rows = 0;
    const leaks: string[] = [];
    for (const { name } of tables) {
      for (const row of (await client.query<{ text: string }>(`select t::text as text from ${name} t`)).rows) {
        rows++;
        for (const key of keys) for (const needle of [key, key.slice(10)]) if (row.text.includes(needle)) leaks.push(`${name}: ${row.text}`);
      }
    }
    expect(rows).toBeGreaterThan(5);
    expect(leaks).toEqual([]);
  } finally {
    await client.end();
  }
});
