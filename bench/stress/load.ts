/**
 * `npm run load`: the real server on the embedded database under 32 clients
 * mixing protect and verify of the test corpus (JPEG, PNG, WebP, 100 B to
 * 1.6 MB).
 *
 * 1. Limits out of reach, 60 s: every answer must be 200, or an admission
 *    refusal (429 too_many_requests, 503 server_busy, counted apart); no
 *    connection may fail; usage must equal the 200s. Reports latency,
 *    throughput and the server's resident size at start, peak and end.
 * 2. Low monthly limits, 20 s: 429 quota_exceeded must appear, and usage must
 *    equal both the 200s and the limit.
 *
 * Options: --seconds N (run 1), --low-seconds N (run 2), --clients N.
 * Exits 1 when a property fails.
 */
import { parseArgs } from 'node:util';
import { cpuSnapshot, cpuUse } from '../cpu-usage.js';
import { countsTable, latencies, latencyTable, Load, ok, type Outcome } from './support/clients.js';
import { corpusUploads, mix } from './support/corpus.js';
import { freePort, sleep } from './support/net.js';
import { Checks, mb, ms, table } from './support/report.js';
import { RssSampler } from './support/rss.js';
import { errorLines, logSummary, Serve, showWarnings, usageOf } from './support/server.js';
import { freshDataDir, prepare } from './support/setup.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '60' }, 'low-seconds': { type: 'string', default: '20' }, clients: { type: 'string', default: '32' } } });
const SECONDS = Number(values.seconds);
const LOW_SECONDS = Number(values['low-seconds']);
const CLIENTS = Number(values.clients);
const LOW_LIMITS = { protect: 300, verify: 500 };
/** Admission refusals the server may answer under load (both carry Retry-After); anything else is a failure. */
const ADMISSION = new Set(['429 too_many_requests', '503 server_busy']);

const log = (line = '') => process.stdout.write(`${line}\n`);
const checks = new Checks(log);
const template = prepare(log);
const uploads = corpusUploads();
log(`corpus: ${uploads.length} files, ${(uploads.reduce((n, u) => n + u.bytes, 0) / 1e6).toFixed(1)} MB`);

async function run(name: string, seconds: number, limits: { protect: number; verify: number }) {
  log(`\n== ${name}: ${CLIENTS} clients, ${seconds} s, protect/verify 50/50, limits protect ${limits.protect} verify ${limits.verify}`);
  const server = await Serve.start(await freePort(), {
    OPTMARK_DATA_DIR: freshDataDir(template),
    OPTMARK_LOG_LEVEL: 'warn',
    OPTMARK_PROTECT_LIMIT: String(limits.protect),
    OPTMARK_VERIFY_LIMIT: String(limits.verify),
    // One key drives every client: the per-key admission limit must not be what we measure.
    OPTMARK_MAX_IN_FLIGHT_PER_KEY: '64',
  });
  const key = server.bootstrapKey!;
  const rss = new RssSampler(server, 1000);
  const cpuBefore = cpuSnapshot(server.pid);
  const load = new Load({ url: server.url, key, clients: CLIENTS, next: mix(uploads, 0.5) }).start();
  const began = performance.now();
  await sleep(seconds * 1000);
  await load.stop();
  const elapsed = (performance.now() - began) / 1000;
  rss.stop();
  const cpu = cpuUse(cpuBefore, cpuSnapshot(server.pid));
  const usage = await usageOf(server.url, key);
  const exit = await server.stop();
  return { name, server, rss, cpu, outcomes: load.outcomes, elapsed, usage, exit };
}

function report(r: Awaited<ReturnType<typeof run>>, allowed: (o: Outcome) => boolean) {
  const { outcomes } = r;
  log(countsTable(outcomes));
  log('');
  log(latencyTable(outcomes));
  const all = latencies(outcomes.filter((o) => o.status !== 0));
  const good = latencies(outcomes.filter((o) => o.status === 200));
  log('');
  log(
    table(
      ['run', 'answers/s', '200/s', 'p50 ms', 'p99 ms', 'p50 ms (200)', 'p99 ms (200)', 'RSS start MB', 'RSS peak MB', 'RSS end MB', 'server cores', 'client cores', 'other cores'],
      [
        [
          r.name,
          (all.count / r.elapsed).toFixed(1),
          (good.count / r.elapsed).toFixed(1),
          ms(all.percentile(50)),
          ms(all.percentile(99)),
          ms(good.percentile(50)),
          ms(good.percentile(99)),
          mb(r.rss.first),
          mb(r.rss.peakMb),
          mb(r.rss.last),
          r.cpu?.serverCores.toFixed(2) ?? '-',
          r.cpu?.clientCores.toFixed(2) ?? '-',
          r.cpu?.otherCores.toFixed(2) ?? '-',
        ],
      ],
    ),
  );
  const unexpected = outcomes.filter((o) => !allowed(o));
  const sample = unexpected.slice(0, 3).map((o) => `${o.op} ${o.file}: ${o.status} ${o.code}`).join('; ');
  checks.check(r.name, 'only expected answers', unexpected.length === 0, unexpected.length === 0 ? `${outcomes.length} answers` : `${unexpected.length} unexpected, e.g. ${sample}`);
  const refusalsWithoutRetry = outcomes.filter((o) => o.status !== 200 && o.status !== 0 && !(Number(o.retryAfter) >= 1)).length;
  checks.check(r.name, 'refusals carry Retry-After', refusalsWithoutRetry === 0, `${refusalsWithoutRetry} without`);
  const [p, v] = [ok(outcomes, 'protect'), ok(outcomes, 'verify')];
  checks.check(r.name, 'usage == 200s', r.usage.protect === p && r.usage.verify === v, `protect ${r.usage.protect} used / ${p} x 200, verify ${r.usage.verify} / ${v}`);
  checks.check(r.name, 'clean stop, no error logged', r.exit.code === 0 && errorLines(r.server) === 0, `exit ${JSON.stringify(r.exit)}; ${logSummary(r.server)}`);
  showWarnings(log, r.server, 1);
}

const high = await run('load', SECONDS, { protect: 1_000_000_000, verify: 1_000_000_000 });
report(high, (o) => o.status === 200 || ADMISSION.has(`${o.status} ${o.code}`));

const low = await run('load, low limits', LOW_SECONDS, LOW_LIMITS);
report(low, (o) => o.status === 200 || o.code === 'quota_exceeded' || ADMISSION.has(`${o.status} ${o.code}`));
const quota = low.outcomes.filter((o) => o.status === 429 && o.code === 'quota_exceeded').length;
checks.check(low.name, '429 quota_exceeded seen', quota > 0, `${quota} answers`);
checks.check(low.name, 'usage == limit', low.usage.protect === LOW_LIMITS.protect && low.usage.verify === LOW_LIMITS.verify, `protect ${low.usage.protect}/${LOW_LIMITS.protect}, verify ${low.usage.verify}/${LOW_LIMITS.verify}`);

process.exit(checks.summary() ? 0 : 1);
