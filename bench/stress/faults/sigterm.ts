/**
 * c. SIGTERM under 8 clients posting corpus images (up to 1.6 MB, so that
 * some calls are long): every call sent before the signal must end with 200,
 * the process must exit 0, and the counts must be whole after a restart.
 * Clients keep sending after the signal, to show what they then get: 503
 * service_unavailable on an open connection, a refused or reset connection,
 * or a 200 when the call got in before the server handled the signal.
 */
import { countBy, countsTable, label, Load, okUsage } from '../support/clients.js';
import { corpusUploads, mix } from '../support/corpus.js';
import { freePort } from '../support/net.js';
import { ms } from '../support/report.js';
import { logSummary, Serve, showWarnings, usageOf } from '../support/server.js';
import { freshDataDir } from '../support/setup.js';
import { fmtUsage, pgServer, timeline, until, type Context, UNDER_LOAD } from './common.js';

const CLIENTS = 8;
const SIGNAL_AT_MS = 5_000;

async function sigtermUnderLoad(ctx: Context, scope: string, env: Record<string, string>, key: string | undefined): Promise<void> {
  ctx.log(`\n== ${scope}: ${CLIENTS} clients protect/verify corpus images; SIGTERM at ${SIGNAL_AT_MS / 1000} s`);
  const port = await freePort();
  const server = await Serve.start(port, env);
  key ??= await server.bootstrapKey();
  const load = new Load({ url: server.url, key, clients: CLIENTS, next: mix(corpusUploads(), 0.5, 7) });
  const t0 = performance.now();
  load.start();
  await until(t0 + SIGNAL_AT_MS);
  const inFlight = load.inFlight;
  const signalAt = performance.now();
  server.kill('SIGTERM');
  const exit = await server.exited;
  const exitAt = performance.now();
  await load.stop();

  const outcomes = load.outcomes;
  const before = outcomes.filter((o) => o.start < signalAt);
  const after = outcomes.filter((o) => o.start >= signalAt);
  ctx.log(timeline(outcomes, t0, [['SIGTERM', signalAt], ['exit', exitAt]], 500));
  ctx.log('');
  ctx.log(countsTable(outcomes));
  const failed = before.filter((o) => o.status !== 200);
  const endedAfter = before.filter((o) => o.end >= signalAt);
  ctx.checks.check(
    scope,
    'calls sent before the signal all end with 200',
    failed.length === 0,
    `${before.length} sent before, ${inFlight} in flight at the signal, ${endedAfter.length} finished after it (the last ${ms(Math.max(0, ...endedAfter.map((o) => o.end - signalAt)))} ms after)` +
      (failed.length ? `; NOT 200: ${failed.map((o) => `${o.op} ${o.file} sent ${ms(signalAt - o.start)} ms before: ${label(o)}`).join('; ')}` : ''),
  );
  // A call sent just after the signal may still reach the server before it handles the signal, and be served.
  const afterLabels = [...countBy(after)].map(([l, n]) => `${n} x ${l}`).join(', ') || 'none';
  const served = after.filter((o) => o.status === 200);
  const refusedProperly = after.every((o) => o.status === 200 || (o.status === 503 && o.code === 'service_unavailable' && o.json) || o.status === 0);
  ctx.checks.check(
    scope,
    'later calls: 200, 503 or refused at connection',
    refusedProperly,
    `${afterLabels}${served.length ? ` (the 200s sent at most ${ms(Math.max(...served.map((o) => o.start - signalAt)))} ms after the signal)` : ''}`,
  );
  ctx.checks.check(scope, 'exit 0', exit.code === 0, `exit ${JSON.stringify(exit)} ${ms(exitAt - signalAt)} ms after the signal; ${logSummary(server)}`);
  showWarnings(ctx.log, server);

  const again = await Serve.start(port, env);
  const usage = await usageOf(again.url, key);
  await again.stop();
  const counted = okUsage(outcomes);
  ctx.checks.check(scope, 'usage == 200s after a restart', usage.protect === counted.protect && usage.verify === counted.verify, `200s: ${fmtUsage(counted)}; usage: ${fmtUsage(usage)}`);
}

export async function sigterm(ctx: Context): Promise<void> {
  await sigtermUnderLoad(ctx, 'c. SIGTERM, embedded', { OPTMARK_DATA_DIR: freshDataDir(ctx.template), ...UNDER_LOAD }, undefined);
  const { env, key } = await pgServer(ctx, 'optmark_sigterm');
  await sigtermUnderLoad(ctx, 'c. SIGTERM, PostgreSQL', env, key);
}
