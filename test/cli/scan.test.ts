/**
 * `optmark scan` as CI runs it (docs/scans.md "In CI"): a folder and a git
 * repository served on loopback, the same classification and summary as
 * the API's, the exit codes (3 for an image without the opt-out, 1 for a
 * failed one, which wins), CSV, and --fix --out with ExifTool reading the
 * copies.
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { protect } from '../../src/app/protect-image.js';
import { childEnv } from '../process/support.js';
import { ExifTool } from '../support/exiftool.js';
import { makeRepository, serveRepositories, type GitServers } from '../support/git-server.js';

const BIN = fileURLToPath(new URL('../../bin/optmark.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'optmark-scan-cli-'));
const site = join(dir, 'site');
let servers: GitServers;
const exiftool = new ExifTool();

function optmark(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: dir, encoding: 'utf8', env: childEnv({ OPTMARK_DATA_DIR: join(dir, 'data') }) }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

const unmarked = await sharp({ create: { width: 24, height: 24, channels: 3, background: '#884422' } }).png().toBuffer();
const marked = protect(await sharp({ create: { width: 24, height: 24, channels: 3, background: '#224488' } }).jpeg().toBuffer()).bytes;

beforeAll(async () => {
  mkdirSync(join(site, 'img', 'nested'), { recursive: true });
  writeFileSync(join(site, 'img', 'marked.jpg'), marked);
  writeFileSync(join(site, 'img', 'nested', 'plain.png'), unmarked);
  writeFileSync(join(site, 'index.html'), '<img src="img/marked.jpg">');
  symlinkSync('/etc/hostname', join(site, 'img', 'escape.png'));
  mkdirSync(join(site, '.git'));
  writeFileSync(join(site, '.git', 'hidden.png'), unmarked);
  const root = join(dir, 'repos');
  mkdirSync(root);
  makeRepository(root, 'site', [
    { path: 'img/marked.jpg', bytes: marked },
    { path: 'img/nested/plain.png', bytes: unmarked },
    { path: 'index.html', bytes: 'x' },
  ]);
  servers = await serveRepositories(root);
});

afterAll(async () => {
  await exiftool.close();
  await servers?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('optmark scan', () => {
  it('scans a folder: the summary in words, every image that lacks the opt-out named; --json has the API\'s summary object', async () => {
    const text = await optmark('scan', 'site');
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('1 of 3 images carry the opt-out; 1 does not; 1 skipped; 1 other file');
    expect(text.stdout).toContain('no opt-out: img/nested/plain.png');
    expect(text.stdout).toContain('skipped: img/escape.png (a symbolic link');
    expect(text.stdout).not.toContain('hidden.png');
    const json = await optmark('scan', 'site', '--json');
    const report = JSON.parse(json.stdout) as Record<string, any>;
    expect(report.summary).toEqual({ images: 3, optedOut: 1, notOptedOut: 1, failed: 0, skipped: 1 });
    expect(report.otherFiles).toBe(1);
    expect(report.items.map((i: any) => [i.path, i.status])).toEqual([
      ['img/escape.png', 'skipped'],
      ['img/marked.jpg', 'optedOut'],
      ['img/nested/plain.png', 'notOptedOut'],
    ]);
  });

  it('exits 3 with --fail-on-unmarked when an image lacks the opt-out, and 1 when one failed (1 wins)', async () => {
    expect((await optmark('scan', 'site', '--fail-on-unmarked')).code).toBe(3);
    writeFileSync(join(site, 'img', 'broken.jpg'), Buffer.from([0xff, 0xd8, 0xff, 0x00, 0x01]));
    try {
      const both = await optmark('scan', 'site', '--fail-on-unmarked');
      expect(both.code).toBe(1);
      expect(both.stdout).toContain('failed: img/broken.jpg');
    } finally {
      rmSync(join(site, 'img', 'broken.jpg'));
    }
    const clean = mkdtempSync(join(dir, 'clean-'));
    writeFileSync(join(clean, 'ok.jpg'), marked);
    expect((await optmark('scan', clean, '--fail-on-unmarked')).code).toBe(0);
  });

  it('scans a git repository by URL the way the server does, and writes the CSV report', async () => {
    const result = await optmark('scan', `${servers.daemonUrl}site.git`, '--json', '--csv', 'report.csv');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as Record<string, any>;
    expect(report.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(report.summary).toEqual({ images: 2, optedOut: 1, notOptedOut: 1, failed: 0, skipped: 0 });
    const csv = readFileSync(join(dir, 'report.csv'), 'utf8').trim().split('\r\n');
    expect(csv).toHaveLength(3);
    expect(csv[2]).toMatch(/^"img\/nested\/plain.png","notOptedOut"/);
    // A source that fails: one line (no stack), or with --json the error object; exit 1.
    const missing = await optmark('scan', `${servers.daemonUrl}nothing.git`);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^optmark: the repository could not be scanned: [^\n]+\n$/);
    const missingJson = await optmark('scan', `${servers.daemonUrl}nothing.git`, '--json');
    expect(missingJson.code).toBe(1);
    expect(JSON.parse(missingJson.stdout)).toMatchObject({ code: 'source_failed', error: expect.stringContaining('the repository could not be scanned') });
    const notUrl = await optmark('scan', 'https://');
    expect(notUrl.code).toBe(2);
    expect(notUrl.stderr).toContain('is not a repository URL');
  });

  it('an image deeper than 64 folders is reported skipped (too_deep), named as an image or told by its bytes, in a folder and in a repository alike', async () => {
    const deep = Array.from({ length: 66 }, (_, i) => `d${i}`).join('/');
    const tree = mkdtempSync(join(dir, 'deep-'));
    mkdirSync(join(tree, deep), { recursive: true });
    writeFileSync(join(tree, deep, 'x.png'), unmarked);
    writeFileSync(join(tree, deep, 'no-extension'), unmarked);
    writeFileSync(join(tree, deep, 'notes.txt'), 'text');
    writeFileSync(join(tree, 'top.png'), unmarked);
    const folder = JSON.parse((await optmark('scan', tree, '--json')).stdout) as Record<string, any>;
    const expected = [
      [`${deep}/no-extension`, 'skipped', 'too_deep'],
      [`${deep}/x.png`, 'skipped', 'too_deep'],
      ['top.png', 'notOptedOut', null],
    ];
    expect(folder.items.map((i: any) => [i.path, i.status, i.code])).toEqual(expected);
    expect(folder.summary).toEqual({ images: 3, optedOut: 0, notOptedOut: 1, failed: 0, skipped: 2 });
    expect(folder.otherFiles).toBe(1);
    makeRepository(join(dir, 'repos'), 'deep', [
      { path: `${deep}/x.png`, bytes: unmarked },
      { path: `${deep}/no-extension`, bytes: unmarked },
      { path: `${deep}/notes.txt`, bytes: 'text' },
      { path: 'top.png', bytes: unmarked },
    ]);
    const repository = JSON.parse((await optmark('scan', `${servers.daemonUrl}deep.git`, '--json')).stdout) as Record<string, any>;
    expect(repository.items.map((i: any) => [i.path, i.status, i.code])).toEqual(expected);
    expect(repository.summary).toEqual(folder.summary);
    expect(repository.otherFiles).toBe(1);
  });

  it('a file whose name is not UTF-8 (Latin-1) is scanned, named with \\xNN for its byte, apart from its neighbour that differs in that byte only', async () => {
    const latin = join(dir, 'latin');
    mkdirSync(latin);
    writeFileSync(Buffer.from(join(latin, 'caf\u00e8.png'), 'latin1'), unmarked);
    writeFileSync(Buffer.from(join(latin, 'caf\u00e9.jpg'), 'latin1'), marked);
    const run = await optmark('scan', latin, '--json');
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as { summary: object; items: Array<{ path: string; status: string }> };
    expect(report.summary).toMatchObject({ images: 2, optedOut: 1, notOptedOut: 1, failed: 0 });
    expect(report.items.map((i) => [i.path, i.status])).toEqual([
      ['caf\\xE8.png', 'notOptedOut'],
      ['caf\\xE9.jpg', 'optedOut'],
    ]);
    expect((await optmark('scan', latin)).stdout).toContain('no opt-out: caf\\xE8.png');
    // --fix leaves it, saying why: a copy named with the \xNN text would not be the same name.
    const out = join(dir, 'latin-fixed');
    const fix = await optmark('scan', latin, '--fix', '--out', out);
    expect(fix.code).toBe(1);
    expect(fix.stdout).toContain('not marked: caf\\xE8.png (its name is not UTF-8: rename it in UTF-8 to take it');
    expect(existsSync(out) ? readdirSync(out) : []).toEqual([]);
  });

  it('--fix --out DIR writes a marked copy of each image without the opt-out at its path, and never overwrites', async () => {
    const out = join(dir, 'fixed');
    const result = await optmark('scan', 'site', '--fix', '--out', out);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`marked: img/nested/plain.png -> ${join(out, 'img', 'nested', 'plain.png')}`);
    const { stdout } = await exiftool.run(['-j', '-XMP-plus:DataMining', join(out, 'img', 'nested', 'plain.png')]);
    expect((JSON.parse(stdout) as Array<{ DataMining?: string }>)[0]?.DataMining).toBe('Prohibited for AI/ML training');
    // Run again: the copy there is this image's marked copy, done; a file of another kind in its place is not replaced.
    const again = await optmark('scan', 'site', '--fix', '--out', out);
    expect(again.code, again.stdout).toBe(0);
    expect(again.stdout).toContain(`already marked: img/nested/plain.png -> ${join(out, 'img', 'nested', 'plain.png')} (its marked copy was there)`);
    writeFileSync(join(out, 'img', 'nested', 'plain.png'), unmarked.subarray(0, 100));
    const inTheWay = await optmark('scan', 'site', '--fix', '--out', out);
    expect(inTheWay.code).toBe(1);
    expect(inTheWay.stdout).toContain(`not marked: img/nested/plain.png (${join(out, 'img', 'nested', 'plain.png')} exists already and is not this image's marked copy (nothing is overwritten))`);
    expect(readFileSync(join(out, 'img', 'nested', 'plain.png'))).toEqual(unmarked.subarray(0, 100));
    expect((await optmark('scan', 'site', '--fix')).code).toBe(2);
    expect((await optmark('scan', join(site, 'img', 'marked.jpg'))).code).toBe(2);
  });

  it('Ctrl-C while --fix writes stops between two images and exits 130; each copy written is whole, and a second run finishes', async () => {
    const many = mkdtempSync(join(dir, 'many-'));
    // Noise, so that each copy is some 200 KB and the fix takes a while.
    const big = await sharp(randomBytes(256 * 256 * 3), { raw: { width: 256, height: 256, channels: 3 } }).png().toBuffer();
    for (let i = 0; i < 400; i++) writeFileSync(join(many, `img${String(i).padStart(3, '0')}.png`), big);
    const out = join(dir, 'many-fixed');
    const child = spawn(process.execPath, [BIN, 'scan', many, '--fix', '--out', out], { cwd: dir, env: childEnv({ OPTMARK_DATA_DIR: join(dir, 'data') }) });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    // Once the first copies are written.
    const written = () => readdirSync(out);
    for (const end = Date.now() + 30_000; Date.now() < end; await new Promise((resolve) => setTimeout(resolve, 5))) {
      try {
        if (written().length > 0) break;
      } catch {
        // not made yet
      }
    }
    child.kill('SIGINT');
    expect(await exited, stderr).toBe(130);
    expect(stderr).toContain('optmark: the scan was interrupted');
    const copies = written();
    expect(copies.length).toBeGreaterThan(0);
    expect(copies.length).toBeLessThan(400);
    expect(copies.filter((name) => !/^img\d{3}\.png$/.test(name))).toEqual([]);
    const { verify } = await import('../../src/index.js');
    for (const name of copies) expect(verify(readFileSync(join(out, name))).optedOut, name).toBe(true);
    const rest = await optmark('scan', many, '--fix', '--out', out);
    expect(rest.code, rest.stdout).toBe(0);
    expect(rest.stdout.match(/^ {2}already marked: /gm)).toHaveLength(copies.length);
    expect(rest.stdout.match(/^ {2}marked: /gm)).toHaveLength(400 - copies.length);
  });

  it('Ctrl-C while a repository is fetched stops git, removes the folder it fetched into, and exits 130 saying so', async () => {
    // A git server that accepts and never answers: the fetch waits until it is stopped.
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const temporary = mkdtempSync(join(tmpdir(), 'optmark-scan-tmp-'));
    try {
      const url = `git://127.0.0.1:${(silent.address() as { port: number }).port}/slow.git`;
      const child = spawn(process.execPath, [BIN, 'scan', url], { cwd: dir, env: childEnv({ OPTMARK_DATA_DIR: join(dir, 'data'), TMPDIR: temporary }) });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      // Once git is fetching into its folder.
      const fetching = () => readdirSync(temporary).filter((name) => name.startsWith('optmark-scan-'));
      while (fetching().length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      await new Promise((resolve) => setTimeout(resolve, 300));
      child.kill('SIGINT');
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code, stderr).toBe(130);
      expect(stderr).toContain('optmark: the scan was interrupted');
      expect(fetching()).toEqual([]);
    } finally {
      silent.close();
      rmSync(temporary, { recursive: true, force: true });
    }
  });
});
