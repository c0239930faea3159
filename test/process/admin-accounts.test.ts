/**
 * Administration from the command line, on PostgreSQL (directly) and on the
 * embedded database (through a running server's admin socket): deleting an
 * account asks for --yes, says what goes and leaves a line in the audit log;
 * keys list --all shows every account's keys; and a data directory without a
 * database is refused rather than given a new, empty one.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../support/server.js';
import { killAll, optmark, optmarkJson, postImage } from './support.js';

afterAll(killAll);

describe.each(['postgres', 'pglite'] as const)('on %s', (backend) => {
  it('accounts delete asks for --yes, says what goes, keeps an audit line; keys list --all spans accounts', async () => {
    const t = await startTestServer({ backend });
    try {
      const env: Record<string, string> = t.databaseUrl ? { DATABASE_URL: t.databaseUrl } : { OPTMARK_DATA_DIR: t.dataDir };
      await optmarkJson(['accounts', 'create', '--name', 'doomed', '--plan', 'pro'], env);
      await optmarkJson(['accounts', 'create', '--name', 'kept', '--plan', 'pro'], env);
      const key = (await optmarkJson<{ key: string }>(['keys', 'issue', '--account', 'doomed'], env)).key;
      await optmarkJson(['keys', 'issue', '--account', 'kept'], env);
      expect((await postImage(t.url, key)).status).toBe(200);

      const all = await optmarkJson<Array<{ account: string; active: boolean }>>(['keys', 'list', '--all'], env);
      expect(all.map((k) => k.account).filter((a) => a !== 'local').sort()).toEqual(['doomed', 'kept']);
      const text = await optmark(['keys', 'list', '--all'], env);
      expect(text.stdout).toMatch(/^doomed {2}key_\w+ {2}omk_\w+\.\.\. {2}active/m);

      const asked = await optmark(['accounts', 'delete', 'doomed'], env);
      expect(asked.code).toBe(2);
      expect(asked.stderr).toContain('Add --yes to delete it');
      expect((await postImage(t.url, key)).status).toBe(200);

      const deleted = await optmarkJson<Record<string, unknown>>(['accounts', 'delete', 'doomed', '--yes'], env);
      expect(deleted).toEqual({ name: 'doomed', plan: 'pro', users: 0, keys: 1, activeKeys: 1 });
      expect((await postImage(t.url, key)).status).toBe(401);
      expect((await optmarkJson<Array<{ name: string }>>(['accounts', 'list'], env)).map((a) => a.name)).not.toContain('doomed');
      const again = await optmark(['accounts', 'delete', 'doomed', '--yes'], env);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('There is no account named "doomed"');

      if (t.databaseUrl) {
        const client = new pg.Client({ connectionString: t.databaseUrl });
        await client.connect();
        const { rows } = await client.query("select actor, action, detail from audit_log where action = 'account.deleted'");
        await client.end();
        expect(rows).toEqual([{ actor: 'cli', action: 'account.deleted', detail: JSON.stringify({ by: 'cli', name: 'doomed', plan: 'pro', users: 0, keys: 1, activeKeys: 1 }) }]);
      }
    } finally {
      await t.close();
    }
  });
});

it('refuses a data directory without a database instead of making an empty one', async () => {
  const empty = mkdtempSync(join(tmpdir(), 'optmark-typo-'));
  try {
    for (const args of [['accounts', 'list'], ['keys', 'issue', '--account', 'local'], ['usage', '--account', 'local']]) {
      const run = await optmark(args, { OPTMARK_DATA_DIR: join(empty, 'dta') });
      expect(run.code, args.join(' ')).toBe(1);
      expect(run.stderr).toContain(`there is no optmark database in ${join(empty, 'dta')}`);
      expect(run.stderr).toContain('optmark serve');
    }
    expect(existsSync(join(empty, 'dta'))).toBe(false);
    expect(readdirSync(empty)).toEqual([]);
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
});
