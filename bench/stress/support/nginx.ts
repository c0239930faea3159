/**
 * nginx (Debian's package) on loopback in front of optmark instances, with
 * the configuration docs/operations.md shows: the faults run's multi-instance
 * checks and the scale benchmark both use it. Started as root, its workers
 * run as nobody, so the directories they write get that owner.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { onCleanup } from './cleanup.js';
import { sleep } from './net.js';

const hasNginx = () => spawnSync('nginx', ['-v'], { stdio: 'ignore' }).error === undefined;

/** nginx, installed with apt-get (Debian's package) when it is missing and this runs as root; otherwise a clear error. */
export function ensureNginx(log: (line: string) => void): void {
  if (hasNginx()) return;
  if (process.getuid?.() !== 0) throw new Error("nginx is not installed: apt-get install nginx (Debian's package) as root, then run this again");
  log('nginx is not installed; apt-get install -y nginx ...');
  const result = spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'nginx'], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, encoding: 'utf8' });
  if (!hasNginx()) throw new Error(`apt-get install nginx failed: ${(result.stderr ?? String(result.error)).trim().split('\n').at(-1)}`);
}

export class Nginx {
  private proc: ChildProcess | undefined;
  private readonly forget: (runNow?: boolean) => void;

  constructor(
    readonly dir: string,
    readonly port: number,
  ) {
    this.forget = onCleanup('nginx', () => this.proc?.kill('SIGKILL'));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Write the configuration (docs/operations.md's, on loopback ports) and start or reload nginx with it. */
  async configure(upstreams: readonly number[], buffering: boolean): Promise<void> {
    for (const sub of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(this.dir, sub), { recursive: true });
    // nginx started by root runs its workers as nobody: they write request bodies under body/.
    if (userInfo().uid === 0) for (const sub of ['body', 'proxy']) chownSync(join(this.dir, sub), 65534, 65534);
    writeFileSync(
      join(this.dir, 'nginx.conf'),
      `worker_processes 1;
pid ${this.dir}/nginx.pid;
error_log ${this.dir}/error.log warn;
daemon off;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${this.dir}/body;
  proxy_temp_path ${this.dir}/proxy;
  fastcgi_temp_path ${this.dir}/fastcgi;
  uwsgi_temp_path ${this.dir}/uwsgi;
  scgi_temp_path ${this.dir}/scgi;
  upstream optmark {
${upstreams.map((port) => `    server 127.0.0.1:${port} max_fails=1 fail_timeout=2s;`).join('\n')}
    keepalive 32;
  }
  server {
    listen 127.0.0.1:${this.port};
    client_max_body_size 26m;
    client_body_buffer_size 1m;
    location / {
      proxy_pass http://optmark;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_request_buffering ${buffering ? 'on' : 'off'};
      proxy_next_upstream error timeout http_503 non_idempotent;
      proxy_next_upstream_tries 3;
      proxy_connect_timeout 2s;
      proxy_read_timeout 130s;
      proxy_send_timeout 130s;
    }
  }
}
`,
    );
    if (this.proc) {
      this.proc.kill('SIGHUP');
      await sleep(500);
      return;
    }
    this.proc = spawn('nginx', ['-c', join(this.dir, 'nginx.conf'), '-p', this.dir], { stdio: 'ignore' });
    for (let i = 0; i < 100; i++) {
      try {
        await fetch(`${this.url}/healthz`);
        return;
      } catch {
        await sleep(50);
      }
    }
    throw new Error('nginx did not start');
  }

  async stop(): Promise<void> {
    this.proc?.kill('SIGQUIT');
    await sleep(300);
    this.proc?.kill('SIGKILL');
    this.forget(false);
  }
}
