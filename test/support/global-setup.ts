/**
 * Once per test run: the build of the sources, which every test that runs
 * the `optmark` command or the fingerprint worker thread loads from dist/ (a
 * worker thread and a child process run JavaScript; a stale or missing build
 * would test other code than the sources, or fail to load); an embedded
 * database with the schema already in place, which tests copy instead of
 * paying PGlite's initdb (seconds, ~800 MB) per server; and a check that the
 * PostgreSQL the tests use answers.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '../../src/adapters/db/open.js';

export const PG_ADMIN_URL = process.env.OPTMARK_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteTemplate: string;
    pgAdminUrl: string;
  }
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** `npm run build` (the client's types, the compiler, the browser bundles): a few seconds; its errors fail the run before any test. */
function build(): void {
  try {
    execFileSync(process.execPath, ['--run', 'build'], { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`The build of src/ into dist/ failed, so no test ran:\n${stdout}${stderr}`);
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  build();
  const template = mkdtempSync(join(tmpdir(), 'optmark-template-'));
  const database = await openDatabase({ databaseUrl: undefined, dataDir: template });
  await database.close();

  const client = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    await client.query('select 1');
  } catch (error) {
    throw new Error(
      `The tests need PostgreSQL at ${PG_ADMIN_URL} (set OPTMARK_TEST_PG_URL to another server's admin database; .ci/run starts the local one): ${(error as Error).message}`,
    );
  } finally {
    await client.end().catch(() => {});
  }

  project.provide('pgliteTemplate', template);
  project.provide('pgAdminUrl', PG_ADMIN_URL);
  return () => rmSync(template, { recursive: true, force: true });
}
