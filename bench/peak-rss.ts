/**
 * `npm run bench:rss` (and part of `npm run bench`): the server's peak
 * resident memory under 8 concurrent uploads of about 25 MB, as `npm start`
 * runs it (one process, the embedded database in it). For each format, 8
 * protect calls at once, then 8 verify calls at once of the marked file
 * (verify decodes pixels for the fingerprint), three rounds each; the peak
 * (VmHWM from /proc) is read after each phase. Target (issue "Scale"): below
 * 1.5 GB per process. Results go to .bench-tmp/bench-rss.json.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { ensureBuilt, ensureTemplate, killAllServers, startBenchServer, type BenchServer } from './http-server.js';
import { generate, type Format } from './images.js';
import { targetLine, type Target } from './report.js';

const ROOT = join(import.meta.dirname, '..');
const WORK = join(ROOT, '.bench-tmp', 'rss');
const RESULTS = join(ROOT, '.bench-tmp', 'bench-rss.json');
const CONCURRENT = 8;
const ROUNDS = 3;
/** About 25 MB, and with the multipart framing still under the server's 25 MiB upload limit. */
const TARGET_BYTES = 23.5 * 1024 * 1024;
const RSS_LIMIT_MB = 1500;
const FORMATS: readonly Format[] = ['jpeg', 'png', 'webp'];
const MIME: Record<Format, string> = { jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp' };
const log = (line = '') => process.stdout.write(`${line}\n`);

export interface RssPhase {
  readonly format: Format;
  readonly op: 'protect' | 'verify';
  readonly bytes: number;
  readonly width: number;
  readonly height: number;
  /** Peak RSS of the process so far (VmHWM), MB, after this phase. */
  readonly peakMb: number;
  /** RSS when the phase ended, MB. */
  readonly rssMb: number;
  readonly seconds: number;
}

async function call(server: BenchServer, key: string, op: 'protect' | 'verify', format: Format, bytes: Uint8Array): Promise<Uint8Array | undefined> {
  const form = new FormData();
  form.append('image', new Blob([bytes], { type: MIME[format] }), `big.${format === 'jpeg' ? 'jpg' : format}`);
  const response = await fetch(`${server.url}/api/v1/${op}`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${op} ${format}: HTTP ${response.status}: ${text.slice(0, 300)}`);
  const json = JSON.parse(text) as { imageBase64?: string; optedOut?: boolean };
  if (op === 'verify') {
    if (json.optedOut !== true) throw new Error(`verify ${format}: the marked file does not verify as opted out`);
    return undefined;
  }
  return Buffer.from(json.imageBase64 ?? '', 'base64');
}

async function main(): Promise<void> {
  mkdirSync(WORK, { recursive: true });
  ensureBuilt(ROOT, log);
  const template = ensureTemplate(ROOT, join(ROOT, '.bench-tmp', 'http'), log);
  log(`peak RSS: ${CONCURRENT} concurrent uploads of about 25 MB per format, protect then verify, ${ROUNDS} rounds each, one server process (npm start's set-up)`);
  const server = await startBenchServer({
    root: ROOT,
    template,
    dataDir: join(WORK, 'data'),
    logPath: join(WORK, 'server.log'),
    env: { OPTMARK_LOG_LEVEL: 'warn', OPTMARK_PROTECT_LIMIT: '100000', OPTMARK_VERIFY_LIMIT: '100000', OPTMARK_MAX_IN_FLIGHT_PER_KEY: '16' },
  });
  const phases: RssPhase[] = [];
  const startMb = server.memory()?.rssMb ?? Number.NaN;
  try {
    await server.cli(['accounts', 'create', '--name', 'bench', '--plan', 'pro', '--json']);
    const key = String((await server.cli(['keys', 'issue', '--account', 'bench', '--json'])).key);
    for (const [i, format] of FORMATS.entries()) {
      const image = await generate(format, TARGET_BYTES, 250 + i);
      let marked: Uint8Array | undefined;
      for (const op of ['protect', 'verify'] as const) {
        const started = performance.now();
        for (let round = 0; round < ROUNDS; round++) {
          const input = op === 'protect' ? image.bytes : marked!;
          const results = await Promise.all(Array.from({ length: CONCURRENT }, () => call(server, key, op, format, input)));
          marked ??= results[0];
        }
        const memory = server.memory();
        const phase: RssPhase = { format, op, bytes: image.bytes.length, width: image.width, height: image.height, peakMb: memory?.peakRssMb ?? Number.NaN, rssMb: memory?.rssMb ?? Number.NaN, seconds: (performance.now() - started) / 1000 };
        phases.push(phase);
        log(`  ${op.padEnd(7)} ${format.padEnd(4)} ${(phase.bytes / 1e6).toFixed(1)} MB (${image.width}x${image.height}): peak RSS so far ${phase.peakMb.toFixed(0)} MB, now ${phase.rssMb.toFixed(0)} MB (${phase.seconds.toFixed(1)} s)`);
      }
    }
  } finally {
    await server.stop();
    rmSync(server.dataDir, { recursive: true, force: true });
  }
  const peakMb = Math.max(...phases.map((p) => p.peakMb));
  const target: Target = { name: `peak RSS under ${CONCURRENT} concurrent 25 MB uploads < ${RSS_LIMIT_MB} MB per process`, pass: peakMb < RSS_LIMIT_MB, detail: `${peakMb.toFixed(0)} MB (after start ${startMb.toFixed(0)} MB)` };
  log(targetLine(target, process.stdout.isTTY));
  writeFileSync(RESULTS, `${JSON.stringify({ date: new Date().toISOString(), environment: { node: process.version, cpus: os.cpus().length, glibcTunables: process.env.GLIBC_TUNABLES ?? null }, method: { concurrent: CONCURRENT, rounds: ROUNDS, targetBytes: TARGET_BYTES }, startMb, phases, peakMb, limitMb: RSS_LIMIT_MB, target }, null, 2)}\n`);
  log(`results written to ${RESULTS}`);
}

main().catch((error: unknown) => {
  killAllServers();
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
