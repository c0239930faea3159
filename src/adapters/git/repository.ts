/**
 * Fetching a repository to scan, with limits, using git itself.
 *
 * Nothing is checked out: the commit is fetched into a bare repository in a
 * private temporary directory, its tree listed with `git ls-tree` and its
 * blobs read with `git cat-file --batch`. No file of the repository is ever
 * written under a path it chose, so symbolic links, `..` and `.git` tricks in
 * a hostile tree cannot reach outside it; git's own object checks
 * (transfer.fsckObjects) refuse malformed trees on the way in. Submodules are
 * listed, never fetched; Git LFS pointers are small files like any other.
 *
 * Limits: a shallow fetch (depth 1) of one ref or commit; the bytes on disk
 * watched while it runs (the fetch is stopped past the limit); the listed
 * files and their total size checked before anything is read; everything
 * bounded by the caller's signal (the scan's time limit). A read token goes
 * to git in its environment (visible only to this user), as an HTTP header:
 * never on a command line, in a URL, a file or a message.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, readdir, lstat, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ScanSourceError, type ScanSource, type SourceEntry } from '../../app/scans/ports.js';
import { pathOf } from '../../core/bytes/path-text.js';

export interface FetchRequest {
  readonly url: string;
  /** A branch or tag; default the remote's HEAD. */
  readonly ref: string | null;
  /** A commit to fetch instead of the ref (a resumed scan). */
  readonly commit: string | null;
  readonly token: string | null;
  /** Connect to this address for the URL's host (what the source policy checked): [host, port, address]. */
  readonly pin: readonly [string, number, string] | null;
  /** Where the temporary directory is made. */
  readonly workRoot: string;
}

export interface FetchLimits {
  readonly maxBytes: number;
  readonly maxFiles: number;
  readonly signal: AbortSignal;
}

/** The fetch could not be done, or went past a limit; the message is for people and holds no secret. */
export class RepositoryFetchError extends ScanSourceError {}

const WATCH_MS = 200;
const STDERR_KEPT = 8 * 1024;

export async function fetchRepository(request: FetchRequest, limits: FetchLimits): Promise<ScanSource> {
  const started = performance.now();
  const dir = await mkdtemp(join(request.workRoot, 'scan-'));
  const gitDir = join(dir, 'repo.git');
  try {
    const git = new Git(gitDir, dir, request, limits.signal, gitProxy(request));
    await git.run(['init', '-q', '--bare', gitDir], { cwdGitDir: false });
    const what = request.commit ?? request.ref ?? 'HEAD';
    if (what.startsWith('-')) throw new RepositoryFetchError('a branch or tag name cannot start with "-"');
    await git.run(['fetch', '-q', '--depth=1', '--no-tags', '--no-recurse-submodules', '--no-write-fetch-head', request.url, `+${what}:refs/scan`], {
      watch: { dir, maxBytes: limits.maxBytes },
    });
    const commit = (await git.run(['rev-parse', '--verify', '-q', 'refs/scan^{commit}'])).toString('utf8').trim();
    if (!/^[0-9a-f]{40,64}$/.test(commit)) throw new RepositoryFetchError('the fetched ref is not a commit');
    // Read while git lists: a tree of a few KB can name millions of files (nested trees sharing one blob), more than memory holds.
    const listing = await git.run(['ls-tree', '-r', '-l', '-z', '--full-tree', commit], {
      maxRecords: { count: limits.maxFiles, separator: 0, why: `the repository has more than ${limits.maxFiles} files, over the limit` },
    });
    const entries = parseTree(listing);
    const total = entries.reduce((sum, e) => sum + e.size, 0);
    if (total > limits.maxBytes) throw new RepositoryFetchError(`the repository's files total ${total} bytes, over the limit of ${limits.maxBytes}`);
    const reader = new BlobReader(git.spawn(['cat-file', '--batch']));
    const fetchMs = Math.round(performance.now() - started);
    return {
      commit,
      fetchMs,
      entries,
      read: (entry, limit) => reader.read(entry.handle, limit),
      async publish(changes, options) {
        if (!/^optmark\/[A-Za-z0-9._-]{1,100}$/.test(options.branch)) throw new RepositoryFetchError('not a branch name of ours');
        const files = new Map(entries.filter((e) => e.kind === 'file').map((e) => [e.path, e]));
        const index = join(dir, 'fix.index');
        await git.run(['read-tree', commit], { env: { GIT_INDEX_FILE: index } });
        for (const change of changes) {
          const oid = (await git.run(['hash-object', '-w', '--stdin'], { input: change.bytes })).toString('utf8').trim();
          // The path as the tree has it (a file of the scanned commit, by its own bytes), its mode kept.
          const file = files.get(change.path);
          if (file === undefined) throw new RepositoryFetchError(`${change.path} is not a file of the scanned commit`);
          const path = file.pathBytes ?? Buffer.from(change.path, 'utf8');
          await git.run(['update-index', '-z', '--index-info'], { env: { GIT_INDEX_FILE: index }, input: Buffer.concat([Buffer.from(`${file.mode} ${oid}\t`), path, Buffer.from([0])]) });
        }
        const tree = (await git.run(['write-tree'], { env: { GIT_INDEX_FILE: index } })).toString('utf8').trim();
        const made = (
          await git.run(['commit-tree', tree, '-p', commit, '-F', '-'], {
            env: { GIT_AUTHOR_NAME: 'optmark', GIT_AUTHOR_EMAIL: 'optmark@localhost', GIT_COMMITTER_NAME: 'optmark', GIT_COMMITTER_EMAIL: 'optmark@localhost' },
            input: Buffer.from(`${options.message}\n`),
          })
        ).toString('utf8').trim();
        try {
          await git.run(['push', '-q', '--no-verify', request.url, `${made}:refs/heads/${options.branch}`]);
        } catch (error) {
          throw new RepositoryFetchError(`the branch could not be pushed: ${error instanceof Error ? error.message : 'git failed'} (does the token allow writing?)`);
        }
        return { commit: made };
      },
      async close() {
        reader.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true }).catch(() => {});
    throw error;
  }
}

/** `git ls-tree -r -l -z`: "<mode> <type> <oid> <size>\t<path>\0" per entry. */
export function parseTree(listing: Buffer): SourceEntry[] {
  const entries: SourceEntry[] = [];
  let at = 0;
  while (at < listing.length) {
    const end = listing.indexOf(0, at);
    const record = listing.subarray(at, end === -1 ? listing.length : end);
    at = end === -1 ? listing.length : end + 1;
    const tab = record.indexOf(9);
    if (tab === -1) continue;
    const [mode = '', type = '', oid = '', size = '-'] = record.subarray(0, tab).toString('latin1').split(/ +/);
    const { path, pathBytes } = pathOf(record.subarray(tab + 1));
    const bytes = pathBytes ? { pathBytes } : {};
    if (type === 'commit') entries.push({ path, kind: 'submodule', size: 0, handle: oid, mode, ...bytes });
    else if (type === 'blob' && mode === '120000') entries.push({ path, kind: 'symlink', size: 0, handle: oid, mode, ...bytes });
    else if (type === 'blob') entries.push({ path, kind: 'file', size: Number(size), handle: oid, mode, ...bytes });
  }
  return entries;
}

interface RunOptions {
  readonly cwdGitDir?: boolean;
  readonly watch?: { readonly dir: string; readonly maxBytes: number };
  /** Written to the command's standard input. */
  readonly input?: Uint8Array;
  /** Stop the command, with `why`, once its output holds more than `count` records ended by `separator` (it is never held whole). */
  readonly maxRecords?: { readonly count: number; readonly separator: number; readonly why: string };
  readonly env?: Record<string, string>;
}

/** pinned-connect beside this module, compiled (dist) or as source (Node.js runs TypeScript that only needs its types removed). */
const PINNED_CONNECT = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? './pinned-connect.ts' : './pinned-connect.js', import.meta.url));

/**
 * The proxy command git runs to connect a git:// fetch (bin/git-proxy): git
 * runs it without a shell, as a single path, so it is a small script of the
 * package that starts this Node.js on pinned-connect. Kept with the package,
 * not written where the fetch works, which may be mounted noexec.
 */
const GIT_PROXY = fileURLToPath(new URL('../../../bin/git-proxy', import.meta.url));

/** For a git:// fetch with a pinned address, the proxy command and what it needs; undefined for every other fetch. */
function gitProxy(request: FetchRequest): { command: string; env: Record<string, string> } | undefined {
  if (new URL(request.url).protocol !== 'git:' || request.pin === null) return undefined;
  return { command: GIT_PROXY, env: { OPTMARK_NODE: process.execPath, OPTMARK_GIT_CONNECT: PINNED_CONNECT, OPTMARK_GIT_PIN: request.pin.join(' ') } };
}

class Git {
  private readonly env: NodeJS.ProcessEnv;
  private readonly args: string[];

  constructor(
    private readonly gitDir: string,
    home: string,
    private readonly request: FetchRequest,
    private readonly signal: AbortSignal,
    proxy?: { command: string; env: Record<string, string> },
  ) {
    const protocol = new URL(request.url).protocol.replace(':', '');
    const config: Array<[string, string]> = [];
    if (proxy) config.push(['core.gitProxy', proxy.command]);
    if (request.token !== null) {
      config.push(['http.extraHeader', `Authorization: Basic ${Buffer.from(`x-access-token:${request.token}`).toString('base64')}`]);
    }
    this.env = {
      PATH: process.env.PATH,
      HOME: home,
      LANG: 'C',
      LC_ALL: 'C',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_TERMINAL_PROMPT: '0',
      GIT_ASKPASS: 'false',
      SSH_ASKPASS: 'false',
      // Only the URL's own protocol, for this fetch and anything it would lead to.
      GIT_ALLOW_PROTOCOL: protocol,
      ...proxy?.env,
      GIT_CONFIG_COUNT: String(config.length),
      ...Object.fromEntries(config.flatMap(([key, value], i) => [[`GIT_CONFIG_KEY_${i}`, key], [`GIT_CONFIG_VALUE_${i}`, value]])),
    };
    this.args = [
      '-c', 'http.followRedirects=false',
      '-c', 'transfer.fsckObjects=true',
      '-c', 'core.hooksPath=/dev/null',
      '-c', 'protocol.version=2',
      '-c', `protocol.${protocol}.allow=always`,
      '-c', 'http.lowSpeedLimit=1000',
      '-c', 'http.lowSpeedTime=30',
      ...(request.pin ? ['-c', `http.curloptResolve=${request.pin[0]}:${request.pin[1]}:${request.pin[2].includes(':') ? `[${request.pin[2]}]` : request.pin[2]}`] : []),
    ];
  }

  spawn(args: readonly string[], cwdGitDir = true, env: Record<string, string> = {}): ChildProcessWithoutNullStreams {
    return spawn('git', [...this.args, ...(cwdGitDir ? ['--git-dir', this.gitDir] : []), ...args], { env: { ...this.env, ...env }, stdio: 'pipe', detached: true });
  }

  async run(args: readonly string[], options: RunOptions = {}): Promise<Buffer> {
    this.signal.throwIfAborted();
    const child = this.spawn(args, options.cwdGitDir !== false, options.env);
    const out: Buffer[] = [];
    let err = '';
    let stopped: string | undefined;
    const stop = (why: string) => {
      stopped ??= why;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const onAbort = () => stop('the scan took longer than its time limit');
    this.signal.addEventListener('abort', onAbort, { once: true });
    let watcher: NodeJS.Timeout | undefined;
    if (options.watch) {
      const { dir, maxBytes } = options.watch;
      watcher = setInterval(() => {
        treeBytes(dir).then(
          (bytes) => bytes > maxBytes && stop(`the repository is larger than the limit of ${maxBytes} bytes`),
          () => {},
        );
      }, WATCH_MS);
    }
    let records = 0;
    child.stdout.on('data', (chunk: Buffer) => {
      if (stopped) return;
      out.push(chunk);
      if (!options.maxRecords) return;
      for (let at = chunk.indexOf(options.maxRecords.separator); at !== -1; at = chunk.indexOf(options.maxRecords.separator, at + 1)) records += 1;
      if (records > options.maxRecords.count) {
        out.length = 0;
        stop(options.maxRecords.why);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (err.length < STDERR_KEPT) err += chunk.toString('utf8');
    });
    child.stdin.on('error', () => {});
    child.stdin.end(options.input);
    try {
      const code = await new Promise<number | null>((resolve, reject) => {
        child.once('error', reject);
        child.once('close', resolve);
      });
      if (stopped) throw new RepositoryFetchError(stopped);
      if (code !== 0) throw new RepositoryFetchError(explain(err, this.request));
      return Buffer.concat(out);
    } finally {
      clearInterval(watcher);
      this.signal.removeEventListener('abort', onAbort);
    }
  }
}

/** git's complaint in words a person can act on, with nothing secret in it. */
function explain(stderr: string, request: FetchRequest): string {
  const text = redact(stderr, request.token);
  // What git says, without the URLs it quotes: a port or a path of them (40312, /404.git) must not read as a status.
  const said = text.replace(/[a-z][a-z0-9+.-]*:\/\/[^\s'"]*/gi, '<url>');
  if (/could not read Username|Authentication failed|terminal prompts disabled|HTTP Basic: Access denied|\b403\b/i.test(said)) {
    return request.token ? 'the server refused the read token' : 'the repository needs a read token (it is private, or does not exist)';
  }
  if (/not found|does not appear to be a git repository|\b404\b/i.test(said)) return 'the repository was not found';
  if (/couldn't find remote ref|invalid refspec|not our ref/i.test(said)) return request.commit ? 'the commit scanned before is not on the server any more' : `the branch or tag ${JSON.stringify(request.ref ?? 'HEAD')} was not found`;
  if (/redirect|returned error: 30[1-8]/i.test(said)) return 'the server redirected the request (redirects are not followed)';
  if (/fsck|bad tree|badTree|zero-padded|has dot|has dotdot|dotgit|full pathname/i.test(said)) return 'the repository holds objects git itself refuses (malformed trees or paths)';
  if (/Could not resolve host|Connection refused|Failed to connect|timed out|unable to connect/i.test(said)) return 'the repository\'s server could not be reached';
  const line = text.split('\n').find((l) => /^(fatal|error):/.test(l.trim())) ?? text.split('\n')[0] ?? '';
  return `git could not fetch it: ${line.trim().slice(0, 200) || 'no reason given'}`;
}

function redact(text: string, token: string | null): string {
  if (!token) return text;
  let out = text.split(token).join('[token]');
  const basic = Buffer.from(`x-access-token:${token}`).toString('base64');
  out = out.split(basic).join('[token]');
  return out;
}

async function treeBytes(dir: string): Promise<number> {
  let total = 0;
  const pending = [dir];
  while (pending.length > 0) {
    const here = pending.pop()!;
    let names;
    try {
      names = await readdir(here, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of names) {
      const path = join(here, entry.name);
      if (entry.isDirectory()) pending.push(path);
      else if (entry.isFile()) total += await lstat(path).then((s) => s.size, () => 0);
    }
  }
  return total;
}

/**
 * Reads blobs through one `git cat-file --batch` process, one at a time:
 * "<oid>\n" in, "<oid> blob <size>\n<bytes>\n" out. Only the first `limit`
 * bytes of each are kept; the rest are passed over as they arrive.
 */
class BlobReader {
  private buffered: Buffer = Buffer.alloc(0);
  private waiting: (() => void) | undefined;
  private ended: Error | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly child: ChildProcessWithoutNullStreams) {
    child.stdout.on('data', (chunk: Buffer) => {
      this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
      this.waiting?.();
    });
    const end = () => {
      this.ended ??= new RepositoryFetchError('git stopped while the files were read');
      this.waiting?.();
    };
    child.once('close', end);
    child.once('error', end);
    child.stderr.resume();
    child.stdin.on('error', () => {});
  }

  read(oid: string, limit: number): Promise<Uint8Array> {
    const next = this.queue.then(() => this.readOne(oid, limit));
    this.queue = next.catch(() => {});
    return next;
  }

  private async more(): Promise<void> {
    if (this.ended) throw this.ended;
    await new Promise<void>((resolve) => (this.waiting = resolve));
    this.waiting = undefined;
  }

  private async readOne(oid: string, limit: number): Promise<Uint8Array> {
    if (!/^[0-9a-f]{40,64}$/.test(oid)) throw new RepositoryFetchError('not an object id');
    this.child.stdin.write(`${oid}\n`);
    let newline: number;
    while ((newline = this.buffered.indexOf(10)) === -1) await this.more();
    const header = this.buffered.subarray(0, newline).toString('latin1');
    this.buffered = this.buffered.subarray(newline + 1);
    const [, type, sizeText] = header.split(' ');
    if (type !== 'blob') throw new RepositoryFetchError(`the object ${oid} is missing`);
    const size = Number(sizeText);
    const keep = Math.min(limit, size);
    const kept = Buffer.allocUnsafe(keep);
    let have = 0;
    let remaining = size + 1; // the bytes and their trailing newline
    while (remaining > 0) {
      if (this.buffered.length === 0) await this.more();
      const take = Math.min(remaining, this.buffered.length);
      if (have < keep) {
        const copy = Math.min(keep - have, take);
        this.buffered.copy(kept, have, 0, copy);
        have += copy;
      }
      this.buffered = this.buffered.subarray(take);
      remaining -= take;
    }
    return kept;
  }

  close(): void {
    this.child.stdin.end();
    try {
      process.kill(-this.child.pid!, 'SIGKILL');
    } catch {
      /* gone already */
    }
  }
}
