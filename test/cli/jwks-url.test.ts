/**
 * `optmark verify --jwks URL` fetches what it is pointed at as a tool inside
 * a private network must: no redirect followed, no loopback, private or
 * link-local address unless --allow-private, at most 1 MB, within 10 s, and
 * no error that repeats what the server sent. Every server here is on
 * loopback, which is itself "private": the cases that must work pass
 * --allow-private, and the refusal of the address is checked without it.
 */
import { execFile } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SigningKeys } from '../../src/adapters/signing-keys.js';
import { BIN, childEnv, XMP_JPG } from '../process/support.js';

const work = mkdtempSync(join(tmpdir(), 'optmark-jwks-url-'));
const SECRET = 'SECRET-PAYLOAD-7f3a';
let server: Server;
let base: string;
let jwks: string;
let marked: string;
/** Requests the server received, by path: a refused address must never reach it. */
const hits = new Map<string, number>();

function optmark(...args: string[]): Promise<{ code: number; stdout: string; stderr: string; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: work, encoding: 'utf8', env: childEnv({ OPTMARK_DATA_DIR: join(work, 'ours') }), timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr, ms: performance.now() - started });
    });
  });
}

const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
  '/jwks.json': (_req, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end(jwks),
  '/redirect': (_req, res) => res.writeHead(302, { Location: '/jwks.json' }).end(),
  // 2 MB streamed without a length, then 2 MB declared: neither is read past 1 MB.
  '/huge': (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    const piece = Buffer.alloc(64 * 1024, 0x20);
    let sent = 0;
    const more = () => {
      while (sent < 2 * 1024 * 1024) {
        sent += piece.length;
        if (!res.write(piece)) return void res.once('drain', more);
      }
      res.end();
    };
    more();
  },
  '/declared-huge': (_req, res) => res.writeHead(200, { 'Content-Length': String(2 * 1024 * 1024) }).end(Buffer.alloc(2 * 1024 * 1024, 0x20)),
  '/not-json': (_req, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end(`${SECRET} {"keys": oops`),
  '/missing': (_req, res) => res.writeHead(404).end(SECRET),
  // Headers, then nothing: the fetch gives up at its time limit.
  '/silent': (_req, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).write('{'),
};

beforeAll(async () => {
  // A deployment's signed file and its public keys, as its server would publish them.
  const theirs = join(work, 'theirs');
  const protect = await new Promise<number>((resolve) =>
    execFile(process.execPath, [BIN, 'protect', '--out', work, XMP_JPG], { env: childEnv({ OPTMARK_DATA_DIR: theirs }) }, (error) => resolve(error ? 1 : 0)),
  );
  expect(protect).toBe(0);
  marked = join(work, 'XMP-optout.jpg');
  jwks = JSON.stringify(SigningKeys.open(join(theirs, 'signing-keys.json')).jwks());
  server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0]!;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    (routes[path] ?? ((_q, r) => r.writeHead(404).end()))(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  rmSync(work, { recursive: true, force: true });
});

const provenanceOf = (stdout: string) => (JSON.parse(stdout.trim().split('\n')[0]!) as { provenance: unknown }).provenance;

describe('with --allow-private, a loopback JWKS', () => {
  it('is fetched and checks the tag', async () => {
    const run = await optmark('verify', '--json', '--allow-private', '--jwks', `${base}/jwks.json`, marked);
    expect(run.code).toBe(0);
    expect(provenanceOf(run.stdout)).toEqual({ present: true, valid: true, verifiable: true });
  });

  it.each([
    ['a redirect, even to a JWKS on the same server, is not followed', '/redirect', /answered with a redirect \(HTTP 302\), which is not followed/],
    ['an answer of 2 MB without a length: refused once past 1 MB', '/huge', /more than the 1048576 bytes a JWKS may have/],
    ['an answer that declares 2 MB: refused from its length', '/declared-huge', /its answer is 2097152 bytes, more than the 1048576/],
    ['an answer that is not JSON: said so, without repeating it', '/not-json', /its answer is not JSON$/],
    ['a 404: said so, without repeating its body', '/missing', /it answered HTTP 404$/],
  ])('%s', async (_, path, message) => {
    const run = await optmark('verify', '--json', '--allow-private', '--jwks', `${base}${path}`, marked);
    expect(run.code).toBe(1);
    const failure = JSON.parse(run.stdout) as { error: string; code: string };
    expect(failure.code).toBe('unreadable_jwks');
    expect(failure.error).toMatch(message);
    expect(run.stdout + run.stderr).not.toContain(SECRET);
    expect(run.stdout + run.stderr).not.toContain('oops');
  });

  it('an answer that never ends: given up after 10 s', async () => {
    const run = await optmark('verify', '--allow-private', '--jwks', `${base}/silent`, marked);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/no complete answer within 10 s/);
    expect(run.ms).toBeGreaterThan(9_000);
    expect(run.ms).toBeLessThan(30_000);
  });
});

describe('without --allow-private', () => {
  it.each([
    ['a loopback address', () => `${base}/jwks.json`, /127\.0\.0\.1 is at 127\.0\.0\.1, a loopback address; pass --allow-private/],
    ['a name that resolves to loopback', () => `${base.replace('127.0.0.1', 'localhost')}/jwks.json`, /localhost is at (127\.0\.0\.1|::1), a loopback address/],
    ['a link-local address (cloud metadata)', () => 'http://169.254.169.254/latest/meta-data/', /169\.254\.169\.254, a linkLocal address/],
    ['a private address', () => 'http://10.0.0.1/jwks.json', /10\.0\.0\.1, a private address/],
    ['an IPv6 unique-local address', () => 'http://[fd00::1]/jwks.json', /fd00::1, a uniqueLocal address/],
  ])('%s is refused before any request is made', async (_, url, message) => {
    const before = hits.get('/jwks.json') ?? 0;
    const run = await optmark('verify', '--jwks', url(), marked);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(message);
    expect(hits.get('/jwks.json') ?? 0).toBe(before);
  });

  it('--allow-private without --jwks is a usage error', async () => {
    const run = await optmark('verify', '--allow-private', marked);
    expect(run.code).toBe(2);
  });
});
