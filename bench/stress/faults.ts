/**
 * `npm run faults`: the real `optmark serve` process under load while things
 * break around it. Each scenario prints what the clients saw, second by
 * second, and checks the properties the documentation promises:
 *
 *   outage          a. PostgreSQL killed and restarted under 16 clients
 *   kill-postgres   b. the server SIGKILLed under 8 clients and restarted, on PostgreSQL
 *   kill-embedded   b. the same on the embedded database
 *   sigterm         c. SIGTERM under 8 clients, on both databases
 *   disk-full       d. the embedded database's file system fills up, then has room again
 *   read-only       d. the embedded database's file system turns read-only
 *   instances       e. three instances on one PostgreSQL behind nginx: exact counts, one SIGKILLed, rolling restarts
 *
 * Needs root for its own PostgreSQL cluster (run as the postgres user) and
 * for the loop-mounted file system of d. Everything it creates is removed at
 * the end, also on failure or Ctrl-C. 3 to 5 minutes (b on PostgreSQL waits
 * for the reservation sweep, which runs once a minute).
 *
 * Options: --only NAME[,NAME...]. Exits 1 when a property fails.
 */
import { parseArgs } from 'node:util';
import { crashEmbedded, crashPostgres } from './faults/crash.js';
import { diskFull, readOnly } from './faults/disk.js';
import type { Context } from './faults/common.js';
import { pgOutage } from './faults/pg-outage.js';
import { sigterm } from './faults/sigterm.js';
import { instances } from './faults/instances.js';
import { stopAllLoads } from './support/clients.js';
import { PgCluster } from './support/pg-cluster.js';
import { Checks } from './support/report.js';
import { killAllServers } from './support/server.js';
import { prepare } from './support/setup.js';

const SCENARIOS: Record<string, (ctx: Context) => Promise<void>> = {
  outage: pgOutage,
  'kill-postgres': crashPostgres,
  'kill-embedded': crashEmbedded,
  sigterm,
  'disk-full': diskFull,
  'read-only': readOnly,
  instances,
};

const { values } = parseArgs({ options: { only: { type: 'string' } } });
const chosen = values.only ? values.only.split(',').map((s) => s.trim()) : Object.keys(SCENARIOS);
const unknown = chosen.filter((name) => !(name in SCENARIOS));
if (unknown.length) throw new Error(`unknown scenario ${unknown.join(', ')}; choose from ${Object.keys(SCENARIOS).join(', ')}`);

const log = (line = '') => process.stdout.write(`${line}\n`);
const checks = new Checks(log);
let cluster: Promise<PgCluster> | undefined;
const ctx: Context = { log, checks, template: prepare(log), cluster: () => (cluster ??= PgCluster.create(log)) };

for (const name of chosen) {
  const began = performance.now();
  try {
    await SCENARIOS[name]!(ctx);
  } catch (error) {
    checks.check(name, 'scenario ran to its end', false, (error as Error).stack ?? String(error));
  } finally {
    await stopAllLoads();
    await killAllServers();
  }
  log(`(${name}: ${((performance.now() - began) / 1000).toFixed(0)} s)`);
}
(await cluster)?.remove();
// Exit now: a stray handle (a socket of a killed server) must not keep a finished run waiting.
process.exit(checks.summary() ? 0 : 1);
