/**
 * `optmark protect` and `verify` on whole folders, as a photographer runs
 * them: the built command in a child process, marking through a real server
 * (in this process) or here. A tree of 60 files (58 images of three formats,
 * one corrupt JPEG, one text file): right names and structure, the failure
 * with its reason, a second run that does nothing and costs nothing, a run
 * stopped by Ctrl-C and run again paying each file once, the retry rule, name
 * clashes refused before any work, nothing overwritten unasked, --in-place
 * keeping permissions, the progress bar on a terminal (tmux) and plain lines
 * otherwise.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verify } from '../../src/index.js';
import { frontServer } from '../support/front-server.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { BIN, filesUnder, killAll, optmark, sleep, spawnOptmark } from './support.js';

let t: TestServer;
let dir: string;
let tree: string;
/** The 58 images of the tree, relative to it. */
const images: string[] = [];

async function makeTree(root: string): Promise<void> {
  const formats = ['jpeg', 'png', 'webp'] as const;
  const folders = ['', 'holidays', 'holidays/2024', 'studio/raw-exports'];
  for (let i = 0; i < 58; i++) {
    const format = formats[i % 3]!;
    const name = join(folders[i % folders.length]!, `img${String(i).padStart(2, '0')}.${format === 'jpeg' ? 'jpg' : format}`);
    const pixels = await sharp({ create: { width: 40 + i, height: 30, channels: 3, background: { r: (i * 37) % 256, g: (i * 91) % 256, b: (i * 13) % 256 } } })
      [format]()
      .toBuffer();
    mkdirSync(join(root, dirname(name)), { recursive: true });
    writeFileSync(join(root, name), pixels);
    images.push(name);
  }
  // A JPEG cut short and a text file.
  writeFileSync(join(root, 'holidays/broken.jpg'), readFileSync(join(root, images[0]!)).subarray(0, 200));
  writeFileSync(join(root, 'studio/notes.txt'), 'shot list');
}

/** Where protect --out puts an input's marked copy. */
const copyOf = (out: string, image: string) => join(out, image.replace(/\.(jpg|png|webp)$/, '-optout.$1'));

async function used(key: string): Promise<number> {
  return ((await (await fetch(`${t.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } })).json()) as { protect: { used: number } }).protect.used;
}

beforeAll(async () => {
  t = await startTestServer();
  dir = mkdtempSync(join(tmpdir(), 'optmark-batch-'));
  tree = join(dir, 'tree');
  await makeTree(tree);
});
afterAll(async () => {
  await killAll();
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('protect a folder through a server', () => {
  it('marks 58 images of a 60-file tree keeping its structure, reports the corrupt one, and a second run does nothing and costs nothing', async () => {
    const key = await t.key('pro', 'batch-remote');
    const out = join(dir, 'out');
    const env = { OPTMARK_API_KEY: key, OPTMARK_DATA_DIR: join(dir, 'unused-data') };
    const args = ['protect', tree, '--recursive', '--concurrency', '8', '--out', out, '--server', t.url, '--report', join(dir, 'first.csv')];
    const first = await optmark(args, env, 60_000);
    expect(first.code, first.stderr).toBe(1);
    expect(first.stderr).toContain(`${join(tree, 'holidays/broken.jpg')}: Corrupt JPEG`);
    expect(first.stderr).toMatch(/optmark: 58 marked, 1 skipped \(not images\), 1 failed; protect calls left this month: 9942\n/);
    // Plain lines, one per file, in the order of the files.
    const lines = first.stdout.trim().split('\n');
    expect(lines).toHaveLength(58);
    expect(lines[0]).toBe(`${join(tree, images.slice().sort()[0]!)} -> ${copyOf(out, images.slice().sort()[0]!)} (marked DMI-PROHIBITED-AIMLTRAINING)`);
    const written = filesUnder(out).map((f) => relative(out, f)).sort();
    expect(written).toEqual(images.map((i) => relative(out, copyOf(out, i))).sort());
    for (const image of images) expect(verify(readFileSync(copyOf(out, image))).optedOut, image).toBe(true);
    expect(await used(key)).toBe(58);
    const report = readFileSync(join(dir, 'first.csv'), 'utf8').trim().split('\r\n');
    expect(report[0]).toBe('file,outcome,output,value,sha256,code,error,requestId');
    expect(report).toHaveLength(61);
    expect(report.filter((r) => r.includes(',marked,'))).toHaveLength(58);
    expect(report.find((r) => r.includes('broken.jpg'))).toMatch(/,failed,,,,corrupt_image,"?Corrupt JPEG/);
    expect(report.find((r) => r.includes('notes.txt'))).toContain(',skipped,');

    const front = await frontServer(t.url, () => undefined);
    try {
      const second = await optmark([...args.slice(0, -4), '--server', front.url], env, 60_000);
      expect(second.code).toBe(1);
      expect(second.stderr).toMatch(/optmark: 0 marked, 58 already marked, 1 skipped \(not images\), 1 failed; protect calls left this month: 9942\n/);
      // Only the corrupt file was sent again (and refused, counting nothing); and the usage at the end.
      expect(front.requests).toBe(2);
    } finally {
      await front.close();
    }
    expect(await used(key)).toBe(58);
  });

  it('stopped by Ctrl-C half way and run again, marks every file once and pays for each once', async () => {
    const key = await t.key('pro', 'batch-interrupted');
    const out = join(dir, 'out-interrupted');
    // Slow answers, so that Ctrl-C comes half way.
    let slow = true;
    const gate = await frontServer(t.url, async (request) => {
      if (slow && request.url?.startsWith('/api/v1/protect')) await sleep(150);
      return undefined;
    });
    try {
      const env = { OPTMARK_API_KEY: key, OPTMARK_URL: gate.url, OPTMARK_DATA_DIR: join(dir, 'unused-data') };
      const child = spawnOptmark(['protect', tree, '--recursive', '--concurrency', '2', '--out', out], env);
      await child.waitFor(() => child.stdout.split('\n').length > 15, 'fifteen files marked', 30_000);
      child.proc.kill('SIGINT');
      const exit = await child.exited;
      expect(exit.code).toBe(130);
      expect(child.stderr).toMatch(/stopped; \d+ file\(s\) not done: run the same command again/);
      const partial = filesUnder(out).length;
      expect(partial).toBeGreaterThan(10);
      expect(partial).toBeLessThan(58);
      // No temporary file left behind.
      expect(filesUnder(out).filter((f) => f.endsWith('.tmp'))).toEqual([]);
      slow = false;
      const again = await optmark(['protect', tree, '--recursive', '--concurrency', '8', '--out', out], env, 60_000);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(new RegExp(`optmark: ${58 - partial} marked, ${partial} already marked, 1 skipped \\(not images\\), 1 failed`));
      expect(filesUnder(out)).toHaveLength(58);
      expect(await used(key)).toBe(58);
    } finally {
      await gate.close();
    }
  });

  it('retries a burst 429 after its Retry-After; the monthly limit is not retried and says when it ends', async () => {
    const few = join(dir, 'few');
    for (const image of images.slice(0, 3)) {
      mkdirSync(dirname(join(few, image)), { recursive: true });
      writeFileSync(join(few, image), readFileSync(join(tree, image)));
    }
    const key = await t.key('pro', 'batch-burst');
    let protects = 0;
    const burst = await frontServer(t.url, (request) => {
      if (!request.url?.startsWith('/api/v1/protect')) return undefined;
      protects++;
      return protects <= 2
        ? { status: 429, headers: { 'retry-after': '1' }, body: JSON.stringify({ error: 'This API key already has 8 calls in progress; wait for one to finish', code: 'too_many_requests', requestId: 'burst' }) }
        : undefined;
    });
    try {
      const run = await optmark(['protect', few, '--recursive', '--concurrency', '1', '--out', join(dir, 'few-out'), '--server', burst.url], { OPTMARK_API_KEY: key }, 60_000);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain('3 marked');
      expect(protects).toBe(5);
      expect(await used(key)).toBe(3);
    } finally {
      await burst.close();
    }

    await t.key('pro', 'batch-broke');
    await t.server.admin.setLimits('batch-broke', { protectPerMonth: 0 });
    const brokeKey = (await t.server.admin.issueKey('batch-broke')).key;
    protects = 0;
    const counting = await frontServer(t.url, (request) => {
      if (request.url?.startsWith('/api/v1/protect')) protects++;
      return undefined;
    });
    try {
      const run = await optmark(['protect', few, '--recursive', '--concurrency', '1', '--out', join(dir, 'broke-out'), '--server', counting.url], { OPTMARK_API_KEY: brokeKey }, 60_000);
      expect(run.code).toBe(1);
      expect(protects).toBe(1);
      expect(run.stderr).toMatch(/optmark: The monthly protect limit of 0 calls is reached; it resets at \d{4}-\d\d-01T00:00:00\.000Z\. 3 file\(s\) not done/);
      expect(existsSync(join(dir, 'broke-out'))).toBe(false);
    } finally {
      await counting.close();
    }

    // verify --server at the month's limit stops the same way: one call, the rest not done.
    await t.server.admin.setLimits('batch-broke', { verifyPerMonth: 0 });
    let verifies = 0;
    const countingVerifies = await frontServer(t.url, (request) => {
      if (request.url?.startsWith('/api/v1/verify')) verifies++;
      return undefined;
    });
    try {
      const report = join(dir, 'broke-verify.csv');
      const run = await optmark(['verify', few, '--recursive', '--concurrency', '1', '--server', countingVerifies.url, '--report', report], { OPTMARK_API_KEY: brokeKey }, 60_000);
      expect(run.code).toBe(1);
      expect(verifies).toBe(1);
      expect(run.stderr).toMatch(/optmark: The monthly verify limit of 0 calls is reached; it resets at \d{4}-\d\d-01T00:00:00\.000Z\. 3 file\(s\) not checked/);
      expect(readFileSync(report, 'utf8')).not.toContain('failed');
    } finally {
      await countingVerifies.close();
    }
  });

  it('takes the key from a file; --key works but warns that it shows', async () => {
    const key = await t.key('pro', 'batch-key-sources');
    const one = join(tree, images[4]!);
    writeFileSync(join(dir, 'key.txt'), `${key}\n`);
    const fromFile = await optmark(['protect', one, '--out', join(dir, 'key-file-out'), '--server', t.url, '--key-file', join(dir, 'key.txt')], {});
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(fromFile.stderr).not.toContain('warning');
    const onCommandLine = await optmark(['protect', one, '--out', join(dir, 'key-out'), '--server', t.url, '--key', key], {});
    expect(onCommandLine.code).toBe(0);
    expect(onCommandLine.stderr).toContain('optmark: warning: --key shows the key in the process list and your shell history');
    const none = await optmark(['protect', one, '--out', join(dir, 'no-key-out'), '--server', t.url], {});
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('calling a server needs an API key: OPTMARK_API_KEY, --key-file FILE');
  });

  it('refuses inputs that would share an output name before any work', async () => {
    const clash = join(dir, 'clash');
    mkdirSync(join(clash, 'a'), { recursive: true });
    mkdirSync(join(clash, 'b'), { recursive: true });
    writeFileSync(join(clash, 'a/photo.jpg'), readFileSync(join(tree, images[0]!)));
    writeFileSync(join(clash, 'b/photo.jpg'), readFileSync(join(tree, images[3]!)));
    writeFileSync(join(clash, 'b/photo!.jpg'), readFileSync(join(tree, images[6]!)));
    let requests = 0;
    const counting = await frontServer(t.url, () => {
      requests++;
      return undefined;
    });
    try {
      const run = await optmark(['protect', join(clash, 'a/photo.jpg'), join(clash, 'b/photo.jpg'), '--out', join(dir, 'clash-out'), '--server', counting.url], { OPTMARK_API_KEY: await t.key() });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`nothing was done: 1 output name(s) would be shared\n  ${join(clash, 'a/photo.jpg')} and ${join(clash, 'b/photo.jpg')} would all be written to ${join(dir, 'clash-out/photo-optout.jpg')}`);
      // Names that differ only in what the output name drops clash too.
      const cleaned = await optmark(['protect', join(clash, 'b'), '--out', join(dir, 'clash-out')], { OPTMARK_DATA_DIR: join(dir, 'data') });
      expect(cleaned.code).toBe(2);
      expect(existsSync(join(dir, 'clash-out'))).toBe(false);
      expect(requests).toBe(0);
      // A folder without a place for its copies: said before anything is made (not even a key ring).
      const nowhere = await optmark(['protect', clash], { OPTMARK_DATA_DIR: join(dir, 'fresh-data') });
      expect(nowhere.code).toBe(2);
      expect(nowhere.stderr).toMatch(/^optmark: a folder's marked copies need a place: --out DIR/);
      expect(existsSync(join(dir, 'fresh-data'))).toBe(false);
    } finally {
      await counting.close();
    }
  });
});

describe('protect a folder here', () => {
  const env = () => ({ OPTMARK_DATA_DIR: join(dir, 'data') });

  it('never replaces a file it did not make unless --overwrite, and --in-place keeps permissions', async () => {
    const out = join(dir, 'local-out');
    mkdirSync(out, { recursive: true });
    const first = images.find((i) => !i.includes('/'))!;
    const inTheWay = copyOf(out, first);
    writeFileSync(inTheWay, 'my own notes, not an image');
    const run = await optmark(['protect', join(tree, first), '--out', out], env());
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`${inTheWay} is in the way and is not this file's marked copy; pass --overwrite to replace it`);
    expect(readFileSync(inTheWay, 'utf8')).toBe('my own notes, not an image');
    expect((await optmark(['protect', join(tree, first), '--out', out, '--overwrite'], env())).code).toBe(0);
    expect(verify(readFileSync(inTheWay)).optedOut).toBe(true);

    const own = join(dir, 'in-place');
    mkdirSync(own);
    writeFileSync(join(own, 'a.png'), readFileSync(join(tree, images[1]!)));
    chmodSync(join(own, 'a.png'), 0o640);
    const inPlace = await optmark(['protect', own, '--in-place'], env());
    expect(inPlace.code, inPlace.stderr).toBe(0);
    expect(statSync(join(own, 'a.png')).mode & 0o777).toBe(0o640);
    expect(verify(readFileSync(join(own, 'a.png'))).optedOut).toBe(true);
    const before = readFileSync(join(own, 'a.png'));
    expect((await optmark(['protect', own, '--in-place'], env())).stderr).toContain('0 marked, 1 already marked');
    expect(readFileSync(join(own, 'a.png')).equals(before)).toBe(true);
  });

  it.each([
    ['on the main thread', '2'],
    ['on the main thread and in worker threads', '5'],
  ])('%s: a second run finds every copy done, tells a copy of another input from its own, and --in-place runs again as done', async (_where, concurrency) => {
    const out = join(dir, `batch-out-${concurrency}`);
    const args = ['protect', tree, '--recursive', '--concurrency', concurrency, '--out', out];
    const first = await optmark(args, env());
    expect(first.code).toBe(1); // the corrupt JPEG
    expect(first.stderr).toContain('58 marked');
    const copies = images.map((image) => copyOf(out, image));
    const before = copies.map((copy) => readFileSync(copy));

    const again = await optmark(args, env());
    expect(again.stderr).toContain('0 marked, 58 already marked');
    copies.forEach((copy, i) => expect(readFileSync(copy).equals(before[i]!)).toBe(true));

    // Two copies swapped: each is a marked copy, but of the other input; an output of junk in the way too.
    const [a, b, c] = [copies[0]!, copies[3]!, copies[6]!];
    writeFileSync(a, before[3]!);
    writeFileSync(b, before[0]!);
    writeFileSync(c, 'my own notes, not an image');
    const swapped = await optmark(args, env());
    expect(swapped.code).toBe(1);
    expect(swapped.stderr).toContain('0 marked, 55 already marked');
    for (const copy of [a, b, c]) expect(swapped.stderr).toContain(`${copy} is in the way and is not this file's marked copy; pass --overwrite to replace it`);
    const overwritten = await optmark([...args, '--overwrite'], env());
    expect(overwritten.stderr).toContain('3 marked, 55 already marked');
    for (const copy of [a, b, c]) expect(verify(readFileSync(copy)).optedOut).toBe(true);

    const own = join(dir, `batch-in-place-${concurrency}`);
    mkdirSync(own);
    for (const image of images.slice(0, 6)) writeFileSync(join(own, image.replaceAll('/', '-')), readFileSync(join(tree, image)));
    expect((await optmark(['protect', own, '--in-place', '--concurrency', concurrency], env())).stderr).toContain('6 marked');
    const marked = images.slice(0, 6).map((image) => readFileSync(join(own, image.replaceAll('/', '-'))));
    expect((await optmark(['protect', own, '--in-place', '--concurrency', concurrency], env())).stderr).toContain('0 marked, 6 already marked');
    images.slice(0, 6).forEach((image, i) => expect(readFileSync(join(own, image.replaceAll('/', '-'))).equals(marked[i]!)).toBe(true));
  });

  it('verify --fail-on-unmarked exits 3 for a file that does not opt out, 1 when one failed', async () => {
    const marked = join(dir, 'local-out');
    expect((await optmark(['verify', marked, '--recursive', '--fail-on-unmarked'], env())).code).toBe(0);
    const mixed = await optmark(['verify', marked, join(tree, images[0]!), '--recursive', '--fail-on-unmarked', '--json'], env());
    expect(mixed.code).toBe(3);
    expect(mixed.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { optedOut: boolean }).optedOut)).toEqual([true, false]);
    expect((await optmark(['verify', join(tree, 'holidays'), '--fail-on-unmarked'], env())).code).toBe(1);
  });

  it('verify piped into a reader that stops early (| head) finishes quietly with its usual exit code', async () => {
    const child = spawnOptmark(['verify', tree, '--recursive', '--fail-on-unmarked'], env());
    // The reader goes away after the first line, as head -1 does.
    child.proc.stdout!.once('data', () => child.proc.stdout!.destroy());
    const exit = await child.exited;
    expect(child.stderr, child.stderr).not.toMatch(/EPIPE|Error:|\n\s+at /);
    // 58 files that do not opt out and a broken one: 1 (a failed file wins over 3), as without the pipe.
    expect(exit).toEqual({ code: 1, signal: null });
    expect(child.stderr).toMatch(/not opted out/);
  });

  it('draws a progress bar with rate and time left on a terminal', async () => {
    const session = `optmark-${process.pid}`;
    const socket = ['-L', session];
    const out = join(dir, 'tty-out');
    const command = `cd ${dir} && OPTMARK_DATA_DIR=${join(dir, 'data')} ${process.execPath} ${BIN} protect ${tree} --recursive --out ${out}; echo "exit $?"; sleep 30`;
    execFileSync('tmux', [...socket, 'new-session', '-d', '-s', session, '-x', '160', '-y', '20', command]);
    try {
      let screen = '';
      for (let i = 0; i < 200 && !/exit \d+/.test(screen); i++) {
        await sleep(100);
        screen = execFileSync('tmux', [...socket, 'capture-pane', '-p', '-t', session], { encoding: 'utf8' });
      }
      expect(screen).toMatch(/protect \[#+\] 59\/59 100% \d+\.\d files\/s ETA 0:00 58 marked, 1 failed/);
      expect(screen).toContain(`${join(tree, 'holidays/broken.jpg')}: Corrupt JPEG`);
      expect(screen).toMatch(/optmark: 58 marked, 1 skipped \(not images\), 1 failed/);
      // The per-file lines are not printed on the terminal the bar is drawn on.
      expect(screen).not.toContain('-> ');
      expect(screen).toContain('exit 1');
    } finally {
      execFileSync('tmux', [...socket, 'kill-server']);
    }
  });
});
