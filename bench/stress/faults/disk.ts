/**
 * d. The embedded database's file system fails under 4 clients: it fills up
 * (and later has room again), or it turns read-only (as ext4 does on an I/O
 * error). Calls must get a JSON 503 service_unavailable, never a 500 or a
 * dead process. Once space is back, the same server must serve 200s again
 * without a restart; after a read-only file system is repaired and the
 * server restarted, the database must open. Counts must never exceed the
 * 200s answered, and must keep those the database had synced before the
 * fault.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { cpuSnapshot, cpuUse } from '../../cpu-usage.js';
import { countBy, countsTable, label, latencyTable, Load, okUsage, unavailable, type Outcome } from '../support/clients.js';
import { mix, smallJpeg } from '../support/corpus.js';
import { LoopFs } from '../support/loop-fs.js';
import { freePort, sleep } from '../support/net.js';
import { mb, ms } from '../support/report.js';
import { adminOp, logSummary, Serve, showWarnings, type Usage, usageOf } from '../support/server.js';
import { freshDataDir } from '../support/setup.js';
import { checkIntegrity, fmtUsage, OPS, per, probe, timeline, until, type Context, UNDER_LOAD } from './common.js';

const CLIENTS = 4;
const FS_MB = 256;


/** A server on a fresh data directory on a fresh loop file system, under load. */
interface Setup {
  readonly fs: LoopFs;
  readonly dataDir: string;
  readonly server: Serve;
  readonly key: string;
  readonly load: Load;
  readonly t0: number;
}

async function setUp(ctx: Context, scope: string, prepare?: (dataDir: string) => Promise<void>): Promise<Setup | undefined> {
  const problem = LoopFs.problem();
  if (problem) {
    ctx.checks.check(scope, 'scenario can run here', false, problem);
    return undefined;
  }
  const fs = LoopFs.create(FS_MB);
  const dataDir = join(fs.mount, 'data');
  mkdirSync(dataDir, { mode: 0o700 });
  freshDataDir(ctx.template, dataDir);
  fs.sync();
  const server = await Serve.start(await freePort(), { OPTMARK_DATA_DIR: dataDir, ...UNDER_LOAD });
  const key = await server.bootstrapKey();
  await prepare?.(dataDir);
  // On disk, as a database running for more than half a minute would be: the fault hits the server's writes, not our copy.
  fs.sync();
  const load = new Load({ url: server.url, key, clients: CLIENTS, next: mix([smallJpeg()], 0.5) });
  const t0 = performance.now();
  load.start();
  return { fs, dataDir, server, key, load, t0 };
}

/** While the fault lasts: do the health check and a database read answer? */
async function probes(ctx: Context, scope: string, server: Serve, key: string, expectRefusal: boolean): Promise<void> {
  const [ready, usage] = await Promise.all([probe(server.url, '/readyz'), probe(server.url, '/api/v1/usage', key)]);
  ctx.log(`during the fault: GET /readyz ${ready.text}; GET /api/v1/usage ${usage.text}`);
  ctx.checks.check(scope, 'health check answers during the fault', expectRefusal ? ready.status === 503 : ready.status !== 0, `GET /readyz: ${ready.text}${expectRefusal ? ' (503 expected)' : ''}`);
  ctx.checks.check(scope, 'usage answers during the fault', usage.status === 200 || usage.status === 503, `GET /api/v1/usage: ${usage.text}`);
}

/** Cores the server uses with no request to serve: anything much above 0 is a thread spinning. */
async function idleCpu(ctx: Context, scope: string, server: Serve): Promise<void> {
  const a = cpuSnapshot(server.pid);
  await sleep(3_000);
  const use = cpuUse(a, cpuSnapshot(server.pid));
  ctx.checks.check(scope, 'idle once the load stops', use !== undefined && use.serverCores < 0.2, `server CPU over 3 s without requests: ${use ? `${use.serverCores.toFixed(2)} cores` : 'unknown'}`);
}

function judge(ctx: Context, scope: string, outcomes: readonly Outcome[], server: Serve): void {
  ctx.log(countsTable(outcomes));
  ctx.log('');
  ctx.log(latencyTable(outcomes));
  const strange = outcomes.filter((o) => o.status !== 200 && !unavailable(o));
  ctx.checks.check(scope, 'only 200 or JSON 503 service_unavailable + Retry-After', strange.length === 0, strange.length ? `${strange.length} others: ${[...new Set(strange.map(label))].join(', ')}` : `${outcomes.length} answers, ${outcomes.filter(unavailable).length} x 503`);
  ctx.checks.check(scope, 'server stays up', server.running, server.running ? 'running' : `exited ${JSON.stringify(server.exit)}`);
}

/**
 * The fault under load: the probes at 5 s, the load until `endMs`, then the
 * timeline and the properties every fault shares; the outcomes.
 */
async function duringFault(ctx: Context, scope: string, setup: Setup, event: [string, number], expectRefusal: boolean, endMs: number): Promise<readonly Outcome[]> {
  const { server, key, load, t0 } = setup;
  await until(t0 + 5_000);
  await probes(ctx, scope, server, key, expectRefusal);
  await until(t0 + endMs);
  await load.stop();
  ctx.log(timeline(load.outcomes, t0, [event]));
  ctx.log('');
  judge(ctx, scope, load.outcomes, server);
  return load.outcomes;
}

/** Accounts that make their first call while the disk is full (their counts need new rows, and new rows new blocks). */
const NEWCOMERS = 200;

export async function diskFull(ctx: Context): Promise<void> {
  const scope = 'd. disk full, embedded';
  ctx.log(`\n== ${scope}: ${CLIENTS} clients protect/verify a 10 KB JPEG; the ${FS_MB} MB file system is filled at 3 s, and 2 more clients start calling with the keys of ${NEWCOMERS} accounts that have never been counted; room is made at 13 s, the same server under load for 5 s more; then it is filled again, the server restarted on the full disk, and room made`);
  let keys: string[] = [];
  const setup = await setUp(ctx, scope, async (dataDir) => void (keys = await newcomers(dataDir)));
  if (!setup) return;
  const { fs, dataDir, server, key, t0 } = setup;
  await until(t0 + 3_000);
  const free = fs.freeBytes();
  const taken = fs.fill();
  const fullAt = performance.now();
  ctx.log(`filled: ${mb(taken / 1048576)} MB taken (${mb(free / 1048576)} MB were free); ${fs.freeBytes()} bytes free now`);
  // Counts of known accounts overwrite rows in blocks the database already has; a newcomer's first count is a new row.
  let turn = 0;
  const upload = smallJpeg();
  const newLoad = new Load({ url: server.url, key, clients: 2, next: () => ({ op: turn % 2 ? 'verify' : 'protect', upload, key: keys[turn++ % keys.length]! }) }).start();
  const mainOutcomes = await duringFault(ctx, scope, setup, ['disk full', fullAt], false, 13_000);
  await newLoad.stop();
  const strange = newLoad.outcomes.filter((o) => o.status !== 200 && !unavailable(o));
  ctx.log(`newcomers while the disk was full: ${[...countBy(newLoad.outcomes)].map(([answer, n]) => `${n} x ${answer}`).join(', ')}`);
  ctx.checks.check(scope, 'newcomers: only 200 or JSON 503', strange.length === 0, `${newLoad.outcomes.length} answers ${[...new Set(strange.map(label))].join(', ')}`);
  const outcomes = [...mainOutcomes, ...newLoad.outcomes].sort((a, b) => a.end - b.end);
  const refused = outcomes.filter((o) => o.status !== 200);
  // A refused write sets the store failing: calls get 503 until a retry (every second) is written. ext4 can give a few
  // blocks back as it settles its delayed allocations, so a retry may succeed while the disk is still nearly full.
  ctx.checks.check(
    scope,
    'writes the disk refuses give 503',
    refused.length > 0,
    refused.length
      ? `first refusal ${ms(refused[0]!.end - fullAt)} ms after the disk filled; ${refused.length} x 503 of ${outcomes.length} calls`
      : `no call refused in ${outcomes.length}: every write fitted in blocks the database already had`,
  );
  const whileFull = okUsage(mainOutcomes);
  const newcomersOk = okUsage(newLoad.outcomes);
  const usage = await usageOf(server.url, key).catch((error: Error) => error.message);
  ctx.checks.check(scope, 'usage == 200s (live)', typeof usage !== 'string' && OPS.every((op) => usage[op] === whileFull[op]), `200s: ${fmtUsage(whileFull)}; usage: ${typeof usage === 'string' ? usage : fmtUsage(usage)}`);
  const afterRoom = await recoverLive(ctx, scope, setup);
  const counted = per((op) => whileFull[op] + afterRoom[op]);
  const usageAfter = await usageOf(server.url, key).catch((error: Error) => error.message);
  ctx.checks.check(scope, 'usage == 200s after room was made (same server)', typeof usageAfter !== 'string' && OPS.every((op) => usageAfter[op] === counted[op]), `200s: ${fmtUsage(counted)}; usage: ${typeof usageAfter === 'string' ? usageAfter : fmtUsage(usageAfter)}`);
  fs.fill();
  await idleCpu(ctx, scope, server);
  const exit = await server.stop();
  ctx.checks.check(scope, 'exit 0 on SIGTERM, disk full', exit.code === 0, `exit ${JSON.stringify(exit)}; ${logSummary(server)}`);
  showWarnings(ctx.log, server);

  // A start needs new blocks (lock file, admin socket, the database's own files): the disk being full must show as a clean refusal or 503s.
  const more = await startDuringFault(ctx, scope, 'full disk', dataDir, key);
  fs.unfill();
  await reopen(ctx, scope, dataDir, key, per((op) => counted[op] + more[op]), true, async (url) => {
    // The newcomers' counts were refused by the disk, kept in memory, and written once room was made: after a restart they must all be there.
    const usages = await Promise.all(keys.map((k) => usageOf(url, k)));
    const total = per((op) => usages.reduce((sum, u) => sum + u[op], 0));
    ctx.checks.check(scope, "newcomers' usage == their 200s after a restart", OPS.every((op) => total[op] === newcomersOk[op]), `200s: ${fmtUsage(newcomersOk)}; usage over the ${keys.length} accounts: ${fmtUsage(total)}`);
  });
}

/** NEWCOMERS accounts with a key each, made through the running server's admin socket; their keys. */
async function newcomers(dataDir: string): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < NEWCOMERS; i++) {
    await adminOp(dataDir, { op: 'createAccount', name: `newcomer-${i}`, plan: 'pro' });
    keys.push((await adminOp<{ key: string }>(dataDir, { op: 'issueKey', account: `newcomer-${i}` })).key);
  }
  return keys;
}

/**
 * Room is made while the same server runs under load: the write-behind
 * retries every second, so calls sent from 2 s on must all get 200 again,
 * without a restart. Returns the 200s of this phase.
 */
async function recoverLive(ctx: Context, scope: string, setup: Setup): Promise<Usage> {
  const { fs, server, key } = setup;
  fs.unfill();
  const roomAt = performance.now();
  const load = new Load({ url: server.url, key, clients: CLIENTS, next: mix([smallJpeg()], 0.5, 7) }).start();
  await sleep(5_000);
  await load.stop();
  const late = load.outcomes.filter((o) => o.start >= roomAt + 2_000);
  const lateRefused = late.filter((o) => o.status !== 200);
  const firstOk = load.outcomes.find((o) => o.status === 200);
  ctx.log(`room made: first 200 ${firstOk ? `${ms(firstOk.end - roomAt)} ms after` : 'never'}; ${[...countBy(load.outcomes)].map(([answer, n]) => `${n} x ${answer}`).join(', ')}`);
  ctx.checks.check(scope, 'serves again once room is made, without a restart', late.length > 0 && lateRefused.length === 0, `${late.length} calls sent 2 s or more after room was made, ${lateRefused.length} not 200 ${[...new Set(lateRefused.map(label))].join(', ')}`);
  const strange = load.outcomes.filter((o) => o.status !== 200 && !unavailable(o));
  ctx.checks.check(scope, 'only 200 or JSON 503 while recovering', strange.length === 0, `${load.outcomes.length} answers`);
  return okUsage(load.outcomes);
}

/** Start on the broken file system: it may refuse to start (exit != 0, saying why) or serve 200s and 503s; it must not hang or answer 500. */
async function startDuringFault(ctx: Context, scope: string, fault: string, dataDir: string, key: string): Promise<Usage> {
  const property = `start on a ${fault}: refused cleanly or serves`;
  let server: Serve;
  try {
    server = await Serve.start(await freePort(), { OPTMARK_DATA_DIR: dataDir, ...UNDER_LOAD }, { ready: false, timeoutMs: 30_000 });
  } catch (error) {
    const message = (error as Error).message.replace(/omk_[0-9A-Za-z]+/g, 'omk_[masked]');
    const exited = /exited during start \((\{[^)]*\})\)/.exec(message)?.[1];
    const named = /ENOSPC|no space|EROFS|read-only/i.test(message);
    ctx.log(`start on a ${fault}: ${message.slice(0, 1500)}`);
    ctx.checks.check(scope, property, exited !== undefined, `${exited ? `did not start, exit ${exited}` : 'hung'}; the message ${named ? 'names' : 'does NOT name'} the cause: ${message.split('\n').find((l) => /Error|optmark:/.test(l))?.trim() ?? '-'}`);
    return { protect: 0, verify: 0 };
  }
  const load = new Load({ url: server.url, key, clients: CLIENTS, next: mix([smallJpeg()], 0.5, 5) }).start();
  await sleep(3_000);
  await load.stop();
  const ready = await probe(server.url, '/readyz');
  ctx.log(`started on a ${fault}; GET /readyz ${ready.text}`);
  ctx.log(countsTable(load.outcomes));
  const strange = load.outcomes.filter((o) => o.status !== 200 && !unavailable(o));
  ctx.checks.check(scope, property, strange.length === 0, `started; ${load.outcomes.length} calls, ${strange.length} neither 200 nor 503 ${[...new Set(strange.map(label))].join(', ')}`);
  const exit = await server.stop();
  ctx.checks.check(scope, `exit 0 on SIGTERM after a start on a ${fault}`, exit.code === 0, `exit ${JSON.stringify(exit)}; ${logSummary(server)}`);
  showWarnings(ctx.log, server);
  return okUsage(load.outcomes);
}

export async function readOnly(ctx: Context): Promise<void> {
  const scope = 'd. read-only, embedded';
  ctx.log(`\n== ${scope}: ${CLIENTS} clients protect/verify a 10 KB JPEG; the file system turns read-only (ext4 error, errors=remount-ro) at 3 s; load stops at 10 s`);
  const setup = await setUp(ctx, scope);
  if (!setup) return;
  const { fs, dataDir, server, key, t0 } = setup;
  await until(t0 + 3_000);
  const brokenAt = performance.now();
  fs.breakToReadOnly();
  ctx.log(`file system read-only: ${fs.readOnly}`);
  const outcomes = await duringFault(ctx, scope, setup, ['read-only', brokenAt], true, 10_000);
  const firstRefusal = outcomes.find((o) => o.status !== 200 && o.start >= brokenAt);
  // The write-behind runs every 10 ms; a batch unanswered for MAX_WRITE_LAG_MS (2 s) stops the 200s: allow 1 s more.
  const lateOk = outcomes.filter((o) => o.status === 200 && o.start >= brokenAt + 3_000);
  ctx.checks.check(
    scope,
    'refuses (503) once the database cannot be written',
    lateOk.length === 0,
    `first refusal ${firstRefusal ? `${ms(firstRefusal.end - brokenAt)} ms after the fault` : 'never'}; ${lateOk.length} calls sent 3 s or more after it got 200`,
  );
  await idleCpu(ctx, scope, server);
  const stopBegan = performance.now();
  const exit = await server.stop();
  ctx.checks.check(scope, 'stops on SIGTERM', exit.signal === null, `${exit.signal === 'SIGKILL' ? 'still running, SIGKILLed' : `exit ${exit.code}`} ${ms(performance.now() - stopBegan)} ms after SIGTERM; ${logSummary(server)}`);
  showWarnings(ctx.log, server, 3);
  const more = await startDuringFault(ctx, scope, 'read-only file system', dataDir, key);
  const fsck = fs.repair();
  ctx.log(`unmounted, e2fsck -fy: exit ${fsck.status} (${fsck.output}), mounted again`);
  const before = okUsage(outcomes.filter((o) => o.end < brokenAt));
  const counted = okUsage(outcomes);
  ctx.log(`200s answered before the fault: ${fmtUsage(before)}; in all: ${fmtUsage(counted)}`);
  // Each batch is synced to disk before the next: what was answered well before the fault (half a second: batches
  // run every 10 ms, but can wait behind a busy database thread) must have survived it.
  const settled = okUsage(outcomes.filter((o) => o.end < brokenAt - 500));
  await reopen(ctx, scope, dataDir, key, per((op) => counted[op] + more[op]), false, async (url) => {
    const usage = await usageOf(url, key);
    ctx.checks.check(scope, 'counts of 200s answered 0.5 s or more before the fault survive it', OPS.every((op) => usage[op] >= settled[op]), `usage ${fmtUsage(usage)}; 200s answered 0.5 s or more before the fault: ${fmtUsage(settled)}, before it at all: ${fmtUsage(before)}`);
  });
}

/**
 * Start again on the recovered data directory: the database must open and
 * count exactly from there; its usage must equal the 200s (`exact`) or at
 * least never exceed them. `more` adds the scenario's own checks on the
 * reopened server, before anything new is counted.
 */
async function reopen(ctx: Context, scope: string, dataDir: string, key: string, answered: Usage, exact: boolean, more?: (url: string) => Promise<void>): Promise<void> {
  await checkIntegrity(ctx, scope, dataDir);
  let server: Serve;
  try {
    server = await Serve.start(await freePort(), { OPTMARK_DATA_DIR: dataDir, ...UNDER_LOAD });
  } catch (error) {
    ctx.checks.check(scope, 'database opens after recovery', false, (error as Error).message.slice(0, 1500));
    return;
  }
  const usage = await usageOf(server.url, key);
  ctx.checks.check(scope, 'database opens after recovery', true, `usage ${fmtUsage(usage)}`);
  const lost = per((op) => answered[op] - usage[op]);
  ctx.checks.check(
    scope,
    exact ? 'usage == 200s after recovery' : 'usage <= 200s after recovery',
    OPS.every((op) => (exact ? lost[op] === 0 : lost[op] >= 0)),
    `usage ${fmtUsage(usage)}; 200s answered: ${fmtUsage(answered)}; lost: ${fmtUsage(lost)}`,
  );
  await more?.(server.url);
  const load = new Load({ url: server.url, key, clients: CLIENTS, next: mix([smallJpeg()], 0.5, 3) }).start();
  await sleep(3_000);
  await load.stop();
  const after = await usageOf(server.url, key);
  const added = okUsage(load.outcomes);
  ctx.checks.check(
    scope,
    'exact counting after recovery',
    OPS.every((op) => after[op] - usage[op] === added[op]) && load.outcomes.every((o) => o.status === 200),
    `${load.outcomes.length} calls, ${fmtUsage(added)} x 200; usage grew by ${fmtUsage(per((op) => after[op] - usage[op]))}`,
  );
  const exit = await server.stop();
  ctx.checks.check(scope, 'recovered server stops cleanly', exit.code === 0, `exit ${JSON.stringify(exit)}; ${logSummary(server)}`);
}
