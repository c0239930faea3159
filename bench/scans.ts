/**
 * `npm run bench:scans`: images checked per second by a repository scan of
 * 2,000 JPEGs of about 100 KB, against the same files sent to
 * POST /api/v1/verify by a client keeping OPTMARK_DECODE_CONCURRENCY calls
 * in flight (the scan's own concurrency), on the same server (`optmark
 * serve`, the embedded database) in one run. The repository is served by
 * git daemon on loopback; its fetch is timed apart. Target: the scan at
 * least as fast as the calls.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { ensureBuilt, ensureTemplate, killAllServers, startBenchServer } from './http-server.js';
import { generate } from './images.js';
import { makeRepository, serveRepositories } from '../test/support/git-server.js';

const ROOT = join(import.meta.dirname, '..');
const TMP = join(ROOT, '.bench-tmp', 'scans');
const IMAGES = Number(process.env.BENCH_SCAN_IMAGES ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONCURRENCY = Number(process.env.OPTMARK_DECODE_CONCURRENCY ?? os.availableParallelism());
const log = (line = '') => process.stdout.write(`${line}\n`);

process.once('SIGINT', () => {
  killAllServers();
  process.exit(130);
});

async function images(): Promise<string> {
  const dir = join(TMP, `images-${IMAGES}`);
  if (existsSync(join(dir, 'done'))) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'files'), { recursive: true });
  log(`generating ${IMAGES} JPEGs of about 100 KB ...`);
  for (let i = 0; i < IMAGES; i++) {
    const { bytes } = await generate('jpeg', 100_000, 1000 + i);
    const folder = join(dir, 'files', `set-${String(Math.floor(i / 100)).padStart(2, '0')}`);
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, `photo-${String(i).padStart(4, '0')}.jpg`), bytes);
  }
  writeFileSync(join(dir, 'done'), '');
  return dir;
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

async function main(): Promise<void> {
  mkdirSync(TMP, { recursive: true });
  ensureBuilt(ROOT, log);
  const template = ensureTemplate(ROOT, join(TMP, 'template'), log);
  const source = await images();
  const files = listFiles(join(source, 'files'));
  const totalBytes = files.reduce((sum, f) => sum + readFileSync(f).length, 0);
  log(`${files.length} images, ${(totalBytes / 1e6).toFixed(1)} MB (${Math.round(totalBytes / files.length / 1000)} KB each on average)`);

  // Packed, as a forge keeps its repositories (loose objects are compressed again for every fetch: 17 s
  // instead of 1.6 s for this one); made once and kept with the images.
  const repos = join(TMP, `repos-${IMAGES}`);
  if (!existsSync(join(repos, 'packed'))) {
    rmSync(repos, { recursive: true, force: true });
    mkdirSync(repos);
    log('making the repository (git add, commit, repack) ...');
    const bare = makeRepository(
      repos,
      'photos',
      files.map((f) => ({ path: f.slice(join(source, 'files').length + 1), bytes: readFileSync(f) })),
    );
    execFileSync('git', ['-C', bare, 'repack', '-a', '-d', '-q']);
    writeFileSync(join(repos, 'packed'), '');
  }
  const git = await serveRepositories(repos);
  const server = await startBenchServer({
    root: ROOT,
    template,
    dataDir: join(TMP, 'data'),
    logPath: join(TMP, 'server.log'),
    env: { OPTMARK_SCAN_SOURCES: git.daemonUrl, OPTMARK_DECODE_CONCURRENCY: String(CONCURRENCY), OPTMARK_LOG_LEVEL: 'warn' },
  });
  try {
    await server.cli(['accounts', 'create', '--name', 'bench-scans', '--plan', 'pro', '--json']);
    await server.cli(['accounts', 'set-limits', 'bench-scans', '--verify', '100000000', '--scans-per-day', '1000', '--json']);
    await server.cli(['users', 'create', '--account', 'bench-scans', '--email', 'bench@example.com', '--json']);
    const key = String((await server.cli(['keys', 'issue', '--account', 'bench-scans', '--user', 'bench@example.com', '--json'])).key);
    const auth = { Authorization: `Bearer ${key}` };

    const scanOnce = async () => {
      const started = performance.now();
      const created = (await (await fetch(`${server.url}/api/v1/scans`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify({ repository: `${git.daemonUrl}photos.git` }) })).json()) as { id: string };
      for (;;) {
        const scan = (await (await fetch(`${server.url}/api/v1/scans/${created.id}`, { headers: auth })).json()) as Record<string, any>;
        if (scan.status === 'done') {
          const wall = (performance.now() - started) / 1000;
          const runSeconds = (Date.parse(scan.finishedAt) - Date.parse(scan.startedAt)) / 1000;
          const fetchSeconds = scan.fetchMs / 1000;
          const checkSeconds = runSeconds - fetchSeconds;
          if (scan.summary.images !== files.length) throw new Error(`the scan reported ${scan.summary.images} images`);
          return { wall, fetchSeconds, checkSeconds, perSecond: files.length / checkSeconds, perSecondWithFetch: files.length / runSeconds };
        }
        if (scan.status === 'failed' || scan.status === 'cancelled') throw new Error(`scan ${scan.status}: ${scan.reason}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    };
    const bodies = files.map((f) => readFileSync(f));
    const verifyOnce = async () => {
      const started = performance.now();
      let next = 0;
      const worker = async () => {
        while (next < bodies.length) {
          const bytes = bodies[next++]!;
          const form = new FormData();
          form.append('image', new Blob([bytes]), 'photo.jpg');
          const response = await fetch(`${server.url}/api/v1/verify`, { method: 'POST', headers: auth, body: form });
          if (response.status !== 200) throw new Error(`verify answered ${response.status}: ${await response.text()}`);
          await response.arrayBuffer();
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      const seconds = (performance.now() - started) / 1000;
      return { seconds, perSecond: bodies.length / seconds };
    };

    log(`server: optmark serve, embedded database; OPTMARK_DECODE_CONCURRENCY=${CONCURRENCY} (the scan checks that many images at once; the client keeps that many verify calls in flight); ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'})`);
    log('warm-up: one scan and 200 verify calls');
    await scanOnce();
    const warm = bodies.slice(0, 200);
    for (const bytes of warm) {
      const form = new FormData();
      form.append('image', new Blob([bytes]), 'photo.jpg');
      await (await fetch(`${server.url}/api/v1/verify`, { method: 'POST', headers: auth, body: form })).arrayBuffer();
    }
    const scans: Array<Awaited<ReturnType<typeof scanOnce>>> = [];
    const verifies: Array<Awaited<ReturnType<typeof verifyOnce>>> = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const scan = await scanOnce();
      scans.push(scan);
      log(`round ${round} scan:   ${scan.perSecond.toFixed(1)} images/s checking (${scan.checkSeconds.toFixed(2)} s), fetch ${scan.fetchSeconds.toFixed(2)} s, ${scan.perSecondWithFetch.toFixed(1)} images/s with the fetch`);
      const verify = await verifyOnce();
      verifies.push(verify);
      log(`round ${round} verify: ${verify.perSecond.toFixed(1)} images/s (${verify.seconds.toFixed(2)} s)`);
    }
    const best = <T>(list: T[], key: (t: T) => number) => Math.max(...list.map(key));
    const scanRate = best(scans, (s) => s.perSecond);
    const scanRateWithFetch = best(scans, (s) => s.perSecondWithFetch);
    const verifyRate = best(verifies, (v) => v.perSecond);
    log('');
    log(`| ${files.length} images of ~100 KB | images/s | ratio to verify calls |`);
    log('|---|---|---|');
    log(`| POST /api/v1/verify, ${CONCURRENCY} in flight | ${verifyRate.toFixed(1)} | 1.00 |`);
    log(`| repository scan, checking | ${scanRate.toFixed(1)} | ${(scanRate / verifyRate).toFixed(2)} |`);
    log(`| repository scan, fetch included | ${scanRateWithFetch.toFixed(1)} | ${(scanRateWithFetch / verifyRate).toFixed(2)} |`);
    log(`| the fetch alone (git daemon, loopback) | ${Math.min(...scans.map((s) => s.fetchSeconds)).toFixed(2)} s | |`);
    log('');
    log(`target: the scan's checking at least as fast as the verify calls: ${scanRate >= verifyRate ? 'met' : 'MISSED'} (best of ${ROUNDS} rounds each)`);
  } finally {
    await server.stop();
    await git.close();
  }
}

main().catch((error: unknown) => {
  killAllServers();
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});

