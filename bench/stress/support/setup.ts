/**
 * Before a run: dist/ built from the current sources (the server runs from
 * it), and a migrated embedded database to copy for each data directory
 * (PGlite's initdb takes seconds), cached per migrations version.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureBuilt } from '../../http-server.js';
import { onCleanup } from './cleanup.js';
import { ROOT } from './server.js';

const CACHE = join(ROOT, '.bench-tmp', 'stress');

/** Build if needed; the template's path. */
export function prepare(log: (line: string) => void): string {
  ensureBuilt(ROOT, log);
  return ensureTemplate(log);
}

function ensureTemplate(log: (line: string) => void): string {
  const version = createHash('sha256').update(readFileSync(join(ROOT, 'dist', 'adapters', 'db', 'migrations.js'))).digest('hex').slice(0, 12);
  const template = join(CACHE, `pglite-template-${version}`);
  if (existsSync(join(template, 'pgdata'))) return template;
  mkdirSync(CACHE, { recursive: true });
  for (const old of readdirSync(CACHE)) if (old.startsWith('pglite-template-')) rmSync(join(CACHE, old), { recursive: true, force: true });
  const partial = `${template}.part`;
  rmSync(partial, { recursive: true, force: true });
  const open = pathToFileURL(join(ROOT, 'dist', 'adapters', 'db', 'open.js')).href;
  // CommonJS -e with import(): --input-type=module would be inherited by PGlite's worker thread, which then cannot load its file.
  const script = `import(${JSON.stringify(open)}).then(async ({ openDatabase }) => {
    const db = await openDatabase({ databaseUrl: undefined, dataDir: ${JSON.stringify(partial)} });
    await db.close();
  });`;
  const started = performance.now();
  const result = spawnSync(process.execPath, ['-e', script], { cwd: ROOT, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`could not create the database template: ${result.stderr}`);
  renameSync(partial, template);
  log(`created the embedded database template in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return template;
}

/** A new directory, removed when the run ends. */
export function scratchDir(prefix: string, parent = tmpdir()): string {
  const dir = mkdtempSync(join(parent, `optmark-stress-${prefix}-`));
  onCleanup(dir, () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A data directory holding a copy of the template (an empty, migrated database). */
export function freshDataDir(template: string, dir = scratchDir('data')): string {
  cpSync(join(template, 'pgdata'), join(dir, 'pgdata'), { recursive: true });
  return dir;
}
