/**
 * Real git repositories for the scan tests, made with git itself and served
 * on loopback: by `git daemon` (git://) and by `git http-backend` behind a
 * small CGI bridge (http://, with an optional token required as HTTP Basic
 * authentication, as the forges take one).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const GIT_ENV = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'Test',
  GIT_AUTHOR_EMAIL: 'test@example.com',
  GIT_COMMITTER_NAME: 'Test',
  GIT_COMMITTER_EMAIL: 'test@example.com',
};

export const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: GIT_ENV, stdio: ['ignore', 'pipe', 'pipe'] }).toString('utf8').trim();

export interface RepoFile {
  readonly path: string;
  readonly bytes?: Uint8Array | string;
  /** A symbolic link to this target instead of a file. */
  readonly link?: string;
}

/**
 * A bare repository `name`.git under `root`, with one commit holding `files`
 * on branch main (and `extra` commits' branches), plus gitlinks (submodule
 * entries) at the given paths.
 */
export function makeRepository(root: string, name: string, files: readonly RepoFile[], options: { gitlinks?: readonly string[]; branches?: Record<string, readonly RepoFile[]> } = {}): string {
  const work = mkdtempSync(join(tmpdir(), 'optmark-repo-'));
  try {
    git(work, 'init', '-q', '-b', 'main');
    const write = (list: readonly RepoFile[]) => {
      for (const file of list) {
        const path = join(work, file.path);
        mkdirSync(dirname(path), { recursive: true });
        if (file.link !== undefined) symlinkSync(file.link, path);
        else writeFileSync(path, file.bytes ?? '');
      }
    };
    write(files);
    git(work, 'add', '-A');
    for (const path of options.gitlinks ?? []) git(work, 'update-index', '--add', '--cacheinfo', `160000,${'1'.repeat(40)},${path}`);
    git(work, 'commit', '-q', '-m', 'files');
    for (const [branch, list] of Object.entries(options.branches ?? {})) {
      git(work, 'checkout', '-q', '-b', branch);
      write(list);
      git(work, 'add', '-A');
      git(work, 'commit', '-q', '-m', branch);
      git(work, 'checkout', '-q', 'main');
    }
    const bare = join(root, `${name}.git`);
    git(root, 'clone', '-q', '--bare', work, bare);
    git(bare, 'config', 'http.receivepack', 'true');
    git(bare, 'config', 'uploadpack.allowFilter', 'true');
    return bare;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

export interface GitServers {
  /** git://127.0.0.1:PORT/ */
  readonly daemonUrl: string;
  /** http://127.0.0.1:PORT/ */
  readonly httpUrl: string;
  /** Requests the HTTP server received, with their Authorization header. */
  readonly httpRequests: Array<{ url: string; authorization: string | undefined }>;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Serve every repository under `root`. `tokens` maps a repository's name to
 * the token its HTTP requests must carry (as the password of HTTP Basic).
 */
export async function serveRepositories(root: string, tokens: Record<string, string> = {}): Promise<GitServers> {
  const port = await freePort();
  const daemon: ChildProcess = spawn('git', ['daemon', '--reuseaddr', '--export-all', `--base-path=${root}`, '--listen=127.0.0.1', `--port=${port}`, '--enable=receive-pack', root], {
    env: GIT_ENV,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  // Ready once it says so on stderr... it says nothing at --verbose off: wait until the port answers.
  for (let i = 0; i < 100; i++) {
    try {
      git(root, 'ls-remote', `git://127.0.0.1:${port}/none`);
    } catch (error) {
      if (!/Connection refused|unable to connect/i.test(String((error as { stderr?: Buffer }).stderr ?? ''))) break;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const httpRequests: GitServers['httpRequests'] = [];
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    httpRequests.push({ url: url.pathname + url.search, authorization: request.headers.authorization });
    const repo = url.pathname.split('/')[1]?.replace(/\.git$/, '') ?? '';
    const required = tokens[repo];
    if (required !== undefined) {
      const given = request.headers.authorization?.startsWith('Basic ') ? Buffer.from(request.headers.authorization.slice(6), 'base64').toString('utf8').split(':').slice(1).join(':') : undefined;
      if (given !== required) {
        response.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"' }).end('token required');
        return;
      }
    }
    const cgi = spawn('git', ['http-backend'], {
      env: {
        ...GIT_ENV,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: request.method ?? 'GET',
        CONTENT_TYPE: request.headers['content-type'] ?? '',
        HTTP_CONTENT_ENCODING: request.headers['content-encoding'] ?? '',
        GIT_PROTOCOL: String(request.headers['git-protocol'] ?? ''),
        REMOTE_USER: 'tester',
        REMOTE_ADDR: '127.0.0.1',
      },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    request.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let headersDone = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) {
        response.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) return;
      headersDone = true;
      let status = 200;
      for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
        const colon = line.indexOf(':');
        const name = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
        else response.setHeader(name, value);
      }
      response.writeHead(status);
      response.write(head.subarray(end + 4));
    });
    cgi.on('close', () => response.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const httpPort = (server.address() as { port: number }).port;
  return {
    daemonUrl: `git://127.0.0.1:${port}/`,
    httpUrl: `http://127.0.0.1:${httpPort}/`,
    httpRequests,
    async close() {
      daemon.kill();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
