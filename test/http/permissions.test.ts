/**
 * docs/permissions.md against the running server: every route registered has
 * a row, every row is a route, and every cell of the people's side is tried
 * with a real request for its role. Every state-changing route of a session
 * carries the form-token check, every public form the pre-session check.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatedImages } from '../support/generated.js';
import { makeRepository, serveRepositories, type GitServers } from '../support/git-server.js';
import { freshDataDir, startTestServer, type TestServer } from '../support/server.js';
import { WebClient } from '../support/web-client.js';

const JPEG = (await generatedImages()).find((g) => g.name === 'baseline.jpg')!.bytes;
const PASSWORD = 'correct horse battery staple';
const doc = readFileSync(new URL('../../docs/permissions.md', import.meta.url), 'utf8');

const ROLES = ['Signed out', 'Free', 'Member', 'Owner', 'Other owner', 'Operator'] as const;
type Role = (typeof ROLES)[number];

function tableAfter(heading: string): string[][] {
  const section = doc.slice(doc.indexOf(heading));
  const rows = section.split('\n').filter((line) => line.startsWith('| `'));
  const end = section.indexOf('\n## ', 1);
  return rows.filter((line) => end === -1 || section.indexOf(line) < end).map((line) => line.split('|').slice(1, -1).map((cell) => cell.trim()));
}

const peopleRows = tableAfter("## The people's side").map(([route, ...cells]) => {
  const [method, url] = route!.replace(/`/g, '').split(' ') as [string, string];
  return { method, url, cells: Object.fromEntries(ROLES.map((role, i) => [role, cells[i]!])) as Record<Role, string> };
});
const apiRows = tableAfter('## The API and the service').map(([route]) => route!.replace(/`/g, '').split(' ') as [string, string]);
/** What each API row's "Who" says, read from its words: the scope it needs, whether the plan must be paid, whether the key must belong to a user, or anyone. */
const apiWho = tableAfter('## The API and the service').map(([route, who]) => {
  const [method, url] = route!.replace(/`/g, '').split(' ') as [string, string];
  const text = who!;
  return {
    method,
    url,
    anyone: text === 'anyone',
    scope: /with the `(protect|verify)` scope/.exec(text)?.[1] as 'protect' | 'verify' | undefined,
    paid: text.includes('of a Pro or Lifetime account'),
    user: text.includes('that belongs to a user'),
  };
});

let t: TestServer;
const dataDir = freshDataDir();
const browsers = {} as Record<Exclude<Role, 'Signed out'>, WebClient>;
const emails = {} as Record<Exclude<Role, 'Signed out'>, string>;
let target = 0;
/** A record the Pro account's member made on the dashboard, in a batch; its account's public lookup is on. */
const record = { id: '', batch: '', sha256: '' };
/** A repository scan the Pro account's member started, ended; served by git daemon on loopback. */
const scan = { id: '' };
const repos = mkdtempSync(join(tmpdir(), 'optmark-perm-repos-'));
let git: GitServers;
/** The file that marking left in the Pro account's Private Vault (on). */
const vaultFile = { id: '' };

async function signedIn(account: string, plan: 'free' | 'pro', email: string, role: 'owner' | 'member', operator = false): Promise<WebClient> {
  await t.server.admin.createAccount(account, plan).catch(() => undefined);
  await t.server.people.createUser({ account, email, role, operator, password: PASSWORD, actor: 'cli' });
  const browser = new WebClient(t.url);
  expect((await browser.signIn(email, PASSWORD)).status).toBe(303);
  return browser;
}

beforeAll(async () => {
  makeRepository(repos, 'site', [{ path: 'images/photo.jpg', bytes: JPEG }]);
  git = await serveRepositories(repos);
  t = await startTestServer({ dataDir, env: { OPTMARK_SCAN_SOURCES: git.daemonUrl } });
  const people: Array<[Exclude<Role, 'Signed out'>, string, 'free' | 'pro', string, 'owner' | 'member', boolean]> = [
    ['Owner', 'perm-pro', 'pro', 'owner@perm.example', 'owner', false],
    ['Member', 'perm-pro', 'pro', 'member@perm.example', 'member', false],
    ['Free', 'perm-free', 'free', 'free@perm.example', 'owner', false],
    ['Other owner', 'perm-other', 'pro', 'other@perm.example', 'owner', false],
    ['Operator', 'perm-ops', 'pro', 'operator@perm.example', 'member', true],
  ];
  for (const [role, account, plan, email, accountRole, operator] of people) {
    browsers[role] = await signedIn(account, plan, email, accountRole, operator);
    emails[role] = email;
  }
  const owner = (await t.server.people.listUsers('perm-pro')).find((u) => u.email === emails.Owner)!;
  await t.server.vault.setEnabled(owner, 'pro', true, false, null);
  const batch = await browsers.Member.app('/app/batches');
  const marked = await browsers.Member.app('/app/mark', { body: image(), headers: { 'X-Batch-Id': String(batch.json.id), 'Idempotency-Key': 'permissions-record' } });
  expect(marked.status).toBe(200);
  Object.assign(record, { id: String(marked.json.recordId), batch: String(batch.json.id), sha256: String(marked.json.sha256) });
  vaultFile.id = (marked.json.vault as { fileId: string }).fileId;
  await t.server.records.setPublicLookup(owner, true, null);
  const memberUser = (await t.server.people.listUsers('perm-pro')).find((u) => u.email === emails.Member)!;
  const submitted = await t.server.scans.submit({ accountId: memberUser.accountId, userId: memberUser.id, plan: 'pro' }, { repository: `${git.daemonUrl}site.git` });
  scan.id = submitted.id;
  for (const until = Date.now() + 20_000; (await t.server.scans.get(memberUser.accountId, scan.id)).state !== 'done'; ) {
    if (Date.now() > until) throw new Error('the scan did not end');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}, 60_000);
afterAll(async () => {
  await t?.close();
  await git?.close();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(repos, { recursive: true, force: true });
});

async function anotherSession(email: string): Promise<WebClient> {
  const browser = new WebClient(t.url);
  expect((await browser.signIn(email, PASSWORD)).status).toBe(303);
  return browser;
}

/** A member of the Pro account for the member routes to act on (a new one each time: removing spends it). */
async function targetId(invited = false): Promise<string> {
  const { user } = await t.server.people.createUser({ account: 'perm-pro', email: `target-${++target}@perm.example`, role: 'member', ...(invited ? {} : { password: PASSWORD }), actor: 'cli' });
  return user.id;
}

/** The Pro account's member, as the use cases take a person. */
async function member() {
  const user = (await t.server.people.listUsers('perm-pro')).find((u) => u.email === emails.Member)!;
  return { kind: 'person' as const, user, plan: 'pro' as const, address: null };
}

/** Revoke every active key of the Pro account (each target key is made anew; an account holds 5 active keys at most). */
async function clearKeys(): Promise<void> {
  for (const key of await t.server.admin.listKeys('perm-pro')) if (key.active) await t.server.admin.revokeKey(key.id);
}

/** The request or key each API keys route acts on: the Pro account member's. */
async function accessTarget(path: string): Promise<Record<string, string>> {
  const name = `Integration ${++target}`;
  if (path === '/keys/requests/withdraw' || path === '/operator/requests/approve' || path === '/operator/requests/deny') {
    const made = await t.server.apiKeys.request(await member(), { name, purpose: 'Marks uploads', monthlyVolume: 100, scopes: ['protect'], contact: 'ops@perm.example' });
    return { request: made.id, reason: 'Not this time', scopes: 'protect' };
  }
  await clearKeys();
  const made = await t.server.apiKeys.request(await member(), { name, purpose: 'Marks uploads', monthlyVolume: 100, scopes: ['protect'], contact: 'ops@perm.example' });
  await t.server.apiKeys.approve({ kind: 'cli' }, made.id);
  if (path === '/keys/reveal') return { request: made.id };
  const revealed = await t.server.apiKeys.reveal(await member(), made.id);
  return { key: revealed.info.id, overlapDays: '1' };
}

function image(): FormData {
  const form = new FormData();
  form.append('image', new Blob([JPEG], { type: 'image/jpeg' }), 'photo.jpg');
  return form;
}

/** A file of the Pro account's vault that its member marked (a new one each time: deleting spends it). */
async function memberVaultFile(): Promise<string> {
  const batch = await browsers.Member.app('/app/batches');
  const marked = await browsers.Member.app('/app/mark', { body: image(), headers: { 'X-Batch-Id': String(batch.json.id), 'Idempotency-Key': `permissions-vault-${++target}` } });
  expect(marked.status).toBe(200);
  return (marked.json.vault as { fileId: string }).fileId;
}

/** The `code` of a JSON answer; none for a page or a redirect. */
async function codeOf(response: Response): Promise<string | undefined> {
  try {
    return (JSON.parse(await response.text()) as { code?: string }).code;
  } catch {
    return undefined;
  }
}

/** One request of `role` to the route, with a body it would plausibly send. */
async function attempt(method: string, url: string, role: Role): Promise<{ status: number; location: string | null; code: string | undefined }> {
  // Signing out ends the session: it gets a session of its own.
  const browser = role === 'Signed out' ? new WebClient(t.url) : url === '/sign-out' ? await anotherSession(emails[role]) : browsers[role];
  const csrf = role === 'Signed out' ? 'not-a-token' : await browser.csrf();
  const path = url.replace(':scanId', scan.id).replace(':name', 'style.css').replace(':recordId', record.id).replace(':batchId', record.batch).replace(':sha256', record.sha256).replace(':fileId', vaultFile.id).replace(':which', 'original');
  let response: Response;
  if (method === 'GET') {
    response = await browser.request(path === '/link' ? '/link?token=x' : path, { site: 'none', headers: { Accept: 'application/json' } });
  } else if (path === '/sign-in' || path === '/link' || path === '/forgot-password' || path === '/sign-up' || path === '/sign-up/confirm') {
    const pre = await browser.preTokenAnyway();
    response = await browser.form(path, { pre, email: 'nobody@perm.example', password: 'not the password', token: 'x' });
  } else if (path.startsWith('/app/') || path === '/mark' || path === '/check') {
    if (path.startsWith('/app/')) {
      const body = path === '/app/batches' ? undefined : image();
      response = await browser.request(path, { method: 'POST', site: 'same-origin', headers: { 'X-CSRF-Token': csrf, Accept: 'application/json' }, ...(body ? { body } : {}) });
    } else {
      // The form without JavaScript: its token is the body's first field.
      const body = new FormData();
      body.append('csrf', csrf);
      for (const [name, value] of image()) body.append(name, value);
      response = await browser.request(path, { method: 'POST', site: 'same-origin', headers: { Accept: 'application/json' }, body });
    }
  } else {
    const fields: Record<string, string> = { csrf, displayName: 'Someone', current: 'wrong', password: 'a new password here', email: `invited-${++target}@perm.example`, role: 'member' };
    if (path === '/account/members/role' || path === '/account/members/remove') fields.user = await targetId();
    if (path === '/account/members/reinvite') fields.user = await targetId(true);
    if (path === '/history/public-lookup') fields.enabled = 'on';
    if (path === '/vault/settings') fields.enabled = 'on';
    if (path === '/vault/download') fields.id = vaultFile.id;
    if (path === '/vault/delete') fields.id = await memberVaultFile();
    if (path === '/keys/requests') Object.assign(fields, { name: `Integration ${++target}`, purpose: 'Marks uploads', monthlyVolume: '100', scopes: 'protect', contact: 'ops@perm.example' });
    if (path.startsWith('/keys/') && path !== '/keys/requests') Object.assign(fields, await accessTarget(path));
    if (path === '/operator/accounts') Object.assign(fields, { name: `opened-${++target}`, plan: 'pro' });
    else if (path.startsWith('/operator/')) Object.assign(fields, await accessTarget(path));
    response = await browser.request(path, { method: 'POST', site: 'same-origin', headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' }, body: new URLSearchParams(fields).toString() });
  }
  return { status: response.status, location: response.headers.get('location'), code: await codeOf(response) };
}

const REFUSALS = new Set(['not_signed_in', 'plan_not_allowed', 'role_not_allowed', 'cross_site_request', 'user_not_found', 'access_request_not_found', 'key_not_found', 'record_not_found', 'scan_not_found', 'vault_file_not_found']);

describe('docs/permissions.md', () => {
  it('has a row for every route the server registers, and a route for every row', () => {
    const registered = t.server.app.routeTable.filter((r) => r.method !== 'HEAD');
    const documented = new Set([...peopleRows.map((r) => `${r.method} ${r.url}`), ...apiRows.map(([m, u]) => `${m} ${u}`)]);
    const apiUrls = new Set(apiRows.map(([, u]) => u));
    const missing = registered.filter((r) => !documented.has(`${r.method} ${r.url}`) && !(r.access === 'api-key' && apiUrls.has(r.url)));
    expect(missing.map((r) => `${r.method} ${r.url}`)).toEqual([]);
    const gone = [...documented].filter((route) => !registered.some((r) => `${r.method} ${r.url}` === route));
    expect(gone).toEqual([]);
    // Every route says who may call it.
    expect(registered.filter((r) => r.access === undefined).map((r) => `${r.method} ${r.url}`)).toEqual([]);
  });

  it('every state-changing route of a session checks the form token; every public form, its pre-session token', () => {
    const changing = t.server.app.routeTable.filter((r) => !['GET', 'HEAD'].includes(r.method) && r.access !== 'api-key');
    expect(changing.length).toBeGreaterThan(10);
    for (const route of changing) {
      expect(route.csrf, `${route.method} ${route.url}`).toBe(route.access === 'public' ? 'pre-session' : 'session');
    }
  });

  it.each(peopleRows.map((r) => [`${r.method} ${r.url}`, r] as const))('%s: every role gets what the table says', async (_name, row) => {
    for (const role of ROLES) {
      const cell = row.cells[role];
      const { status, location, code } = await attempt(row.method, row.url, role);
      const toSignIn = status === 303 && (location ?? '').startsWith('/sign-in?');
      const what = `${role}: ${status}${code ? ` ${code}` : ''}${location ? ` -> ${location}` : ''}`;
      if (cell === 'yes') {
        expect(toSignIn || (code !== undefined && REFUSALS.has(code)), what).toBe(false);
        expect(status, what).toBeLessThan(500);
      } else {
        const expected = Number(/^no \((\d{3})\)$/.exec(cell)?.[1]);
        expect(Number.isInteger(expected), `${role}: cell "${cell}"`).toBe(true);
        expect(status === expected || (expected === 401 && toSignIn), what).toBe(true);
        if (status !== 303) expect(REFUSALS.has(code ?? ''), what).toBe(true);
      }
    }
  });

  it("every API route gives what its row's words say: the scope, the plan, the key's user, or anyone", async () => {
    const { admin, people } = t.server;
    await admin.createAccount('api-pro', 'pro');
    await people.createUser({ account: 'api-pro', email: 'dev@api-pro.example', role: 'owner', password: PASSWORD, actor: 'cli' });
    await admin.createAccount('api-free', 'free');
    await people.createUser({ account: 'api-free', email: 'dev@api-free.example', role: 'owner', password: PASSWORD, actor: 'cli' });
    await admin.createAccount('api-nouser', 'pro');
    const keyOf = async (account: string, user: string | undefined, scopes: string[]) => (await admin.issueKey(account, { ...(user ? { user } : {}), scopes })).key;
    const keys = {
      protect: await keyOf('api-pro', 'dev@api-pro.example', ['protect']),
      verify: await keyOf('api-pro', 'dev@api-pro.example', ['verify']),
      both: await keyOf('api-pro', 'dev@api-pro.example', ['protect', 'verify']),
      free: await keyOf('api-free', 'dev@api-free.example', ['protect', 'verify']),
      noUser: await keyOf('api-nouser', undefined, ['protect', 'verify']),
    };
    const call = async (method: string, url: string, key: string | undefined) => {
      const path = url.replace(':id', 'scn_00000000000000000000000000000000').replace(':sha256', '0'.repeat(64));
      const json = method === 'POST' && (url === '/api/v1/scans' || url.endsWith('/fix'));
      const response = await fetch(`${t.url}${path}`, {
        method,
        headers: { ...(key ? { Authorization: `Bearer ${key}` } : {}), ...(json ? { 'Content-Type': 'application/json' } : {}) },
        ...(method === 'POST' ? { body: !json ? image() : JSON.stringify(url.endsWith('/fix') ? { confirm: 1 } : { repository: `${git.daemonUrl}site.git` }) } : {}),
      });
      const code = await codeOf(response);
      return { status: response.status, code, what: `${method} ${url}: ${response.status} ${code ?? ''}` };
    };
    const permission = new Set(['missing_api_key', 'invalid_api_key', 'plan_not_allowed', 'scope_not_allowed', 'role_not_allowed']);
    for (const row of apiWho) {
      if (row.anyone) {
        const open = await call(row.method, row.url, undefined);
        expect(permission.has(open.code ?? ''), open.what).toBe(false);
        expect(open.status, open.what).toBeLessThan(500);
        continue;
      }
      expect((await call(row.method, row.url, undefined)).code, row.url).toBe('missing_api_key');
      const allowed = await call(row.method, row.url, row.scope ? keys[row.scope] : keys.both);
      expect(permission.has(allowed.code ?? ''), allowed.what).toBe(false);
      expect(allowed.status, allowed.what).toBeLessThan(500);
      if (row.scope) {
        const wrong = await call(row.method, row.url, keys[row.scope === 'protect' ? 'verify' : 'protect']);
        expect(wrong.code, wrong.what).toBe('scope_not_allowed');
      } else {
        for (const scope of ['protect', 'verify'] as const) {
          const either = await call(row.method, row.url, keys[scope]);
          expect(permission.has(either.code ?? ''), either.what).toBe(false);
        }
      }
      if (row.paid) expect((await call(row.method, row.url, keys.free)).code, row.url).toBe('plan_not_allowed');
      const noUser = await call(row.method, row.url, keys.noUser);
      if (row.user) expect(noUser.code, noUser.what).toBe('role_not_allowed');
      else expect(permission.has(noUser.code ?? ''), noUser.what).toBe(false);
    }
  });

  it('a session cookie does not authenticate the API', async () => {
    for (const [method, url] of apiRows.filter(([, u]) => u.startsWith('/api/v1/') && u !== '/api/v1/openapi.json')) {
      // Each with the body its route takes (a body of another type is refused first, 415, as errors.md orders it).
      const takesJson = url.startsWith('/api/v1/scans');
      const body = method === 'POST' ? { body: takesJson ? '{}' : image() } : {};
      const headers = { 'X-CSRF-Token': await browsers.Owner.csrf(), ...(method === 'POST' && takesJson ? { 'Content-Type': 'application/json' } : {}) };
      const response = await browsers.Owner.request(url, { method, site: 'same-origin', headers, ...body });
      expect(response.status, `${method} ${url}`).toBe(401);
      expect(((await response.json()) as { code: string }).code).toBe('missing_api_key');
    }
  });
});
