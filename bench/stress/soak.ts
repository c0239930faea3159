/**
 * `npm run soak`: the real server on the embedded database (or, with
 * --database-url, on an empty PostgreSQL database) for a long time
 * (default 10 minutes) under 2 clients, 70 % protect and 30 % verify of the
 * test corpus. Its resident size is sampled every 10 s and printed as it
 * goes. Asserts: every call 200, usage == the 200s, and the resident size at
 * the end within 10 % of its size after the first minute (a leak grows; the
 * allocator settings of `npm start` keep freed memory, so a healthy process
 * stays flat once warm). Where the resident memory is (malloc's main and
 * per-thread arenas, WebAssembly, stacks, other anonymous, files; from
 * /proc/<pid>/smaps) is reported at that first minute and at the end, so a
 * creep shows where it grew.
 *
 * Options: --minutes N, --database-url postgres://... (a database of its
 * own: the server bootstraps its account there, so it must be empty).
 * Exits 1 when a property fails.
 */
import { parseArgs } from 'node:util';
import { cpuSnapshot, cpuUse } from '../cpu-usage.js';
import { countsTable, latencyTable, Load, okUsage } from './support/clients.js';
import { corpusUploads, mix } from './support/corpus.js';
import { freePort, sleep } from './support/net.js';
import { Checks, mb, table } from './support/report.js';
import { RssSampler, type RssSample } from './support/rss.js';
import { errorLines, logSummary, Serve, showWarnings, usageOf } from './support/server.js';
import { freshDataDir, prepare } from './support/setup.js';
import { CATEGORIES, MEANING, readSmaps, type Smaps } from './support/smaps.js';

const { values } = parseArgs({ options: { minutes: { type: 'string', default: '10' }, 'database-url': { type: 'string' } } });
const MINUTES = Number(values.minutes);
if (!(MINUTES > 0)) throw new Error('--minutes must be a positive number');
const CLIENTS = 2;
const SAMPLE_MS = 10_000;
const WARM_MS = 60_000;
const TOLERANCE = 0.1;

const log = (line = '') => process.stdout.write(`${line}\n`);
const checks = new Checks(log);
const template = prepare(log);
const uploads = corpusUploads();
const databaseUrl = values['database-url'];
log(`soak: ${MINUTES} min, ${CLIENTS} clients, protect/verify 70/30 over ${uploads.length} corpus files, ${databaseUrl ? 'PostgreSQL' : 'embedded database'}; RSS every ${SAMPLE_MS / 1000} s`);

const server = await Serve.start(await freePort(), {
  OPTMARK_DATA_DIR: freshDataDir(template),
  ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  OPTMARK_LOG_LEVEL: 'warn',
  OPTMARK_PROTECT_LIMIT: '1000000000',
  OPTMARK_VERIFY_LIMIT: '1000000000',
});
const key = await server.bootstrapKey();
const rss = new RssSampler(server, SAMPLE_MS);
const cpuBefore = cpuSnapshot(server.pid);
const load = new Load({ url: server.url, key, clients: CLIENTS, next: mix(uploads, 0.7, 11) }).start();
const began = performance.now();

const row = (t: string, rssMb: number, calls: number, rate: string, failed: number) =>
  `${t.padStart(6)}  ${mb(rssMb).padStart(6)}  ${String(calls).padStart(7)}  ${rate.padStart(7)}  ${String(failed).padStart(7)}`;
log(`${'t'.padStart(6)}  ${'RSS MB'.padStart(6)}  ${'calls'.padStart(7)}  ${'calls/s'.padStart(7)}  ${'non-200'.padStart(7)}`);
log(row('0 s', rss.first, 0, '-', 0));
let lastCalls = 0;
let lastAt = began;
let printed = 1;
/** The breakdown by mapping, taken with the sample the drift is measured from (within the second), and VmRSS read right after it. */
let warmSmaps: { smaps: Smaps | undefined; rssMb: number | undefined } | undefined;
const smapsNow = () => ({ smaps: readSmaps(server.pid), rssMb: server.memory()?.rssMb });
while (performance.now() - began < MINUTES * 60_000) {
  await sleep(1_000);
  // One line per sample, as it is taken, so a long run shows its progress.
  for (; printed < rss.samples.length; printed++) {
    const sample = rss.samples[printed]!;
    if (!warmSmaps && sample.at >= WARM_MS) warmSmaps = smapsNow();
    const now = performance.now();
    const calls = load.outcomes.length;
    log(row(`${Math.round(sample.at / 1000)} s`, sample.rssMb, calls, ((calls - lastCalls) / ((now - lastAt) / 1000)).toFixed(1), load.outcomes.filter((o) => o.status !== 200).length));
    lastCalls = calls;
    lastAt = now;
  }
}
await load.stop();
rss.stop();
const endSmaps = smapsNow();
const cpu = cpuUse(cpuBefore, cpuSnapshot(server.pid));
const elapsed = (performance.now() - began) / 1000;
const usage = await usageOf(server.url, key);
const exit = await server.stop();

const outcomes = load.outcomes;
log('');
log(countsTable(outcomes));
log('');
log(latencyTable(outcomes));
const warm = rss.samples.find((s) => s.at >= WARM_MS) ?? rss.samples[Math.floor(rss.samples.length / 2)]!;
const end = rss.last;
const drift = (end - warm.rssMb) / warm.rssMb;
// A leak keeps climbing; a process still warming up flattens out: the trend of the second half tells them apart.
const slope = trend(rss.samples.filter((x) => x.at >= (MINUTES * 60_000) / 2));
log('');
log(
  table(
    ['calls', 'calls/s', 'RSS start MB', `RSS at ${Math.round(warm.at / 1000)} s MB`, 'RSS end MB', 'drift', '2nd half MB/min', 'RSS peak MB', 'server cores', 'client cores', 'other cores'],
    [[outcomes.length, (outcomes.length / elapsed).toFixed(1), mb(rss.first), mb(warm.rssMb), mb(end), `${(drift * 100).toFixed(1)}%`, slope.toFixed(2), mb(rss.peakMb), cpu?.serverCores.toFixed(2) ?? '-', cpu?.clientCores.toFixed(2) ?? '-', cpu?.otherCores.toFixed(2) ?? '-']],
  ),
);
const failed = outcomes.filter((o) => o.status !== 200);
log(`\nRSS series (MB, every ${SAMPLE_MS / 1000} s): ${rss.samples.map((x) => x.rssMb.toFixed(0)).join(' ')}`);
log('');
log(smapsTable(`${Math.round(warm.at / 1000)} s`, warmSmaps, endSmaps));
log(arenaGrowth(warmSmaps?.smaps, endSmaps.smaps));
checks.check('soak', 'every call 200', failed.length === 0, `${outcomes.length} calls, ${failed.length} not 200`);
const counted = okUsage(outcomes);
checks.check('soak', 'usage == 200s', usage.protect === counted.protect && usage.verify === counted.verify, `protect ${usage.protect} used / ${counted.protect} x 200, verify ${usage.verify} / ${counted.verify}`);
checks.check('soak', `RSS at the end within ${TOLERANCE * 100} % of RSS at ${Math.round(warm.at / 1000)} s`, Math.abs(drift) <= TOLERANCE, `${mb(warm.rssMb)} -> ${mb(end)} MB (${(drift * 100).toFixed(1)} %)`);
checks.check('soak', 'clean stop, no error logged', exit.code === 0 && errorLines(server) === 0, `exit ${JSON.stringify(exit)}; ${logSummary(server)}`);
showWarnings(log, server, 1);
process.exit(checks.summary() ? 0 : 1);

/** Resident memory by kind of mapping at the warm point and at the end: where it is, and where it grew. */
function smapsTable(warmLabel: string, warm: typeof warmSmaps, end: typeof endSmaps): string {
  const change = (a: number | undefined, b: number | undefined, digits = 1) =>
    a === undefined || b === undefined ? '-' : `${b - a >= 0 ? '+' : ''}${(b - a).toFixed(digits)}`;
  const row = (name: string, a: number | undefined, b: number | undefined) => [name, mb(a), mb(b), change(a, b)];
  return table(
    ['resident memory by mapping (smaps)', `MB at ${warmLabel}`, 'MB at end', 'change', ''],
    [
      ...CATEGORIES.map((c) => [...row(c, warm?.smaps?.mb[c], end.smaps?.mb[c]), MEANING[c]]),
      [...row('total', warm?.smaps?.totalMb, end.smaps?.totalMb), 'sum of the above'],
      [...row('VmRSS', warm?.rssMb, end.rssMb), 'read right after, for comparison'],
      ['thread arenas, count', String(warm?.smaps?.arenas ?? '-'), String(end.smaps?.arenas ?? '-'), change(warm?.smaps?.arenas, end.smaps?.arenas, 0), '64 MiB arena windows'],
    ],
  );
}

/** The arena windows that changed since the warm point, largest growth first: glibc grows one arena at a time, in steps. */
function arenaGrowth(warm: Smaps | undefined, end: Smaps | undefined): string {
  if (!warm || !end) return 'thread arenas that changed: -';
  const changed = [...new Set([...warm.arenaMb.keys(), ...end.arenaMb.keys()])]
    .map((start) => ({ start, change: (end.arenaMb.get(start) ?? 0) - (warm.arenaMb.get(start) ?? 0) }))
    .filter((a) => Math.abs(a.change) >= 0.1)
    .sort((a, b) => b.change - a.change);
  return `thread arenas that changed (start address, MB): ${changed.map((a) => `${a.start} ${a.change >= 0 ? '+' : ''}${a.change.toFixed(1)}`).join(', ') || 'none'}`;
}

/** Least-squares slope of RSS over time, MB per minute. */
function trend(samples: readonly RssSample[]): number {
  if (samples.length < 2) return Number.NaN;
  const xs = samples.map((x) => x.at / 60_000);
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = samples.reduce((a, x) => a + x.rssMb, 0) / samples.length;
  const num = samples.reduce((a, x, i) => a + (xs[i]! - mx) * (x.rssMb - my), 0);
  const den = xs.reduce((a, x) => a + (x - mx) ** 2, 0);
  return num / den;
}
