/**
 * Fetching a repository to scan, against hostile repositories made with git
 * and served on loopback: limits on files, bytes and time; symbolic links
 * and submodules listed, never followed or fetched; trees git itself
 * refuses (a `..` or `.git` path); redirects not followed; nothing left
 * behind. And the source policy: the allow-list, credentials, private
 * addresses, file:// outside the listed directory.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchRepository } from '../../src/adapters/git/repository.js';
import { checkSource } from '../../src/app/scans/sources.js';
import { git, makeRepository, serveRepositories, type GitServers } from '../support/git-server.js';
import { randomBytes } from 'node:crypto';

const root = mkdtempSync(join(tmpdir(), 'optmark-hostile-repos-'));
const work = mkdtempSync(join(tmpdir(), 'optmark-hostile-work-'));
let servers: GitServers;

/** A commit whose tree holds one entry named `name` (git's porcelain would refuse to make it). */
function craftedRepository(name: string, entryName: string): void {
  const bare = join(root, `${name}.git`);
  git(root, 'init', '-q', '--bare', bare);
  const blob = git(bare, 'hash-object', '-w', '--stdin');
  const entry = Buffer.concat([Buffer.from(`100644 ${entryName}\0`), Buffer.from(blob, 'hex')]);
  const tree = execFileSync('git', ['hash-object', '-w', '-t', 'tree', '--literally', '--stdin'], { cwd: bare, input: entry }).toString().trim();
  const commit = execFileSync('git', ['commit-tree', tree, '-m', 'crafted'], { cwd: bare, env: { ...process.env, GIT_AUTHOR_NAME: 'x', GIT_AUTHOR_EMAIL: 'x@x', GIT_COMMITTER_NAME: 'x', GIT_COMMITTER_EMAIL: 'x@x' } }).toString().trim();
  git(bare, 'update-ref', 'refs/heads/main', commit);
  git(bare, 'symbolic-ref', 'HEAD', 'refs/heads/main');
}

/** A commit whose tree holds files named by raw bytes (sorted as git sorts them: by bytes). */
function bytesNamedRepository(name: string, files: ReadonlyArray<{ name: Buffer; text: string }>): string {
  const bare = join(root, `${name}.git`);
  git(root, 'init', '-q', '--bare', bare);
  const entries = [...files]
    .sort((a, b) => Buffer.compare(a.name, b.name))
    .map((file) => {
      const blob = execFileSync('git', ['hash-object', '-w', '--stdin'], { cwd: bare, input: file.text }).toString().trim();
      return Buffer.concat([Buffer.from('100644 '), file.name, Buffer.from([0]), Buffer.from(blob, 'hex')]);
    });
  const tree = execFileSync('git', ['hash-object', '-w', '-t', 'tree', '--stdin'], { cwd: bare, input: Buffer.concat(entries) }).toString().trim();
  const commit = execFileSync('git', ['commit-tree', tree, '-m', 'latin-1 names'], { cwd: bare, env: { ...process.env, GIT_AUTHOR_NAME: 'x', GIT_AUTHOR_EMAIL: 'x@x', GIT_COMMITTER_NAME: 'x', GIT_COMMITTER_EMAIL: 'x@x' } }).toString().trim();
  git(bare, 'update-ref', 'refs/heads/main', commit);
  git(bare, 'symbolic-ref', 'HEAD', 'refs/heads/main');
  return commit;
}

/** A commit of a few KB whose tree names width^depth files: nested trees sharing one empty blob (a "git bomb"). */
function bombRepository(name: string, width: number, depth: number): void {
  const bare = join(root, `${name}.git`);
  git(root, 'init', '-q', '--bare', bare);
  let oid = git(bare, 'hash-object', '-w', '--stdin');
  let kind = '100644 blob';
  for (let level = 0; level < depth; level++) {
    const lines = Array.from({ length: width }, (_, i) => `${kind} ${oid}\t${level === 0 ? `f${i}.txt` : `d${i}`}\n`).join('');
    oid = execFileSync('git', ['mktree'], { cwd: bare, input: lines }).toString().trim();
    kind = '040000 tree';
  }
  const commit = execFileSync('git', ['commit-tree', oid, '-m', 'bomb'], { cwd: bare, env: { ...process.env, GIT_AUTHOR_NAME: 'x', GIT_AUTHOR_EMAIL: 'x@x', GIT_COMMITTER_NAME: 'x', GIT_COMMITTER_EMAIL: 'x@x' } }).toString().trim();
  git(bare, 'update-ref', 'refs/heads/main', commit);
  git(bare, 'symbolic-ref', 'HEAD', 'refs/heads/main');
}

const limits = (overrides: Partial<{ maxBytes: number; maxFiles: number; signal: AbortSignal }> = {}) => ({ maxBytes: 1024 ** 3, maxFiles: 100_000, signal: new AbortController().signal, ...overrides });
const request = (url: string, extra: Partial<Parameters<typeof fetchRepository>[0]> = {}) => ({ url, ref: null, commit: null, token: null, pin: null, workRoot: work, ...extra });

beforeAll(async () => {
  makeRepository(root, 'many', Array.from({ length: 30 }, (_, i) => ({ path: `f/${i}.txt`, bytes: String(i) })));
  makeRepository(root, 'big', [{ path: 'noise.bin', bytes: randomBytes(3 * 1024 * 1024) }]);
  makeRepository(root, 'links', [{ path: 'up.png', link: '../../../../etc/passwd' }, { path: 'dir-link', link: '/' }, { path: 'ok.txt', bytes: 'ok' }], { gitlinks: ['vendor/module'] });
  craftedRepository('dotdot', '..');
  craftedRepository('dotgit', '.git');
  bombRepository('bomb', 100, 3);
  servers = await serveRepositories(root);
});

afterAll(async () => {
  await servers?.close();
  rmSync(root, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
});

describe('fetching a repository to scan', () => {
  it('refuses a tree with more files than the limit, and one whose files total more bytes', async () => {
    await expect(fetchRepository(request(`${servers.daemonUrl}many.git`), limits({ maxFiles: 29 }))).rejects.toThrow('the repository has more than 29 files, over the limit');
    await expect(fetchRepository(request(`${servers.daemonUrl}big.git`), limits({ maxBytes: 1024 * 1024 }))).rejects.toThrow(/over the limit of 1048576|larger than the limit of 1048576 bytes/);
    expect(readdirSync(work)).toEqual([]);
  });

  it('a git:// fetch connects to the address its source was checked at, not to what the host name resolves to then', async () => {
    const { port } = new URL(servers.daemonUrl);
    // A name no resolver knows: only the pin can bring git to the repository.
    const pinned = request(`git://repo.invalid:${port}/many.git`, { pin: ['repo.invalid', Number(port), '127.0.0.1'] });
    const source = await fetchRepository(pinned, limits());
    try {
      expect(source.entries.filter((e) => e.kind === 'file')).toHaveLength(30);
    } finally {
      await source.close();
    }
    // Pinned to one address, a fetch can reach no other host.
    await expect(fetchRepository(request(`git://repo.invalid:${port}/many.git`, { pin: ['elsewhere.invalid', Number(port), '127.0.0.1'] }), limits())).rejects.toThrow(/git could not fetch it/);
    expect(readdirSync(work)).toEqual([]);
  });

  it('stops at the time limit', async () => {
    await expect(fetchRepository(request(`${servers.daemonUrl}big.git`), limits({ signal: AbortSignal.timeout(1) }))).rejects.toThrow(/time limit|aborted/i);
    expect(readdirSync(work)).toEqual([]);
  });

  it('lists symbolic links and submodules as such, never following or fetching them', async () => {
    const source = await fetchRepository(request(`${servers.daemonUrl}links.git`), limits());
    try {
      expect(source.entries.map((e) => [e.path, e.kind]).sort()).toEqual([
        ['dir-link', 'symlink'],
        ['ok.txt', 'file'],
        ['up.png', 'symlink'],
        ['vendor/module', 'submodule'],
      ]);
      // Nothing of the tree is written out: only git's own bare repository.
      const [dir] = readdirSync(work);
      expect(readdirSync(join(work, dir!))).toEqual(['repo.git']);
      expect(Buffer.from(await source.read(source.entries.find((e) => e.path === 'ok.txt')!, 100)).toString()).toBe('ok');
    } finally {
      await source.close();
    }
    expect(readdirSync(work)).toEqual([]);
  });

  it('refuses a few KB naming a million files (nested trees sharing one blob) while git lists them, holding a bounded part of the listing', async () => {
    const before = process.memoryUsage().rss;
    const refused = await fetchRepository(request(`${servers.daemonUrl}bomb.git`), limits()).catch((error: unknown) => error);
    // The listing of a million paths, parsed whole, grew this process by over 500 MB; read while git lists, the first 100,000 only.
    const grown = (process.memoryUsage().rss - before) / 1024 ** 2;
    console.log(`git bomb (1,000,000 files): refused, this process grew by ${grown.toFixed(0)} MB`);
    expect(grown).toBeLessThan(250);
    expect(refused).toMatchObject({ message: 'the repository has more than 100000 files, over the limit' });
    expect(readdirSync(work)).toEqual([]);
  });

  it('refuses trees git itself calls malformed: a ".." or ".git" entry', async () => {
    for (const name of ['dotdot', 'dotgit']) {
      await expect(fetchRepository(request(`${servers.daemonUrl}${name}.git`), limits()), name).rejects.toThrow(/malformed|refuses|fsck/i);
    }
    expect(readdirSync(work)).toEqual([]);
  });

  it('does not follow a redirect, and says so, whatever numbers its URL holds (a port or a path with 403 or 404 in it is no status)', async () => {
    for (const [ports, path] of [[[0], 'moved'], [[40403, 14030, 24032, 34033], 'moved'], [[40404, 14040, 24042, 34043], '404']] as const) {
      const server = createServer((req, res) => res.writeHead(302, { Location: `${servers.httpUrl}many.git${req.url?.replace(/^\/[^/]+\.git/, '')}` }).end());
      // The first of these ports that is free (the first case: any port).
      let port: number | undefined;
      for (const wanted of ports) {
        port = await new Promise<number | undefined>((resolve) => {
          server.once('error', () => resolve(undefined));
          server.listen(wanted, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
        });
        if (port !== undefined) break;
      }
      if (port === undefined) throw new Error(`none of the ports ${ports.join(', ')} is free`);
      try {
        await expect(fetchRepository(request(`http://127.0.0.1:${port}/${path}.git`), limits()), `port ${port}, ${path}.git`).rejects.toThrow(/redirect/);
      } finally {
        server.close();
      }
    }
  });
});

describe('names that are not UTF-8', () => {
  it('two Latin-1 names differing in one byte are listed apart, each by its bytes, and a push writes the very file scanned, not a new one', async () => {
    const latin = (name: string) => Buffer.from(name, 'latin1');
    const scanned = bytesNamedRepository('latin1', [
      { name: latin('caf\u00e8.txt'), text: 'one' },
      { name: latin('caf\u00e9.txt'), text: 'two' },
      { name: latin('plain.txt'), text: 'three' },
    ]);
    const source = await fetchRepository(request(`${servers.daemonUrl}latin1.git`), limits());
    try {
      expect(source.entries.map((e) => e.path)).toEqual(['caf\\xE8.txt', 'caf\\xE9.txt', 'plain.txt']);
      expect(new TextDecoder().decode(await source.read(source.entries[1]!, 100))).toBe('two');
      const { commit } = await source.publish!([{ path: 'caf\\xE9.txt', bytes: new TextEncoder().encode('two, marked') }], { branch: 'optmark/latin1-test', message: 'latin-1' });
      // The change is to the file named by the bytes E9: nothing added, nothing else changed.
      const bare = join(root, 'latin1.git');
      const changed = execFileSync('git', ['diff', '--name-status', '-z', scanned, commit], { cwd: bare }).toString('latin1').split('\0').filter(Boolean);
      expect(changed).toEqual(['M', 'caf\u00e9.txt']);
    } finally {
      await source.close();
    }
  });
});

describe('the source policy', () => {
  const ports = (addresses: Record<string, string[]>) => ({
    resolve: async (host: string) => addresses[host] ?? [],
    realpath: async (path: string) => {
      if (path.includes('missing')) throw new Error('ENOENT');
      return path.replace('/srv/repos/link', '/etc');
    },
  });
  const forges = ['https://github.com/', 'https://gitlab.com/', 'https://codeberg.org/'];

  it('takes a public forge URL and pins the address it checked', async () => {
    expect(await checkSource('https://github.com/owner/repo.git', forges, ports({ 'github.com': ['140.82.121.4'] }))).toEqual({ url: 'https://github.com/owner/repo.git', pin: ['github.com', 443, '140.82.121.4'] });
  });

  it('refuses what is not under a prefix, credentials, another scheme, look-alike hosts', async () => {
    for (const url of ['https://github.com.evil.example/x', 'https://evil.example/github.com/x', 'https://user:token@github.com/o/r', 'ssh://git@github.com/o/r', 'https://github.com/o/r?x=1', 'github.com/o/r']) {
      await expect(checkSource(url, forges, ports({ 'github.com.evil.example': ['93.184.216.34'], 'github.com': ['140.82.121.4'] })), url).rejects.toMatchObject({ code: 'source_not_allowed' });
    }
  });

  it('refuses a host that resolves to a private, loopback or link-local address, even under an allowed prefix', async () => {
    for (const address of ['127.0.0.1', '10.0.0.5', '192.168.1.1', '169.254.169.254', '::1', 'fd00::1', '::ffff:127.0.0.1']) {
      await expect(checkSource('https://github.com/o/r', forges, ports({ 'github.com': ['140.82.121.4', address] })), address).rejects.toMatchObject({ code: 'source_not_allowed' });
    }
    await expect(checkSource('http://localhost:8080/r.git', ['http://localhost:8080/'], ports({ localhost: ['127.0.0.1'] }))).rejects.toMatchObject({ code: 'source_not_allowed' });
  });

  it('reaches a private address only where the prefix names it as an IP address', async () => {
    expect(await checkSource('http://127.0.0.1:9000/r.git', ['http://127.0.0.1:9000/'], ports({}))).toEqual({ url: 'http://127.0.0.1:9000/r.git', pin: ['127.0.0.1', 9000, '127.0.0.1'] });
    await expect(checkSource('http://127.0.0.2:9000/r.git', ['http://127.0.0.2:9000/', 'http://127.0.0.1:9000/'].slice(1), ports({}))).rejects.toMatchObject({ code: 'source_not_allowed' });
  });

  it('reads file:// only under the listed directory, links resolved', async () => {
    expect(await checkSource('file:///srv/repos/site.git', ['file:///srv/repos/'], ports({}))).toEqual({ url: 'file:///srv/repos/site.git', pin: null });
    for (const url of ['file:///srv/repos/../../etc/passwd', 'file:///etc/passwd', 'file:///srv/repos/link/passwd', 'file:///srv/repos/missing.git']) {
      await expect(checkSource(url, ['file:///srv/repos/'], ports({})), url).rejects.toMatchObject({ code: 'source_not_allowed' });
    }
  });
});
