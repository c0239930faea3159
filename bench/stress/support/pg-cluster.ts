/**
 * A throwaway PostgreSQL cluster of the run's own, so that it can be killed
 * and restarted at will without touching any shared server: initdb into a
 * temporary directory, on a free port, run as the `postgres` system user when
 * we are root (PostgreSQL refuses to run as root).
 */
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { onCleanup } from './cleanup.js';
import { freePort } from './net.js';

/** The newest installed server's bin directory (Debian puts each major version apart). */
function pgBin(): string {
  const base = '/usr/lib/postgresql';
  const versions = existsSync(base) ? readdirSync(base).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a)) : [];
  const found = versions.map((v) => join(base, v, 'bin')).find((dir) => existsSync(join(dir, 'pg_ctl')));
  if (!found) throw new Error(`no PostgreSQL server binaries under ${base} (apt-get install postgresql)`);
  return found;
}

const asRoot = process.getuid?.() === 0;

/** argv that runs `tool` as the cluster's owner. */
function command(tool: string, args: readonly string[]): [string, string[]] {
  const path = join(pgBin(), tool);
  return asRoot ? ['runuser', ['-u', 'postgres', '--', path, ...args]] : [path, [...args]];
}

function run(tool: string, args: readonly string[]): Promise<void> {
  const [file, argv] = command(tool, args);
  return new Promise((resolve, reject) => {
    // pg_ctl's postmaster inherits our stdio unless told otherwise: a pipe left open would keep us waiting.
    const child = spawn(file, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${tool} ${args.join(' ')} exited ${code}: ${stderr.trim()}`))));
  });
}

export class PgCluster {
  private running = false;
  private readonly forget: () => void;

  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {
    this.forget = onCleanup('PostgreSQL cluster', () => this.removeNow());
  }

  private get data(): string {
    return join(this.dir, 'data');
  }

  static async create(log: (line: string) => void): Promise<PgCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'optmark-stress-pg-'));
    if (asRoot) chownSync(dir, idOf('-u', 'postgres'), idOf('-g', 'postgres'));
    const cluster = new PgCluster(dir, await freePort());
    const started = performance.now();
    await run('initdb', ['-D', cluster.data, '-U', 'postgres', '-A', 'trust', '--no-locale', '-E', 'UTF8', '--no-sync']);
    await cluster.start();
    log(`PostgreSQL ${pgBin().split('/').at(-2)} cluster on 127.0.0.1:${cluster.port} ready in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    return cluster;
  }

  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** Start and wait until it accepts connections. */
  async start(): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1`;
    await run('pg_ctl', ['-D', this.data, '-l', join(this.dir, 'server.log'), '-w', '-t', '60', '-o', options, 'start']);
    this.running = true;
  }

  /** Stop the way a crash would: no checkpoint, every connection cut. */
  async kill(): Promise<void> {
    await run('pg_ctl', ['-D', this.data, '-m', 'immediate', 'stop']);
    this.running = false;
  }

  /** A new empty database; its URL. */
  async createDatabase(name: string): Promise<string> {
    const client = new pg.Client({ connectionString: this.url() });
    await client.connect();
    try {
      await client.query(`create database ${name}`);
    } finally {
      await client.end();
    }
    return this.url(name);
  }

  remove(): void {
    this.forget();
  }

  private removeNow(): void {
    if (this.running) {
      const [file, argv] = command('pg_ctl', ['-D', this.data, '-m', 'immediate', 'stop']);
      spawnSync(file, argv, { stdio: 'ignore' });
      this.running = false;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function idOf(flag: '-u' | '-g', name: string): number {
  const result = spawnSync('id', [flag, name], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`no system user ${name}: ${result.stderr.trim()}`);
  return Number(result.stdout.trim());
}
