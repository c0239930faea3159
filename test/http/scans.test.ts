/**
 * Repository scans against a real server, real repositories made with git
 * and served on loopback by `git daemon` and `git http-backend` (docs/scans.md):
 * the exact report of a tree holding marked, unmarked, broken, oversized,
 * LFS-pointer, symlinked and non-image files in nested folders; the exact
 * quota drawn; CSV; a read token used for the fetch and found nowhere else;
 * the allow-list; the user's daily limit and the service-wide ceiling; a
 * restart mid-scan (resumed, nothing counted twice; a token scan ends
 * failed and uncounted); the month's limit running out mid-scan; cancel;
 * another account's scan; and the same on PostgreSQL.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { sql } from 'kysely';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { childEnv } from '../process/support.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import { unzipSync } from 'fflate';
import { protect } from '../../src/app/protect-image.js';
import { ExifTool } from '../support/exiftool.js';
import { git } from '../support/git-server.js';
import { makeRepository, serveRepositories, type GitServers, type RepoFile } from '../support/git-server.js';
import { signInToDashboard } from '../support/dashboard.js';
import { freshDataDir, startTestServer, type TestServer } from '../support/server.js';

const root = mkdtempSync(join(tmpdir(), 'optmark-scan-repos-'));
const BIN = fileURLToPath(new URL('../../bin/optmark.js', import.meta.url));
const TOKEN = 'ghp_TestToken_4f9a1c2b7e_DoNotLeak';

const png = (seed: number, size = 24) =>
  sharp({ create: { width: size, height: size, channels: 3, background: { r: seed % 256, g: (seed * 7) % 256, b: (seed * 13) % 256 } } })
    .png()
    .toBuffer();
const jpeg = await sharp({ create: { width: 32, height: 32, channels: 3, background: { r: 200, g: 100, b: 50 } } }).jpeg().toBuffer();
const marked = protect(jpeg).bytes;
const unmarkedPng = await png(1);
const webp = await sharp({ create: { width: 16, height: 16, channels: 3, background: '#336699' } }).webp().toBuffer();

/** The tree every report test scans, and what its report must say. */
const SITE: RepoFile[] = [
  { path: 'README.md', bytes: '# site\n' },
  { path: 'images/marked.jpg', bytes: marked },
  { path: 'images/deep/er/photo.png', bytes: unmarkedPng },
  { path: 'assets/logo', bytes: webp },
  { path: 'images/broken.jpg', bytes: Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from('not really a jpeg')]) },
  { path: 'images/huge.png', bytes: Buffer.alloc(25 * 1024 * 1024 + 1) },
  { path: 'design/hero.jpg', bytes: 'version https://git-lfs.github.com/spec/v1\noid sha256:' + 'a'.repeat(64) + '\nsize 123456\n' },
  { path: 'images/outside.jpg', link: '/etc/passwd' },
  { path: 'docs/notes.txt', bytes: 'hello' },
];
const EXPECTED = {
  'images/marked.jpg': ['optedOut', null],
  'images/deep/er/photo.png': ['notOptedOut', null],
  'assets/logo': ['notOptedOut', null],
  'images/broken.jpg': ['failed', 'corrupt_image'],
  'images/huge.png': ['skipped', 'too_large'],
  'design/hero.jpg': ['skipped', 'lfs_pointer'],
  'images/outside.jpg': ['skipped', 'symlink'],
};

let servers: GitServers;
let t: TestServer;
const log = new PassThrough();
let logText = '';
log.on('data', (chunk: Buffer) => (logText += chunk.toString('utf8')));

async function person(server: TestServer, account: string, email: string, plan: 'pro' | 'free' = 'pro'): Promise<string> {
  await server.server.admin.createAccount(account, plan).catch(() => {});
  await server.server.people.createUser({ account, email, role: 'owner', password: 'correct horse battery staple', actor: 'cli' });
  return (await server.server.admin.issueKey(account, { user: email })).key;
}

const api = (server: TestServer, key: string, path: string, init: RequestInit = {}) =>
  fetch(`${server.url}${path}`, { ...init, headers: { Authorization: `Bearer ${key}`, ...(init.body ? { 'Content-Type': 'application/json' } : {}), ...(init.headers as Record<string, string>) } });

async function submit(server: TestServer, key: string, body: Record<string, unknown>): Promise<Response> {
  return api(server, key, '/api/v1/scans', { method: 'POST', body: JSON.stringify(body) });
}

async function finished(server: TestServer, key: string, id: string, timeoutMs = 30_000): Promise<Record<string, any>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const scan = (await (await api(server, key, `/api/v1/scans/${id}`)).json()) as Record<string, any>;
    if (['done', 'failed', 'cancelled'].includes(scan.status)) return scan;
    if (Date.now() > until) throw new Error(`scan ${id} still ${scan.status}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  makeRepository(root, 'site', SITE, { gitlinks: ['vendor/lib'], branches: { release: [{ path: 'extra.png', bytes: await png(9) }] } });
  makeRepository(root, 'private', SITE);
  // For the tests about counting scans: one small image, a quick fetch.
  makeRepository(root, 'tiny', [{ path: 'a.png', bytes: unmarkedPng }]);
  servers = await serveRepositories(root, { private: TOKEN });
  t = await startTestServer({ env: { OPTMARK_SCAN_SOURCES: `${servers.daemonUrl},${servers.httpUrl}` }, logTo: log });
}, 60_000);

afterAll(async () => {
  await t?.close();
  await servers?.close();
  rmSync(root, { recursive: true, force: true });
});

describe('a scan over git daemon', () => {
  it('reports every image exactly, counts other files, and draws one check per image checked', async () => {
    const key = await person(t, 'scan-site', 'site@example.com');
    const before = (await t.server.admin.usage('scan-site')).verify.used;
    const response = await submit(t, key, { repository: `${servers.daemonUrl}site.git` });
    expect(response.status).toBe(202);
    const accepted = (await response.json()) as Record<string, any>;
    expect(accepted).toEqual({ id: expect.stringMatching(/^scn_[0-9a-f]{32}$/), status: 'queued', links: { self: `/api/v1/scans/${accepted.id}`, report: `/api/v1/scans/${accepted.id}/report` } });
    expect(response.headers.get('location')).toBe(accepted.links.self);
    const scan = await finished(t, key, accepted.id);
    expect(scan.status).toBe('done');
    expect(scan.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(scan.summary).toEqual({ images: 7, optedOut: 1, notOptedOut: 2, failed: 1, skipped: 3 });
    expect(scan.otherFiles).toBe(3);
    expect(scan.progress).toMatchObject({ files: 10, processed: 10 });
    const report = (await (await api(t, key, `/api/v1/scans/${accepted.id}/report`)).json()) as Record<string, any>;
    expect(report.coverage).toEqual({ optedOut: 1, images: 7, ratio: 1 / 7 });
    const byPath = Object.fromEntries(report.items.map((i: any) => [i.path, [i.status, i.code]]));
    expect(byPath).toEqual(EXPECTED);
    const markedItem = report.items.find((i: any) => i.path === 'images/marked.jpg');
    expect(markedItem).toMatchObject({ value: expect.stringContaining('DMI-PROHIBITED'), provenance: { present: false }, signals: ['iptc.dataMining'], format: 'jpeg', sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    // Only opted out and not opted out draw on the month's checks: 3.
    expect((await t.server.admin.usage('scan-site')).verify.used - before).toBe(3);

    const csv = await api(t, key, `/api/v1/scans/${accepted.id}/report`, { headers: { Accept: 'text/csv' } });
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    const lines = (await csv.text()).trim().split('\r\n');
    expect(lines[0]).toBe('path,status,reason,code,bytes,sha256,format,value,signals,provenancePresent,provenanceValid,fingerprintPresent');
    expect(lines).toHaveLength(8);
    expect(lines.find((l) => l.startsWith('"images/outside.jpg"'))).toContain('"skipped"');
  });

  it('scans a branch by name', async () => {
    const key = await person(t, 'scan-branch', 'branch@example.com');
    const { id } = (await (await submit(t, key, { repository: `${servers.daemonUrl}site.git`, ref: 'release' })).json()) as { id: string };
    const scan = await finished(t, key, id);
    expect(scan.summary).toMatchObject({ images: 8, notOptedOut: 3 });
    const missing = (await (await submit(t, key, { repository: `${servers.daemonUrl}site.git`, ref: 'no-such-branch' })).json()) as { id: string };
    const failed = await finished(t, key, missing.id);
    expect(failed).toMatchObject({ status: 'failed', reason: expect.stringContaining('no-such-branch') });
  });
});

describe('a scan over HTTP with a read token', () => {
  it('uses the token for the fetch and keeps it out of the database, the logs and every answer', async () => {
    const key = await person(t, 'scan-private', 'private@example.com');
    const without = (await (await submit(t, key, { repository: `${servers.httpUrl}private.git` })).json()) as { id: string };
    expect(await finished(t, key, without.id)).toMatchObject({ status: 'failed', reason: expect.stringContaining('needs a read token') });
    const wrong = (await (await submit(t, key, { repository: `${servers.httpUrl}private.git`, token: `${TOKEN}x` })).json()) as { id: string };
    const wrongScan = await finished(t, key, wrong.id);
    expect(wrongScan).toMatchObject({ status: 'failed', reason: expect.stringContaining('refused the read token') });

    const response = await submit(t, key, { repository: `${servers.httpUrl}private.git`, token: TOKEN });
    const accepted = (await response.json()) as { id: string };
    const scan = await finished(t, key, accepted.id);
    expect(scan.status).toBe('done');
    expect(scan.summary).toEqual({ images: 7, optedOut: 1, notOptedOut: 2, failed: 1, skipped: 3 });
    expect(scan.withToken).toBe(true);
    // The server did get it, as HTTP Basic.
    expect(servers.httpRequests.some((r) => r.authorization && Buffer.from(r.authorization.slice(6), 'base64').toString().endsWith(`:${TOKEN}`))).toBe(true);
    // Nowhere else.
    const everything = [
      JSON.stringify(await (await api(t, key, `/api/v1/scans/${accepted.id}/report`)).json()),
      JSON.stringify(scan),
      JSON.stringify(wrongScan),
      JSON.stringify(await (await api(t, key, '/api/v1/scans')).json()),
      logText,
      JSON.stringify((await sql`select * from scans`.execute(t.server.database.db)).rows),
      JSON.stringify((await sql`select * from scan_items`.execute(t.server.database.db)).rows),
      JSON.stringify((await sql`select data, output from jobs.job`.execute(t.server.database.db)).rows),
    ].join('\n');
    for (const form of [TOKEN, Buffer.from(`x-access-token:${TOKEN}`).toString('base64'), 'TestToken_4f9a']) expect(everything).not.toContain(form);
  });
});

describe('the fix', () => {
  const exiftool = new ExifTool();
  afterAll(() => exiftool.close());
  const dataMining = async (file: string) => {
    const { stdout } = await exiftool.run(['-j', '-XMP-plus:DataMining', file]);
    return (JSON.parse(stdout) as Array<{ DataMining?: string }>)[0]?.DataMining;
  };

  it('marks the images without the opt-out, after a confirmation of how many, as a zip keeping their paths', async () => {
    const key = await person(t, 'scan-fix', 'fix@example.com');
    const { id } = (await (await submit(t, key, { repository: `${servers.daemonUrl}site.git` })).json()) as { id: string };
    await finished(t, key, id);
    const protectBefore = (await t.server.admin.usage('scan-fix')).protect.used;
    const fix = (body: unknown) => api(t, key, `/api/v1/scans/${id}/fix`, { method: 'POST', body: JSON.stringify(body) });
    const unconfirmed = await fix({ confirm: 5 });
    expect(unconfirmed.status).toBe(400);
    expect(await unconfirmed.json()).toMatchObject({ code: 'invalid_option', error: expect.stringContaining('"confirm": 2') });
    const response = await fix({ confirm: 2 });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/zip');
    const files = unzipSync(new Uint8Array(await response.arrayBuffer()));
    expect(Object.keys(files).sort()).toEqual(['assets/logo', 'images/deep/er/photo.png']);
    const out = mkdtempSync(join(tmpdir(), 'optmark-fix-'));
    try {
      for (const [path, bytes] of Object.entries(files)) {
        mkdirSync(join(out, path, '..'), { recursive: true });
        writeFileSync(join(out, path), bytes);
        expect(await dataMining(join(out, path)), path).toBe('Prohibited for AI/ML training');
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
    expect((await t.server.admin.usage('scan-fix')).protect.used - protectBefore).toBe(2);
    const running = (await (await submit(t, key, { repository: `${servers.daemonUrl}gallery.git` })).json()) as { id: string };
    const early = await api(t, key, `/api/v1/scans/${running.id}/fix`, { method: 'POST', body: JSON.stringify({ confirm: 1 }) });
    expect(early.status).toBe(409);
    expect(await early.json()).toMatchObject({ code: 'scan_not_finished' });
    await finished(t, key, running.id, 60_000);
  }, 90_000);

  it('names no zip entry that an unzip could write outside its folder: backslashes, drive letters and names that differ only by case are renamed, and the report says so', async () => {
    const images = await Promise.all([png(21), png(22), png(23), png(24), png(25)]);
    makeRepository(root, 'windows', [
      { path: '..\\..\\evil.png', bytes: images[0] },
      { path: 'C:\\Users\\Public\\evil2.png', bytes: images[1] },
      { path: 'photos/ok.png', bytes: images[2] },
      { path: 'photos/OK.png', bytes: images[3] },
      { path: 'FIX-REPORT.txt', bytes: images[4] },
    ]);
    const key = await person(t, 'scan-fix-names', 'names@example.com');
    const { id } = (await (await submit(t, key, { repository: `${servers.daemonUrl}windows.git` })).json()) as { id: string };
    expect((await finished(t, key, id)).summary).toMatchObject({ notOptedOut: 5 });
    const response = await api(t, key, `/api/v1/scans/${id}/fix`, { method: 'POST', body: JSON.stringify({ confirm: 5 }) });
    expect(response.status).toBe(200);
    const files = unzipSync(new Uint8Array(await response.arrayBuffer()));
    const names = Object.keys(files).sort();
    // Of two names that differ only by case (one file on macOS and Windows), the second in the report's order is renamed.
    expect(names).toEqual(['.._.._evil.png', 'C__Users_Public_evil2.png', 'FIX-REPORT (2).txt', 'FIX-REPORT.txt', 'photos/OK.png', 'photos/ok (2).png'].sort());
    for (const name of names) expect(name).not.toMatch(/\\|:|(^|\/)\.\.?(\/|$)/);
    const report = new TextDecoder().decode(files['FIX-REPORT (2).txt']);
    expect(report).toContain('"..\\\\..\\\\evil.png" is .._.._evil.png');
    expect(report).toContain('"photos/ok.png" is photos/ok (2).png');
    expect(report).not.toContain('Not marked');
  });

  it('given a token that may write, pushes one commit on a new branch holding the marked files', async () => {
    const key = await person(t, 'scan-push', 'push@example.com');
    const { id } = (await (await submit(t, key, { repository: `${servers.httpUrl}private.git`, token: TOKEN })).json()) as { id: string };
    const scan = await finished(t, key, id);
    expect(scan.status).toBe('done');
    const response = await api(t, key, `/api/v1/scans/${id}/fix`, { method: 'POST', body: JSON.stringify({ confirm: 2, push: true, token: TOKEN }) });
    expect(response.status).toBe(200);
    const pushed = (await response.json()) as { branch: string; commit: string; marked: Array<{ path: string }>; failed: unknown[] };
    expect(pushed.branch).toMatch(/^optmark\/opt-out-\d{8}-[0-9a-f]{8}$/);
    expect(pushed.failed).toEqual([]);
    const bare = join(root, 'private.git');
    expect(git(bare, 'rev-parse', `refs/heads/${pushed.branch}`)).toBe(pushed.commit);
    expect(git(bare, 'log', '-1', '--format=%s', pushed.commit)).toBe('Add the IPTC Data Mining opt-out to 2 images');
    expect(git(bare, 'rev-parse', `${pushed.commit}^`)).toBe(scan.commit);
    expect(git(bare, 'diff', '--name-only', scan.commit, pushed.commit).split('\n').sort()).toEqual(['assets/logo', 'images/deep/er/photo.png']);
    const out = mkdtempSync(join(tmpdir(), 'optmark-push-'));
    try {
      git(out, 'clone', '-q', '--branch', pushed.branch, bare, 'checkout');
      for (const path of ['assets/logo', 'images/deep/er/photo.png']) expect(await dataMining(join(out, 'checkout', path)), path).toBe('Prohibited for AI/ML training');
      // Everything else is as it was.
      expect(execFileSync('git', ['-C', join(out, 'checkout'), 'diff', '--stat', scan.commit, 'HEAD', '--', 'images/marked.jpg', 'README.md']).toString()).toBe('');
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('sources', () => {
  it('refuses a repository outside the allow-list, a private address not listed, credentials in the URL, file:// not listed', async () => {
    const key = await person(t, 'scan-sources', 'sources@example.com');
    for (const repository of ['https://example.com/owner/repo.git', 'http://127.0.0.2:9/repo.git', 'git://127.0.0.1:1/elsewhere.git', `file://${root}/site.git`, 'http://user:pw@127.0.0.1/x.git', 'not a url', 'ssh://git@github.com/owner/repo.git']) {
      const response = await submit(t, key, { repository });
      expect(response.status, repository).toBe(422);
      expect(await response.json(), repository).toMatchObject({ code: 'source_not_allowed', error: expect.any(String) });
    }
    const bad = await submit(t, key, { repository: `${servers.daemonUrl}site.git`, ref: '--upload-pack=touch /tmp/x' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 'invalid_option' });
    const extra = await submit(t, key, { repository: `${servers.daemonUrl}site.git`, value: 'x' });
    expect(extra.status).toBe(400);
    // A control character (a NUL the database cannot store) is refused in words, not a 500.
    for (const repository of [`${servers.daemonUrl}site.git\u0000`, `${servers.daemonUrl}si\nte.git`]) {
      const control = await submit(t, key, { repository });
      expect(control.status, JSON.stringify(repository)).toBe(400);
      expect(await control.json()).toMatchObject({ code: 'invalid_option', error: expect.stringContaining('without control characters') });
    }
    // None of these counted toward the day's scans.
    expect(((await (await api(t, key, "/api/v1/scans")).json()) as { scans: unknown[] }).scans).toHaveLength(0);
  });

  it('needs the verify scope to start or cancel a scan, any scope to read; another account\'s scan is not found', async () => {
    const key = await person(t, 'scan-scope', 'scope@example.com');
    const protectOnly = (await t.server.admin.issueKey('scan-scope', { user: 'scope@example.com', scopes: ['protect'] })).key;
    const refused = await submit(t, protectOnly, { repository: `${servers.daemonUrl}site.git` });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 'scope_not_allowed' });
    const { id } = (await (await submit(t, key, { repository: `${servers.daemonUrl}site.git` })).json()) as { id: string };
    expect((await api(t, protectOnly, `/api/v1/scans/${id}`)).status).toBe(200);
    const other = await person(t, 'scan-other', 'other@example.com');
    for (const path of [`/api/v1/scans/${id}`, `/api/v1/scans/${id}/report`]) {
      const response = await api(t, other, path);
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ code: 'scan_not_found' });
    }
    expect((await api(t, other, `/api/v1/scans/${id}`, { method: 'DELETE' })).status).toBe(404);
    await finished(t, key, id);
    const again = await api(t, key, `/api/v1/scans/${id}`, { method: 'DELETE' });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ code: 'scan_not_cancellable' });
    const free = await person(t, 'scan-free', 'free@example.com', 'free');
    const freeAnswer = await submit(t, free, { repository: `${servers.daemonUrl}site.git` });
    expect(freeAnswer.status).toBe(403);
    expect((await api(t, key, '/api/v1/scans', { method: 'PUT' })).status).toBe(405);
  });
});

describe('limits', () => {
  it('refuses the 11th scan of a person in a UTC day with 429 scan_limit_reached until midnight', async () => {
    const key = await person(t, 'scan-daily', 'daily@example.com');
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const response = await submit(t, key, { repository: `${servers.daemonUrl}tiny.git` });
      expect(response.status).toBe(202);
      ids.push(((await response.json()) as { id: string }).id);
    }
    const eleventh = await submit(t, key, { repository: `${servers.daemonUrl}tiny.git` });
    expect(eleventh.status).toBe(429);
    expect(await eleventh.json()).toMatchObject({ code: 'scan_limit_reached', error: expect.stringContaining('10') });
    const now = new Date();
    const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
    expect(Math.abs(Number(eleventh.headers.get('retry-after')) - (midnight - now.getTime()) / 1000)).toBeLessThan(5);
    // Another person of the same account has their own 10.
    const colleague = await person(t, 'scan-daily', 'colleague@example.com');
    expect((await submit(t, colleague, { repository: `${servers.daemonUrl}tiny.git` })).status).toBe(202);
    for (const id of ids) expect((await finished(t, key, id, 60_000)).status).toBe('done');
  }, 90_000);

  it('a scan the job queue cannot take is 503 service_unavailable, ends failed and uncounted, and a try later runs', async () => {
    const key = await person(t, 'scan-unqueued', 'unqueued@example.com');
    // The queue's table refuses every new job, as a database that cannot write would.
    const db = t.server.database.db;
    await sql`create function test_refuse_jobs() returns trigger language plpgsql as $$ begin raise exception 'no jobs today'; end $$`.execute(db);
    await sql`create trigger test_refuse_jobs before insert on jobs.job for each row execute function test_refuse_jobs()`.execute(db);
    const dashboard = await signInToDashboard(t, 'scan-unqueued');
    let refused: Response;
    let refusedPage: Response;
    try {
      refused = await submit(t, key, { repository: `${servers.daemonUrl}tiny.git` });
      refusedPage = await dashboard.browser.form('/scans', { csrf: dashboard.formToken, repository: `${servers.daemonUrl}tiny.git`, ref: 'main' });
    } finally {
      await sql`drop trigger test_refuse_jobs on jobs.job`.execute(db);
      await sql`drop function test_refuse_jobs()`.execute(db);
    }
    expect(refused.status).toBe(503);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.json()).toMatchObject({ code: 'service_unavailable', error: expect.stringContaining('could not be queued') });
    // The Scans page says so and keeps what was typed.
    expect(refusedPage.status).toBe(503);
    expect(Number(refusedPage.headers.get('retry-after'))).toBeGreaterThan(0);
    const html = await refusedPage.text();
    expect(html).toContain('The scan could not be queued');
    expect(html).toContain(`value="${servers.daemonUrl}tiny.git"`);
    expect(html).toContain('value="main"');
    const listed = ((await (await api(t, key, '/api/v1/scans')).json()) as { scans: Array<Record<string, any>> }).scans;
    expect(listed).toEqual([expect.objectContaining({ status: 'failed', reason: expect.stringContaining('not counted') }), expect.objectContaining({ status: 'failed', reason: expect.stringContaining('not counted') })]);
    for (const scan of listed) expect((await sql<{ counted: boolean }>`select counted from scans where id = ${scan.id}`.execute(db)).rows).toEqual([{ counted: false }]);
    // Ended before any image: its page says why, with no coverage (a full meter of 100 % of nothing) and no report.
    const failedPage = (await dashboard.browser.page(`/scans/${String(listed[0]!.id)}`)).html;
    expect(failedPage).toContain('not counted');
    expect(failedPage).not.toContain('id="coverage-heading"');
    expect(failedPage).not.toContain('id="report-heading"');
    const again = await submit(t, key, { repository: `${servers.daemonUrl}tiny.git` });
    expect(again.status).toBe(202);
    expect((await finished(t, key, ((await again.json()) as { id: string }).id)).status).toBe('done');
  });
});

describe('the service-wide ceiling', () => {
  it('with OPTMARK_SCAN_CEILING=3 the 4th scan of anyone gets 503 scans_paused; running scans finish; operators pause and resume', async () => {
    // A fresh PostgreSQL database: the setting seeds the ceiling when the database is created.
    const server = await startTestServer({ backend: 'postgres', env: { OPTMARK_SCAN_SOURCES: servers.daemonUrl, OPTMARK_SCAN_CEILING: '3' } });
    try {
      const a = await person(server, 'ceil-a', 'a@example.com');
      const b = await person(server, 'ceil-b', 'b@example.com');
      const ids = [];
      for (const key of [a, a, b]) ids.push(((await (await submit(server, key, { repository: `${servers.daemonUrl}tiny.git` })).json()) as { id: string }).id);
      const fourth = await submit(server, b, { repository: `${servers.daemonUrl}tiny.git` });
      expect(fourth.status).toBe(503);
      const body = (await fourth.json()) as { code: string; error: string };
      expect(body.code).toBe('scans_paused');
      expect(body.error).toMatch(/for everyone/);
      expect(body.error).toMatch(/temporary/);
      expect(Number(fourth.headers.get('retry-after'))).toBeGreaterThan(0);
      for (const [i, id] of ids.entries()) expect((await finished(server, i < 2 ? a : b, id)).status).toBe('done');
      expect(await server.server.scans.status()).toMatchObject({ today: 3, ceiling: 3, paused: false });
      // The command line, on the same database: the count, and a new ceiling, audited.
      const cli = (...args: string[]) =>
        new Promise<{ code: number; stdout: string }>((resolve) =>
          execFile(process.execPath, [BIN, 'scans', ...args], { encoding: 'utf8', env: childEnv({ DATABASE_URL: server.databaseUrl! }) }, (error, stdout) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout })),
        );
      expect(JSON.parse((await cli('status', '--json')).stdout)).toEqual({ today: 3, ceiling: 3, paused: false });
      const raised = await cli('set-ceiling', '10');
      expect(raised.stdout).toContain('Today (UTC): 3 of 10 repository scans');
      expect((await cli('set-ceiling', 'many')).code).toBe(2);
      const audit = (await sql<{ action: string; detail: unknown }>`select action, detail from audit_log where action like 'scans.%'`.execute(server.server.database.db)).rows;
      expect(audit.map((r) => r.action)).toEqual(['scans.ceiling-set']);
      await server.server.scans.pause();
      expect((await submit(server, b, { repository: `${servers.daemonUrl}tiny.git` })).status).toBe(503);
      await server.server.scans.resume();
      expect((await submit(server, b, { repository: `${servers.daemonUrl}tiny.git` })).status).toBe(202);
    } finally {
      await server.close();
    }
  }, 60_000);
});

describe('interruptions', () => {
  it('a restart mid-scan resumes it at the same commit; nothing is checked or counted twice; a scan with a token ends failed and uncounted', async () => {
    const many: RepoFile[] = [];
    for (let i = 0; i < 120; i++) many.push({ path: `gallery/${String(i).padStart(3, '0')}.png`, bytes: await png(i, 160) });
    makeRepository(root, 'gallery', many);
    const dataDir = freshDataDir();
    const env = { OPTMARK_SCAN_SOURCES: `${servers.daemonUrl},${servers.httpUrl}`, OPTMARK_DECODE_CONCURRENCY: '1' };
    let server = await startTestServer({ dataDir, env });
    const key = await person(server, 'restart', 'restart@example.com');
    const { id } = (await (await submit(server, key, { repository: `${servers.daemonUrl}gallery.git` })).json()) as { id: string };
    const withToken = (await (await submit(server, key, { repository: `${servers.daemonUrl}gallery.git`, token: 'abc' })).json()) as { id: string };
    let began: string | undefined;
    for (;;) {
      const scan = (await (await api(server, key, `/api/v1/scans/${id}`)).json()) as Record<string, any>;
      if (scan.progress.imagesChecked > 0) {
        expect(scan.progress.imagesChecked).toBeLessThan(120);
        began = scan.commit;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await server.close();
    expect(began).toMatch(/^[0-9a-f]{40}$/);
    // While the server is down the branch moves on: the scan resumes at the commit it began with.
    const work = mkdtempSync(join(tmpdir(), 'optmark-moved-'));
    git(work, 'clone', '-q', join(root, 'gallery.git'), '.');
    writeFileSync(join(work, 'gallery', 'later.png'), await png(500, 160));
    git(work, 'add', '-A');
    git(work, 'commit', '-q', '-m', 'later');
    git(work, 'push', '-q', 'origin', 'HEAD:main');
    rmSync(work, { recursive: true, force: true });
    server = await startTestServer({ dataDir, env });
    try {
      const scan = await finished(server, key, id, 60_000);
      expect(scan.status).toBe('done');
      expect(scan.summary).toEqual({ images: 120, optedOut: 0, notOptedOut: 120, failed: 0, skipped: 0 });
      expect(scan.commit).toBe(began);
      expect(scan.commit).not.toBe(git(join(root, 'gallery.git'), 'rev-parse', 'main'));
      const report = (await (await api(server, key, `/api/v1/scans/${id}/report`)).json()) as { items: Array<{ path: string }> };
      expect(new Set(report.items.map((i) => i.path)).size).toBe(120);
      const tokenScan = await finished(server, key, withToken.id);
      expect(tokenScan).toMatchObject({ status: 'failed', reason: 'interrupted; submit it again with the token' });
      const row = (await sql<{ counted: boolean }>`select counted from scans where id = ${withToken.id}`.execute(server.server.database.db)).rows[0];
      expect(row?.counted).toBe(false);
      // 120 images checked once each, plus what the token scan checked before the stop (kept in its report).
      expect((await server.server.admin.usage('restart')).verify.used).toBe(120 + tokenScan.summary.notOptedOut);
    } finally {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  it('an image over the pixel limit is a skipped candidate (too_many_pixels) and counts nothing', async () => {
    makeRepository(root, 'large', [
      { path: 'big.png', bytes: await png(7, 200) },
      { path: 'small.png', bytes: await png(8, 24) },
    ]);
    const server = await startTestServer({ env: { OPTMARK_SCAN_SOURCES: servers.daemonUrl, OPTMARK_MAX_IMAGE_PIXELS: '10000' } });
    try {
      const key = await person(server, 'pixels', 'pixels@example.com');
      const { id } = (await (await submit(server, key, { repository: `${servers.daemonUrl}large.git` })).json()) as { id: string };
      const scan = await finished(server, key, id);
      expect(scan.summary).toEqual({ images: 2, optedOut: 0, notOptedOut: 1, failed: 0, skipped: 1 });
      const report = (await (await api(server, key, `/api/v1/scans/${id}/report`)).json()) as { items: Array<{ path: string; status: string; code: string | null }> };
      expect(report.items.map((i) => [i.path, i.status, i.code])).toEqual([
        ['big.png', 'skipped', 'too_many_pixels'],
        ['small.png', 'notOptedOut', null],
      ]);
      expect((await server.server.admin.usage('pixels')).verify.used).toBe(1);
    } finally {
      await server.close();
    }
  });

  it('the month\'s image checks running out mid-scan end it failed with the reason; what was checked stays in the report', async () => {
    const server = await startTestServer({ env: { OPTMARK_SCAN_SOURCES: servers.daemonUrl }, paidPlanLimits: { verifyPerMonth: 2 } });
    try {
      const key = await person(server, 'short', 'short@example.com');
      const { id } = (await (await submit(server, key, { repository: `${servers.daemonUrl}site.git` })).json()) as { id: string };
      const scan = await finished(server, key, id);
      expect(scan).toMatchObject({ status: 'failed', reason: expect.stringContaining('monthly image-check limit of 2') });
      const report = (await (await api(server, key, `/api/v1/scans/${id}/report`)).json()) as { items: Array<{ status: string }> };
      expect(report.items.filter((i) => i.status === 'optedOut' || i.status === 'notOptedOut')).toHaveLength(2);
      expect((await server.server.admin.usage('short')).verify.used).toBe(2);
    } finally {
      await server.close();
    }
  }, 60_000);

  it('cancels a scan that is queued or running', async () => {
    const key = await person(t, 'scan-cancel', 'cancel@example.com');
    const { id } = (await (await submit(t, key, { repository: `${servers.daemonUrl}gallery.git` })).json()) as { id: string };
    const response = await api(t, key, `/api/v1/scans/${id}`, { method: 'DELETE' });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: 'cancelled' });
    const scan = await finished(t, key, id);
    expect(scan.status).toBe('cancelled');
  });
});

describe('on PostgreSQL', () => {
  it('runs a scan from the queue the same way', async () => {
    const server = await startTestServer({ backend: 'postgres', env: { OPTMARK_SCAN_SOURCES: servers.daemonUrl } });
    try {
      const key = await person(server, 'pg-scan', 'pg@example.com');
      const { id } = (await (await submit(server, key, { repository: `${servers.daemonUrl}site.git` })).json()) as { id: string };
      const scan = await finished(server, key, id);
      expect(scan.summary).toEqual({ images: 7, optedOut: 1, notOptedOut: 2, failed: 1, skipped: 3 });
      expect((await server.server.admin.usage('pg-scan')).verify.used).toBe(3);
    } finally {
      await server.close();
    }
  }, 60_000);
});
