/**
 * `npm run bench:vault`: a batch of 25 JPEG photos of about 5 MB marked
 * through the Mark page in Debian's Chromium with the account's Private
 * Vault on (each file's original and marked copy sealed and synced to disk
 * before its answer) against the same batch with the vault off, on the same
 * server in one run. Rounds alternate off and on; after each round with the
 * vault on, the vault is emptied (not timed), so that every round stores all
 * 50 files anew. The medians and their ratio are reported (target: on within
 * 1.3x off), with the server's CPU, as shares of one core.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { ensureBuilt, ensureTemplate, killAllServers, startBenchServer } from './http-server.js';
import { markOnPage } from './mark-page.js';
import { generate } from './images.js';
import { median } from './timing.js';

const ROOT = join(import.meta.dirname, '..');
const TMP = join(ROOT, '.bench-tmp', 'vault');
const FILES = 25;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const TICKS = 100;
const log = (line = '') => process.stdout.write(`${line}\n`);

process.once('SIGINT', () => {
  killAllServers();
  process.exit(130);
});

/** CPU seconds of one process. */
function cpuOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
  return (f[11]! + f[12]!) / TICKS;
}

async function setVault(page: Page, url: string, on: boolean): Promise<void> {
  await page.goto(`${url}/vault`);
  if (on) {
    await Promise.all([page.waitForURL(`${url}/vault/settings`), page.getByRole('button', { name: 'Turn the vault on' }).click()]);
  } else {
    await page.getByLabel(/Are deleted now/).check();
    await Promise.all([page.waitForURL(`${url}/vault/settings`), page.getByRole('button', { name: 'Turn the vault off' }).click()]);
  }
}

async function main(): Promise<void> {
  ensureBuilt(ROOT, log);
  const template = ensureTemplate(ROOT, join(ROOT, '.bench-tmp', 'templates'), log);
  rmSync(TMP, { recursive: true, force: true });
  mkdirSync(join(TMP, 'photos'), { recursive: true });
  log(`optmark vault benchmark: ${FILES} JPEG photos of about 5 MB through the Mark page in Chromium, the Private Vault off against on, ${ROUNDS} rounds each`);
  log(`node ${process.version}, ${os.cpus()[0]?.model} x${os.cpus().length}`);
  const photos: string[] = [];
  for (let i = 0; i < FILES; i++) {
    const { bytes } = await generate('jpeg', 5 * 1024 * 1024, 2000 + i);
    const path = join(TMP, 'photos', `photo ${String(i + 1).padStart(2, '0')}.jpg`);
    writeFileSync(path, bytes);
    photos.push(path);
  }
  const totalMb = photos.reduce((sum, p) => sum + readFileSync(p).byteLength, 0) / 1024 / 1024;
  log(`${FILES} files, ${totalMb.toFixed(1)} MB in all`);

  const server = await startBenchServer({ root: ROOT, template, dataDir: join(TMP, 'data'), logPath: join(TMP, 'server.log'), env: { OPTMARK_LOG_LEVEL: 'warn' } });
  try {
    await server.cli(['accounts', 'create', '--name', 'bench', '--plan', 'pro', '--json']);
    const user = (await server.cli(['users', 'create', '--account', 'bench', '--email', 'bench@bench.example', '--role', 'owner', '--json'])) as { setupUrl: string };
    const browser = await chromium.launch({
      executablePath: execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim(),
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    const page = await (await browser.newContext()).newPage();
    page.on('dialog', (dialog) => void dialog.accept());
    const link = new URL(user.setupUrl);
    await page.goto(`${server.url}${link.pathname}${link.search}`);
    await page.getByLabel('New password').fill('benchmark password, long enough');
    await Promise.all([page.waitForURL(/\/overview/), page.getByRole('button', { name: 'Set the password and sign in' }).click()]);

    const markBatch = async (expectKept: boolean) => {
      const ms = await markOnPage(page, server.url, photos);
      const kept = await page.locator('#rows .vault-note', { hasText: 'Kept in your Private Vault' }).count();
      if (kept !== (expectKept ? FILES : 0)) throw new Error(`${kept} files kept in the vault, expected ${expectKept ? FILES : 0}`);
      return ms;
    };

    const results: Record<'off' | 'on', Array<{ ms: number; server: number }>> = { off: [], on: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of ['off', 'on'] as const) {
        if (mode === 'on') await setVault(page, server.url, true);
        const before = cpuOf(server.pid);
        const ms = await markBatch(mode === 'on');
        const serverCores = (cpuOf(server.pid) - before) / (ms / 1000);
        results[mode].push({ ms, server: serverCores });
        if (mode === 'on') {
          const stored = readdirSync(join(server.dataDir, 'vault')).length;
          log(`  round ${round + 1} on   ${(ms / 1000).toFixed(2)} s  server ${serverCores.toFixed(2)} cores; ${stored} sealed files on disk`);
          await setVault(page, server.url, false);
        } else {
          log(`  round ${round + 1} off  ${(ms / 1000).toFixed(2)} s  server ${serverCores.toFixed(2)} cores`);
        }
      }
    }
    await browser.close();
    const off = median(results.off.map((r) => r.ms));
    const on = median(results.on.map((r) => r.ms));
    const ratio = on / off;
    log();
    log(`vault off median ${(off / 1000).toFixed(2)} s (${((totalMb / off) * 1000).toFixed(1)} MB/s), server ${median(results.off.map((r) => r.server)).toFixed(2)} cores`);
    log(`vault on  median ${(on / 1000).toFixed(2)} s (${((totalMb / on) * 1000).toFixed(1)} MB/s), server ${median(results.on.map((r) => r.server)).toFixed(2)} cores`);
    // The server's CPU per batch (kernel time of the writes and syncs included) is less at the mercy of other work on the machine than the wall time.
    const cpu = (mode: 'off' | 'on') => median(results[mode].map((r) => (r.server * r.ms) / 1000));
    log(`server CPU per batch: off ${cpu('off').toFixed(2)} s, on ${cpu('on').toFixed(2)} s (the vault: ${(((cpu('on') - cpu('off')) / FILES) * 1000).toFixed(0)} ms a file); load average ${os.loadavg()[0]!.toFixed(2)} on ${os.cpus().length} CPUs`);
    log(`on / off: x${ratio.toFixed(2)} (target <= 1.3): ${ratio <= 1.3 ? 'met' : 'MISSED'}`);
    if (ratio > 1.3) process.exitCode = 1;
  } finally {
    await server.stop();
  }
}

await main();
