/**
 * What `optmark protect` and `verify` print on a batch as a program or a
 * person reads it: on a terminal (a pseudo-terminal made by util-linux
 * `script`), with --json, when a run stops (Ctrl-C, the monthly limit, a
 * server that cannot be reached) and under a server's limit of calls in
 * flight. The built command in child processes, a real server in this one.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { protect } from '../../src/app/protect-image.js';
import { childEnv } from '../process/support.js';
import { frontServer } from '../support/front-server.js';
import { startTestServer, type TestServer } from '../support/server.js';

const BIN = fileURLToPath(new URL('../../bin/optmark.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'optmark-batch-output-'));
const data = join(dir, 'data');

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function optmark(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: dir, encoding: 'utf8', env: childEnv({ OPTMARK_DATA_DIR: data, ...env }) }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

const quote = (arg: string) => `'${arg.replaceAll("'", `'\\''`)}'`;

/** The command on a pseudo-terminal (standard output and error both the terminal): what the terminal shows, escapes and carriage returns taken out. */
function onTerminal(args: readonly string[]): Promise<{ code: number; screen: string }> {
  return new Promise((resolve) => {
    const command = [process.execPath, BIN, ...args].map(quote).join(' ');
    execFile('script', ['-qec', command, '/dev/null'], { cwd: dir, encoding: 'utf8', env: childEnv({ OPTMARK_DATA_DIR: data, COLUMNS: '120' }) }, (error, stdout) => {
      // eslint-disable-next-line no-control-regex
      const screen = stdout.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '').replace(/\r\n/g, '\n').replace(/\r/g, '\n');
      resolve({ code: error ? Number(error.code ?? 1) : 0, screen });
    });
  });
}

const jsonLines = (text: string) =>
  text
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

const image = (i: number) => sharp({ create: { width: 24 + i, height: 24, channels: 3, background: { r: (i * 40) % 256, g: 90, b: 30 } } }).png().toBuffer();

/** `mixed`: two marked images and two without the opt-out. */
const mixed = join(dir, 'mixed');
/** `five`: a corrupt PNG first, then five images. */
const five = join(dir, 'five');
let t: TestServer;

/** An account whose key may make `protects` protect calls this month. */
async function keyWithProtects(protects: number): Promise<string> {
  const name = `batch-output-${protects}-${Math.random().toString(36).slice(2, 8)}`;
  await t.key('pro', name);
  await t.server.admin.setLimits(name, { protectPerMonth: protects });
  return (await t.server.admin.issueKey(name)).key;
}

beforeAll(async () => {
  mkdirSync(join(mixed, 'sub'), { recursive: true });
  writeFileSync(join(mixed, 'a-marked.png'), protect(await image(1)).bytes);
  writeFileSync(join(mixed, 'b-plain.png'), await image(2));
  writeFileSync(join(mixed, 'sub', 'c-marked.png'), protect(await image(3)).bytes);
  writeFileSync(join(mixed, 'sub', 'd-plain.png'), await image(4));
  mkdirSync(five);
  writeFileSync(join(five, 'a-broken.png'), (await image(5)).subarray(0, 60));
  for (let i = 1; i <= 5; i++) writeFileSync(join(five, `img${i}.png`), await image(10 + i));
  t = await startTestServer();
});

afterAll(async () => {
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('on a terminal', () => {
  it('verify --json prints every object under the bar, and without --json names the files that do not opt out', async () => {
    const json = await onTerminal(['verify', mixed, '-r', '--json']);
    expect(json.code).toBe(0);
    // The bar was drawn: this is a terminal.
    expect(json.screen).toMatch(/verify \[#+\] 4\/4 100%/);
    expect(jsonLines(json.screen).map((o) => [o.file, o.optedOut])).toEqual([
      [join(mixed, 'a-marked.png'), true],
      [join(mixed, 'b-plain.png'), false],
      [join(mixed, 'sub', 'c-marked.png'), true],
      [join(mixed, 'sub', 'd-plain.png'), false],
    ]);

    const gate = await onTerminal(['verify', mixed, '-r', '--fail-on-unmarked']);
    expect(gate.code).toBe(3);
    expect(gate.screen).toContain(`${join(mixed, 'b-plain.png')}: not opted out (PNG)\n`);
    expect(gate.screen).toContain(`${join(mixed, 'sub', 'd-plain.png')}: not opted out (PNG)\n`);
    // A file that opts out is counted in the bar, not listed.
    expect(gate.screen).not.toContain('a-marked.png');
    expect(gate.screen).toContain('optmark: 2 opted out, 2 not opted out');
  });

  it('protect --json prints every object under the bar', async () => {
    const run = await onTerminal(['protect', mixed, '-r', '--json', '--out', join(dir, 'terminal-out')]);
    expect(run.code).toBe(0);
    expect(run.screen).toMatch(/protect \[#+\] 4\/4 100%/);
    expect(jsonLines(run.screen).map((o) => o.file)).toEqual([join(mixed, 'a-marked.png'), join(mixed, 'b-plain.png'), join(mixed, 'sub', 'c-marked.png'), join(mixed, 'sub', 'd-plain.png')]);
  });
});

describe('--json when a run stops or is refused', () => {
  it('the monthly limit: an object for each file done (each with its outcome), one per file not done, and one for the stop', async () => {
    const key = await keyWithProtects(2);
    const run = await optmark(['protect', five, '--json', '--concurrency', '1', '--out', join(dir, 'quota-out'), '--server', t.url], { OPTMARK_API_KEY: key });
    expect(run.code).toBe(1);
    const objects = jsonLines(run.stdout);
    expect(objects.map((o) => [o.file, o.outcome, o.code])).toEqual([
      [join(five, 'a-broken.png'), 'failed', 'corrupt_image'],
      [join(five, 'img1.png'), 'marked', undefined],
      [join(five, 'img2.png'), 'marked', undefined],
      [join(five, 'img3.png'), 'not-done', 'quota_exceeded'],
      [join(five, 'img4.png'), 'not-done', 'quota_exceeded'],
      [join(five, 'img5.png'), 'not-done', 'quota_exceeded'],
      [undefined, undefined, 'quota_exceeded'],
    ]);
    expect(objects.at(-1)).toMatchObject({ error: expect.stringMatching(/^The monthly protect limit of 2 calls is reached; it resets at .+\. 3 file\(s\) not done/), notDone: 3 });
    // The same in words on standard error without --json, as before.
    expect(run.stderr).not.toContain('monthly protect limit');
  });

  it('inputs that would share an output: the failure object, not the usage', async () => {
    const clash = join(dir, 'clash');
    mkdirSync(join(clash, 'a'), { recursive: true });
    mkdirSync(join(clash, 'b'), { recursive: true });
    writeFileSync(join(clash, 'a', 'photo.png'), await image(20));
    writeFileSync(join(clash, 'b', 'photo.png'), await image(21));
    const run = await optmark(['protect', join(clash, 'a', 'photo.png'), join(clash, 'b', 'photo.png'), '--json', '--out', join(dir, 'clash-out')]);
    expect(run.code).toBe(2);
    expect(jsonLines(run.stdout)).toEqual([{ error: expect.stringContaining('nothing was done: 1 output name(s) would be shared'), code: 'output_names_shared' }]);
    expect(run.stderr).not.toContain('Usage:');
    const words = await optmark(['protect', join(clash, 'a', 'photo.png'), join(clash, 'b', 'photo.png'), '--out', join(dir, 'clash-out')]);
    expect(words.code).toBe(2);
    expect(words.stderr).toMatch(/^optmark: nothing was done: 1 output name\(s\) would be shared\n/);
  });

  it('Ctrl-C: one object per file not done, and {"code": "interrupted"} last; exit 130', async () => {
    const key = await keyWithProtects(100);
    const slow = await frontServer(t.url, async (request) => {
      if (request.url?.startsWith('/api/v1/protect')) await new Promise((resolve) => setTimeout(resolve, 400));
      return undefined;
    });
    try {
      const child = spawn(process.execPath, [BIN, 'protect', five, '--json', '--concurrency', '1', '--out', join(dir, 'interrupted-out'), '--server', slow.url], {
        cwd: dir,
        env: childEnv({ OPTMARK_DATA_DIR: data, OPTMARK_API_KEY: key }),
      });
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      // Once the first image is marked (its line printed), well before the last.
      for (const end = Date.now() + 20_000; !stdout.includes('img1.png') && Date.now() < end; ) await new Promise((resolve) => setTimeout(resolve, 20));
      child.kill('SIGINT');
      expect(await exited).toBe(130);
      const objects = jsonLines(stdout);
      expect(objects.every((o, i) => i === objects.length - 1 || typeof o.outcome === 'string')).toBe(true);
      const notDone = objects.filter((o) => o.outcome === 'not-done');
      expect(notDone.length).toBeGreaterThanOrEqual(2);
      expect(notDone.every((o) => o.code === 'interrupted')).toBe(true);
      expect(objects.at(-1)).toMatchObject({ code: 'interrupted', notDone: notDone.length });
      expect(objects.map((o) => o.file).slice(0, -1)).toEqual([join(five, 'a-broken.png'), ...[1, 2, 3, 4, 5].map((i) => join(five, `img${i}.png`))]);
    } finally {
      await slow.close();
    }
  });
});

describe('a server that cannot be reached', () => {
  it('stops the run after three files in a row fail network_error, naming the cause; the rest are not done', async () => {
    // A port that was just free and is closed again: connections are refused.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    const env = { OPTMARK_URL: `http://127.0.0.1:${port}`, OPTMARK_API_KEY: await keyWithProtects(100) };

    const run = await optmark(['protect', five, '--json', '--concurrency', '1', '--out', join(dir, 'unreachable-out')], env);
    expect(run.code).toBe(1);
    const objects = jsonLines(run.stdout);
    expect(objects.map((o) => [o.outcome, o.code])).toEqual([
      ['failed', 'network_error'],
      ['failed', 'network_error'],
      ['not-done', 'network_error'],
      ['not-done', 'network_error'],
      ['not-done', 'network_error'],
      ['not-done', 'network_error'],
      [undefined, 'network_error'],
    ]);
    expect(objects[0]!.error).toBe(`Cannot reach http://127.0.0.1:${port}: fetch failed (ECONNREFUSED)`);
    expect(objects.at(-1)!.error).toMatch(/^stopped: the server cannot be reached \(3 files in a row: Cannot reach .+ \(ECONNREFUSED\)\); 4 file\(s\) not done/);

    const words = await optmark(['verify', five, '--concurrency', '1'], env);
    expect(words.code).toBe(1);
    expect(words.stderr).toContain(`optmark: stopped: the server cannot be reached (3 files in a row: Cannot reach http://127.0.0.1:${port}: fetch failed (ECONNREFUSED)); 4 file(s) not checked`);
    expect(words.stderr).toContain('optmark: 0 opted out, 2 failed, 4 not done');
  });
});

describe("a server's limit of calls in flight", () => {
  it('--concurrency 8 against a key that may have 2 calls in progress: lowered to 2 at the first refusal, every file checked, no try spent', async () => {
    const many = join(dir, 'many');
    mkdirSync(many);
    for (let i = 0; i < 30; i++) writeFileSync(join(many, `img${String(i).padStart(2, '0')}.png`), await image(30 + i));
    // In front of the server, the admission of a server with OPTMARK_MAX_IN_FLIGHT_PER_KEY=2 and its answer
    // (app/admission.ts), with calls slow enough to overlap.
    let inFlight = 0;
    let refused = 0;
    let most = 0;
    const limited = await frontServer(t.url, async (request) => {
      if (!request.url?.startsWith('/api/v1/verify')) return undefined;
      if (inFlight >= 2) {
        refused++;
        return { status: 429, headers: { 'retry-after': '1' }, body: JSON.stringify({ error: 'This API key already has 2 calls in progress; wait for one to finish', code: 'too_many_requests', requestId: 'in-flight' }) };
      }
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 150));
      inFlight--;
      return undefined;
    });
    try {
      const run = await optmark(['verify', many, '--concurrency', '8', '--json', '--server', limited.url], { OPTMARK_API_KEY: await t.key() });
      expect(run.code, run.stderr).toBe(0);
      expect(jsonLines(run.stdout).filter((o) => o.outcome === 'not-opted-out')).toHaveLength(30);
      // The first eight went out together (two taken, up to six refused, fewer when the first answers came
      // before the last of them reached the server), and after them none was refused.
      expect(refused).toBeGreaterThan(0);
      expect(refused).toBeLessThanOrEqual(6);
      expect(most).toBe(2);
      expect(run.stderr).toContain('optmark: the server takes 2 call(s) at once from this key: 2 file(s) at once from now on');
    } finally {
      await limited.close();
    }
  });
});
