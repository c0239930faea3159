/**
 * Two processes starting at the same moment: on one PostgreSQL database only
 * one creates the first account, and a name is taken once; in one directory
 * a file made "exclusively" is never seen half written.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createExclusive } from '../../src/adapters/private-file.js';
import { openDatabase, type DatabaseHandle } from '../../src/adapters/db/open.js';
import { SqlPeopleStore } from '../../src/adapters/db/people-store.js';
import { SqlStore } from '../../src/adapters/db/sql-store.js';
import { createAdmin, type Admin } from '../../src/app/admin.js';
import { systemClock } from '../../src/app/ports.js';
import { firstStart } from '../../src/app/first-start.js';
import { createPeople } from '../../src/app/people/users.js';
import { createPasswordHasher } from '../../src/adapters/password-hasher.js';
import { AdminError } from '../../src/errors.js';
import { freshPgDatabase } from '../support/server.js';

describe('two servers on one empty PostgreSQL database', () => {
  let drop: () => Promise<void>;
  const handles: DatabaseHandle[] = [];
  const admins: Admin[] = [];
  const starts: Array<() => ReturnType<typeof firstStart>> = [];

  beforeAll(async () => {
    const fresh = await freshPgDatabase();
    drop = fresh.drop;
    for (let i = 0; i < 2; i++) {
      const handle = await openDatabase({ databaseUrl: fresh.url, dataDir: '' });
      handles.push(handle);
      const store = new SqlStore(handle.db);
      const peopleStore = new SqlPeopleStore(handle.db);
      const admin = createAdmin({ store, people: peopleStore, clock: systemClock });
      const people = createPeople({ people: peopleStore, store, hasher: createPasswordHasher(), clock: systemClock, baseUrl: () => 'http://127.0.0.1:8080' });
      admins.push(admin);
      starts.push(() => firstStart({ store, admin, people }));
    }
  });
  afterAll(async () => {
    for (const handle of handles) await handle.close();
    await drop();
  });

  it('first starts at the same moment: one creates the local account, its owner and key, the other does nothing', async () => {
    const results = await Promise.all(starts.map((start) => start()));
    expect(results.filter((r) => r.local !== undefined)).toHaveLength(1);
    expect((await admins[0]!.listKeys('local')).map((k) => k.user)).toEqual(['owner@localhost']);
  });

  it('the same account name created twice at once: one succeeds, the other is account_exists', async () => {
    const results = await Promise.allSettled(admins.map((admin) => admin.createAccount('acme', 'pro')));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const failed = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(failed.reason).toBeInstanceOf(AdminError);
    expect((failed.reason as AdminError).code).toBe('account_exists');
  });
});

describe('createExclusive', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'optmark-exclusive-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('creates the file whole with owner-only access, refuses an existing one, and leaves no temporary file', () => {
    const path = join(dir, 'lock');
    createExclusive(path, '12345');
    expect(readFileSync(path, 'utf8')).toBe('12345');
    expect(readdirSync(dir)).toEqual(['lock']);
    expect(() => createExclusive(path, '67890')).toThrow(expect.objectContaining({ code: 'EEXIST' }));
    expect(readFileSync(path, 'utf8')).toBe('12345');
    expect(readdirSync(dir)).toEqual(['lock']);
    expect(existsSync(path)).toBe(true);
  });
});
