/**
 * `npm run bench:dashboard`: a batch of 25 photos of about 5 MB marked
 * through the Mark page in Debian's Chromium, against the same 25 files sent
 * by a script that does the same work around the calls: the same
 * already-opted-out check before sending (the same reader), three uploads at
 * a time, each answer decoded from base64, to the same server's
 * POST /api/v1/protect. Rounds alternate page and script; the medians and
 * their ratio are reported (target: the page within 1.5x the script), with
 * the CPU Chromium, the server and this process used, as shares of one core.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { markOnPage } from './mark-page.js';
import { readOptOut } from '../src/core/opt-out-reader.js';
import { ensureBuilt, ensureTemplate, killAllServers, startBenchServer } from './http-server.js';
import { generate } from './images.js';
import { median } from './timing.js';
import { treeCpuSeconds } from './cpu-usage.js';

const ROOT = join(import.meta.dirname, '..');
const TMP = join(ROOT, '.bench-tmp', 'dashboard');
const FILES = 25;
const PARALLEL = 3;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const log = (line = '') => process.stdout.write(`${line}\n`);

process.once('SIGINT', () => {
  killAllServers();
  process.exit(130);
});


const ownCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

async function main(): Promise<void> {
  ensureBuilt(ROOT, log);
  const template = ensureTemplate(ROOT, join(ROOT, '.bench-tmp', 'templates'), log);
  rmSync(TMP, { recursive: true, force: true });
  mkdirSync(join(TMP, 'photos'), { recursive: true });
  log(`optmark dashboard benchmark: ${FILES} JPEG photos of about 5 MB, the Mark page in Chromium against a script doing the same work, ${ROUNDS} rounds each`);
  log(`node ${process.version}, ${os.cpus()[0]?.model} x${os.cpus().length}`);
  const photos: string[] = [];
  for (let i = 0; i < FILES; i++) {
    const { bytes } = await generate('jpeg', 5 * 1024 * 1024, 1000 + i);
    const path = join(TMP, 'photos', `photo ${String(i + 1).padStart(2, '0')}.jpg`);
    await import('node:fs').then((fs) => fs.writeFileSync(path, bytes));
    photos.push(path);
  }
  const totalMb = photos.reduce((n, p) => n + readFileSync(p).length, 0) / 1024 / 1024;
  log(`  ${FILES} files, ${totalMb.toFixed(1)} MB in all`);

  const server = await startBenchServer({ root: ROOT, template, dataDir: join(TMP, 'data'), logPath: join(TMP, 'server.log'), env: { OPTMARK_LOG_LEVEL: 'warn' } });
  try {
    await server.cli(['accounts', 'create', '--name', 'bench', '--plan', 'pro', '--json']);
    const user = (await server.cli(['users', 'create', '--account', 'bench', '--email', 'bench@bench.example', '--role', 'owner', '--json'])) as { setupUrl: string };
    const { key } = (await server.cli(['keys', 'issue', '--account', 'bench', '--user', 'bench@bench.example', '--json'])) as { key: string };

    const browser = await chromium.launch({
      executablePath: execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim(),
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    const context = await browser.newContext();
    const page = await context.newPage();
    const link = new URL(user.setupUrl);
    await page.goto(`${server.url}${link.pathname}${link.search}`);
    await page.getByLabel('New password').fill('benchmark password, long enough');
    await Promise.all([page.waitForURL(/\/overview/), page.getByRole('button', { name: 'Set the password and sign in' }).click()]);

    const viaPage = async () => {
      const ms = await markOnPage(page, server.url, photos);
      return ms;
    };

    const viaScript = async () => {
      const started = performance.now();
      let next = 0;
      const worker = async () => {
        while (next < photos.length) {
          const path = photos[next++]!;
          const bytes = readFileSync(path);
          if (readOptOut(bytes).optedOut) continue;
          const form = new FormData();
          form.append('image', new Blob([bytes], { type: 'image/jpeg' }), path.slice(path.lastIndexOf('/') + 1));
          const response = await fetch(`${server.url}/api/v1/protect`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
          if (response.status !== 200) throw new Error(`the API answered ${response.status}`);
          const answer = (await response.json()) as { imageBase64: string };
          Buffer.from(answer.imageBase64, 'base64');
        }
      };
      await Promise.all(Array.from({ length: PARALLEL }, worker));
      return performance.now() - started;
    };

    const results: Record<'page' | 'script', Array<{ ms: number; chromium: number; server: number; self: number }>> = { page: [], script: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, run] of [['page', viaPage], ['script', viaScript]] as const) {
        // Chromium runs as children of this process, as the server does: what the tree used beyond those two is Chromium's.
        const sample = () => {
          const serverCpu = treeCpuSeconds(server.pid);
          const self = ownCpu();
          return { chromium: treeCpuSeconds(process.pid) - self - serverCpu, server: serverCpu, self };
        };
        const before = sample();
        const ms = await run();
        const after = sample();
        const seconds = ms / 1000;
        results[name].push({ ms, chromium: (after.chromium - before.chromium) / seconds, server: (after.server - before.server) / seconds, self: (after.self - before.self) / seconds });
        log(`  round ${round + 1} ${name.padEnd(6)} ${(ms / 1000).toFixed(2)} s  CPU (cores): Chromium ${results[name].at(-1)!.chromium.toFixed(2)}, server ${results[name].at(-1)!.server.toFixed(2)}, this process ${results[name].at(-1)!.self.toFixed(2)}`);
      }
    }
    await browser.close();

    const summary = (name: 'page' | 'script') => ({
      ms: median(results[name].map((r) => r.ms)),
      chromium: median(results[name].map((r) => r.chromium)),
      server: median(results[name].map((r) => r.server)),
      self: median(results[name].map((r) => r.self)),
    });
    const p = summary('page');
    const s = summary('script');
    const ratio = p.ms / s.ms;
    log();
    log(`page   median ${(p.ms / 1000).toFixed(2)} s (${((totalMb / p.ms) * 1000).toFixed(1)} MB/s); Chromium used ${p.chromium.toFixed(2)} cores, the server ${p.server.toFixed(2)}`);
    log(`script median ${(s.ms / 1000).toFixed(2)} s (${((totalMb / s.ms) * 1000).toFixed(1)} MB/s); the script used ${s.self.toFixed(2)} cores, the server ${s.server.toFixed(2)}`);
    log(`page / script: x${ratio.toFixed(2)} (target <= 1.5): ${ratio <= 1.5 ? 'met' : 'MISSED'}`);
    if (ratio > 1.5) process.exitCode = 1;
  } finally {
    await server.stop();
  }
}

await main();
