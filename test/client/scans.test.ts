/**
 * optmark/client's repository scans against a real server and a repository
 * served by git daemon on loopback: create, wait, report (JSON and CSV),
 * the fix as a zip and as a pushed branch; starting a scan is not tried
 * again after a network error (the server may have counted it), and a
 * service-wide pause is not retried but surfaces with its Retry-After.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unzipSync } from 'fflate';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type OptmarkError } from '../../src/client/index.js';
import { protect } from '../../src/app/protect-image.js';
import { git, makeRepository, serveRepositories, type GitServers } from '../support/git-server.js';
import { startTestServer, type TestServer } from '../support/server.js';

const root = mkdtempSync(join(tmpdir(), 'optmark-client-scans-'));
let servers: GitServers;
let t: TestServer;
let key: string;

beforeAll(async () => {
  const jpeg = await sharp({ create: { width: 20, height: 20, channels: 3, background: '#123456' } }).jpeg().toBuffer();
  makeRepository(root, 'site', [
    { path: 'a/marked.jpg', bytes: protect(jpeg).bytes },
    { path: 'a/plain.jpg', bytes: jpeg },
    { path: 'README.md', bytes: 'site' },
  ]);
  servers = await serveRepositories(root);
  t = await startTestServer({ env: { OPTMARK_SCAN_SOURCES: servers.daemonUrl } });
  await t.server.admin.createAccount('client-scans', 'pro');
  await t.server.people.createUser({ account: 'client-scans', email: 'scans@example.com', role: 'owner', password: 'correct horse battery staple', actor: 'cli' });
  key = (await t.server.admin.issueKey('client-scans', { user: 'scans@example.com' })).key;
});

afterAll(async () => {
  await t?.close();
  await servers?.close();
  rmSync(root, { recursive: true, force: true });
});

describe('optmark/client scans', () => {
  it('starts a scan, waits for it, reads the report as JSON and CSV, and fixes it as a zip and as a branch', async () => {
    const client = createClient({ baseUrl: t.url, apiKey: key });
    const { id, status } = await client.scans.create({ repository: `${servers.daemonUrl}site.git` });
    expect(status).toBe('queued');
    const seen: string[] = [];
    const scan = await client.scans.wait(id, { intervalMs: 50, onProgress: (s) => seen.push(s.status) });
    expect(scan.status).toBe('done');
    expect(seen.at(-1)).toBe('done');
    expect(scan.summary).toEqual({ images: 2, optedOut: 1, notOptedOut: 1, failed: 0, skipped: 0 });
    const report = await client.scans.report(id);
    expect(report.coverage).toEqual({ optedOut: 1, images: 2, ratio: 0.5 });
    expect(report.items.map((i) => [i.path, i.status])).toEqual([
      ['a/marked.jpg', 'optedOut'],
      ['a/plain.jpg', 'notOptedOut'],
    ]);
    expect((await client.scans.reportCsv(id)).split('\r\n')[2]).toMatch(/^"a\/plain.jpg","notOptedOut"/);
    expect((await client.scans.list()).map((s) => s.id)).toContain(id);
    const zip = unzipSync(new Uint8Array(await (await client.scans.fix(id, { confirm: 1 })).arrayBuffer()));
    expect(Object.keys(zip)).toEqual(['a/plain.jpg']);
    const pushed = await client.scans.fixAndPush(id, { confirm: 1, token: 'git-daemon-takes-any' });
    expect(git(join(root, 'site.git'), 'rev-parse', `refs/heads/${pushed.branch}`)).toBe(pushed.commit);
    const wrong = (await client.scans.fix(id, { confirm: 3 }).catch((e: unknown) => e)) as OptmarkError;
    expect(wrong).toMatchObject({ status: 400, code: 'invalid_option' });
  });

  it('does not start a scan twice after a network error, and does not retry a service-wide pause', async () => {
    let posts = 0;
    const flaky = createClient({
      baseUrl: t.url,
      apiKey: key,
      backoffMs: { base: 1, max: 2 },
      fetch: async (input, init) => {
        if (init?.method === 'POST') {
          posts += 1;
          // The request reaches the server, the answer is lost.
          await fetch(input, init);
          throw new TypeError('fetch failed');
        }
        return fetch(input, init);
      },
    });
    await expect(flaky.scans.create({ repository: `${servers.daemonUrl}site.git` })).rejects.toMatchObject({ code: 'network_error' });
    expect(posts).toBe(1);
    await t.server.scans.pause();
    try {
      let tries = 0;
      const client = createClient({ baseUrl: t.url, apiKey: key, onRetry: () => tries++ });
      const paused = (await client.scans.create({ repository: `${servers.daemonUrl}site.git` }).catch((e: unknown) => e)) as OptmarkError;
      expect(paused).toMatchObject({ status: 503, code: 'scans_paused', retryAfter: 3600 });
      expect(tries).toBe(0);
    } finally {
      await t.server.scans.resume();
    }
  });
});
