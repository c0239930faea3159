/**
 * The people's side over HTTP, as a browser uses it: set-up links, sign-in
 * with one answer for every failure and a brake on guessing, sessions in the
 * database (they survive a restart), proof of origin on every state-changing
 * route, roles, and the dashboard's marking and checking counted exactly
 * like API calls, batches of 25 and repeats that count once.
 */
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { protect } from '../../src/app/protect-image.js';
import { inspect } from '../../src/app/verify-image.js';
import { fixFingerprintKey, texturedPhoto } from '../fingerprint/support.js';
import { generatedImages } from '../support/generated.js';
import { freshDataDir, startTestServer, type TestServer } from '../support/server.js';
import { linkToken, WebClient } from '../support/web-client.js';

const JPEG = (await generatedImages()).find((g) => g.name === 'baseline.jpg')!.bytes;
/** A picture the fingerprint takes (texture to vote on, big enough). */
const PHOTO = await texturedPhoto(640, 480);
const PASSWORD = 'correct horse battery staple';

let t: TestServer;
const dataDir = freshDataDir();
fixFingerprintKey(dataDir, 'optmark test: people on the web');

async function user(account: string, email: string, role: 'owner' | 'member' = 'owner', plan: 'pro' | 'free' = 'pro') {
  await t.server.admin.createAccount(account, plan).catch(() => undefined);
  await t.server.people.createUser({ account, email, role, password: PASSWORD, actor: 'cli' });
  const browser = new WebClient(t.url);
  expect((await browser.signIn(email, PASSWORD)).status).toBe(303);
  return browser;
}

function imageForm(bytes: Uint8Array, fields: Record<string, string> = {}, name = 'photo.jpg'): FormData {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append('image', new Blob([bytes], { type: 'image/jpeg' }), name);
  return form;
}

beforeAll(async () => {
  t = await startTestServer({ dataDir });
});
afterAll(async () => {
  await t?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('set-up links and sign-in', () => {
  it('a set-up link shows a form, sets the password once, signs the person in; the link then says it is spent', async () => {
    await t.server.admin.createAccount('studio', 'pro');
    const { link } = await t.server.people.createUser({ account: 'studio', email: 'ada@example.com', role: 'owner', actor: 'cli' });
    const browser = new WebClient(t.url);
    const path = new URL(link!.url).pathname + new URL(link!.url).search;
    const page = await browser.page(path);
    expect(page.status).toBe(200);
    expect(page.html).toContain('<h1>Set your password</h1>');
    expect(page.html).toContain('ada@example.com');
    const pre = /name="pre" value="([^"]+)"/.exec(page.html)![1]!;

    // A password that breaks the rule: the form comes back with the reason, the link still works.
    const refused = await browser.form('/link', { pre, token: linkToken(link!.url), password: 'short', displayName: 'Ada L.' });
    expect(refused.status).toBe(422);
    const again = await refused.text();
    expect(again).toContain('role="alert"');
    expect(again).toContain('it has 5 characters; use at least 10');
    expect(again).toContain('value="Ada L."');

    const set = await browser.form('/link', { pre, token: linkToken(link!.url), password: PASSWORD, displayName: 'Ada' });
    expect(set.status).toBe(303);
    expect(set.headers.get('location')).toBe('/overview?welcome=1');
    expect(browser.cookie('optmark_session')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const overview = await browser.page(set.headers.get('location')!);
    expect(overview.html).toContain('Your password is set: you are signed in.');
    expect((await browser.page(path)).status).toBe(404);
  });

  it('an unknown email, a wrong password and a disabled user all get the same 401 page, keeping the email typed', async () => {
    await t.server.people.createUser({ account: 'studio', email: 'bo@example.com', password: PASSWORD, actor: 'cli' });
    await t.server.people.createUser({ account: 'studio', email: 'cy@example.com', password: PASSWORD, actor: 'cli' });
    await t.server.people.disableUser('cy@example.com', 'cli');
    const answers = [];
    for (const [email, password] of [['nobody@example.com', PASSWORD], ['bo@example.com', 'not the password at all'], ['cy@example.com', PASSWORD]]) {
      const browser = new WebClient(t.url);
      const response = await browser.signIn(email!, password!);
      const html = await response.text();
      expect(response.status, email).toBe(401);
      expect(html, email).toContain(`value="${email}"`);
      answers.push(html.replace(/value="[^"]*"/g, ''));
    }
    expect(new Set(answers).size).toBe(1);
    expect(answers[0]).toContain('The email or the password is not right.');
  });

  it('after 5 wrong passwords for one email from one address, the next waits (429 with Retry-After); another email is not held up', async () => {
    await t.server.people.createUser({ account: 'studio', email: 'dee@example.com', password: PASSWORD, actor: 'cli' });
    const browser = new WebClient(t.url);
    for (let i = 0; i < 5; i++) expect((await browser.signIn('dee@example.com', `wrong password ${i}`)).status).toBe(401);
    const held = await browser.signIn('dee@example.com', PASSWORD);
    expect(held.status).toBe(429);
    expect(Number(held.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await held.text()).toMatch(/wait \d+ seconds? before trying again/);
    expect((await browser.signIn('bo@example.com', PASSWORD)).status).toBe(303);
  });

  it('sign-in needs its pre-session token and a form of this site', async () => {
    await t.server.people.createUser({ account: 'studio', email: 'eve@example.com', password: PASSWORD, actor: 'cli' });
    const browser = new WebClient(t.url);
    const pre = await browser.preToken();
    expect((await browser.form('/sign-in', { email: 'eve@example.com', password: PASSWORD })).status).toBe(403);
    expect((await browser.form('/sign-in', { pre: 'x'.repeat(32), email: 'eve@example.com', password: PASSWORD })).status).toBe(403);
    expect((await browser.form('/sign-in', { pre, email: 'eve@example.com', password: PASSWORD }, 'cross-site')).status).toBe(403);
    // Without Sec-Fetch-Site or Origin (not a browser), the token alone decides.
    const plain = await browser.request('/sign-in', { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ email: 'eve@example.com', password: PASSWORD }).toString() });
    expect(plain.status).toBe(403);
    expect((await browser.form('/sign-in', { pre, email: 'eve@example.com', password: PASSWORD })).status).toBe(303);
  });
});

describe('sessions', () => {
  it('survive a restart of the server; sign-out from another site is refused, from the page it ends the session', async () => {
    const browser = await user('solo', 'fay@example.com');
    const csrf = await browser.csrf();
    await t.close();
    t = await startTestServer({ dataDir });
    browser.base === t.url || Object.assign(browser, { base: t.url });
    expect((await browser.page('/overview')).status).toBe(200);

    const forged = await browser.form('/sign-out', { csrf }, 'cross-site');
    expect(forged.status).toBe(403);
    expect((await browser.form('/sign-out', {})).status).toBe(403);
    expect((await browser.page('/overview')).status).toBe(200);
    const out = await browser.form('/sign-out', { csrf });
    expect(out.status).toBe(303);
    expect((await browser.page('/overview')).location).toBe('/sign-in?next=%2Foverview');
  });

  it('over HTTPS the cookies are named __Host- (Secure, Path=/, no Domain), and a plain-named cookie planted by another host is not a session', async () => {
    const secureDir = freshDataDir();
    const secure = await startTestServer({ dataDir: secureDir, env: { OPTMARK_BASE_URL: 'https://optmark.example' } });
    try {
      await secure.server.admin.createAccount('tls', 'pro');
      await secure.server.people.createUser({ account: 'tls', email: 'tess@example.com', role: 'owner', password: PASSWORD, actor: 'cli' });
      const browser = new WebClient(secure.url);
      const first = await browser.request('/sign-in', { site: 'none' });
      expect(first.headers.getSetCookie()).toEqual([expect.stringMatching(/^__Host-optmark_pre=[\w-]{32}; Max-Age=3600; Path=\/; HttpOnly; Secure; SameSite=Strict$/)]);
      const signedIn = await browser.signIn('tess@example.com', PASSWORD);
      expect(signedIn.status).toBe(303);
      expect(signedIn.headers.getSetCookie()).toEqual([expect.stringMatching(/^__Host-optmark_session=[\w-]{43}; Max-Age=\d+; Path=\/; HttpOnly; Secure; SameSite=Lax$/)]);
      const session = browser.cookie('__Host-optmark_session')!;
      expect((await browser.page('/overview')).status).toBe(200);
      // The same session under the plain name, as a sibling host or a plain-HTTP answer could set it: no session.
      const planted = await fetch(`${secure.url}/overview`, { headers: { Cookie: `optmark_session=${session}` }, redirect: 'manual' });
      expect([planted.status, planted.headers.get('location')]).toEqual([303, '/sign-in?next=%2Foverview']);
      // Signing out clears the prefixed cookie.
      const out = await browser.form('/sign-out', { csrf: await browser.csrf() });
      expect(out.headers.getSetCookie()).toEqual([expect.stringMatching(/^__Host-optmark_session=; Max-Age=0; Path=\/; HttpOnly; Secure; SameSite=Lax$/)]);
    } finally {
      await secure.close();
      rmSync(secureDir, { recursive: true, force: true });
    }
  });

  it("a new password ends the person's other sessions; this one goes on", async () => {
    await t.server.admin.createAccount('pair', 'pro');
    await t.server.people.createUser({ account: 'pair', email: 'gus@example.com', password: PASSWORD, actor: 'cli' });
    const laptop = new WebClient(t.url);
    const phone = new WebClient(t.url);
    await laptop.signIn('gus@example.com', PASSWORD);
    await phone.signIn('gus@example.com', PASSWORD);
    const changed = await laptop.form('/account/password', { csrf: await laptop.csrf(), current: PASSWORD, password: 'an entirely new password' });
    expect(changed.status).toBe(200);
    expect(await changed.text()).toContain('Your password is changed. Your other sessions have ended.');
    expect((await laptop.page('/overview')).status).toBe(200);
    expect((await phone.page('/overview')).status).toBe(303);
  });
});

describe('roles', () => {
  it('owners invite (the link shown when no mail is configured), change roles and remove; members may not', async () => {
    const owner = await user('team', 'hal@example.com', 'owner');
    const csrf = await owner.csrf();
    const invited = await owner.form('/account/members', { csrf, email: 'ivy@example.com', role: 'member' });
    expect(invited.status).toBe(200);
    const html = await invited.text();
    const link = /id="invitation-link" type="text" readonly value="([^"]+)"/.exec(html)![1]!;
    expect(link).toContain('/link?token=');

    const ivy = new WebClient(t.url);
    const path = new URL(link).pathname + new URL(link).search;
    expect((await ivy.page(path)).html).toContain('<h1>Join team</h1>');
    const pre = await ivy.preToken(path);
    expect((await ivy.form('/link', { pre, token: linkToken(link), password: PASSWORD, displayName: 'Ivy' })).status).toBe(303);

    const member = await ivy.csrf();
    const refused = await ivy.form('/account/members', { csrf: member, email: 'joe@example.com', role: 'member' });
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('Only the account&#39;s owners may do this');

    const ivyId = (await t.server.people.listUsers('team')).find((u) => u.email === 'ivy@example.com')!.id;
    expect((await owner.form('/account/members/role', { csrf, user: ivyId, role: 'owner' })).status).toBe(200);
    const halId = (await t.server.people.listUsers('team')).find((u) => u.email === 'hal@example.com')!.id;
    // The last owner cannot step down: here there are two, so Ivy may demote Hal.
    expect((await ivy.form('/account/members/role', { csrf: member, user: halId, role: 'member' })).status).toBe(200);
    expect((await ivy.form('/account/members/role', { csrf: member, user: halId, role: 'owner' })).status).toBe(200);
    // The list's button asks first, saying what removal does; nothing is done until confirmed.
    const asked = await owner.form('/account/members/remove', { csrf, user: ivyId });
    expect(asked.status).toBe(200);
    const question = await asked.text();
    expect(question).toContain('Remove ivy@example.com from team?');
    expect(question).toContain('This cannot be undone');
    expect(question).toContain('name="confirm" value="yes"');
    expect((await ivy.page('/overview')).status).toBe(200);
    const removed = await owner.form('/account/members/remove', { csrf, user: ivyId, confirm: 'yes' });
    expect(await removed.text()).toContain('ivy@example.com is removed from the account');
    expect((await ivy.page('/overview')).status).toBe(303);
  });

  it("a person's id that is not one (any text in the form's user field) is 404 user_not_found, as another account's person is (it was a 500)", async () => {
    const browser = await user('oddids', 'odile@example.com');
    const csrf = await browser.csrf();
    for (const [path, fields] of [['/account/members/role', { user: 'x', role: 'member' }], ['/account/members/remove', { user: '' }], ['/account/members/remove', { user: "1' or '1'='1" }]] as const) {
      const response = await browser.request(path, { method: 'POST', site: 'same-origin', headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' }, body: new URLSearchParams({ csrf, ...fields }).toString() });
      expect([response.status, ((await response.json()) as { code: string }).code], `${path} ${JSON.stringify(fields)}`).toEqual([404, 'user_not_found']);
    }
  });

  it('an owner sends someone invited a new link, which replaces the first; once they have chosen a password there is none to send', async () => {
    const owner = await user('relink', 'owner@relink.example', 'owner');
    const csrf = await owner.csrf();
    const linkIn = (html: string) => /id="invitation-link" type="text" readonly value="([^"]+)"/.exec(html)![1]!;
    const first = linkIn(await (await owner.form('/account/members', { csrf, email: 'kim@relink.example', role: 'member' })).text());
    const kimId = (await t.server.people.listUsers('relink')).find((u) => u.email === 'kim@relink.example')!.id;
    const account = (await owner.page('/account')).html;
    expect(account).toContain('aria-label="Send kim@relink.example a new invitation"');
    expect(account).not.toContain('aria-label="Send owner@relink.example a new invitation"');

    const again = await owner.form('/account/members/reinvite', { csrf, user: kimId });
    expect(again.status).toBe(200);
    const second = linkIn(await again.text());
    expect(second).not.toBe(first);
    const kim = new WebClient(t.url);
    const pathOf = (link: string) => new URL(link).pathname + new URL(link).search;
    expect((await kim.page(pathOf(first))).status).toBe(404);
    expect((await kim.page(pathOf(second))).html).toContain('<h1>Join relink</h1>');
    const pre = await kim.preToken(pathOf(second));
    expect((await kim.form('/link', { pre, token: linkToken(second), password: PASSWORD, displayName: 'Kim' })).status).toBe(303);

    expect((await owner.page('/account')).html).not.toContain('Send kim@relink.example a new invitation');
    const none = await owner.form('/account/members/reinvite', { csrf, user: kimId });
    expect(none.status).toBe(422);
    expect(await none.text()).toContain('kim@relink.example has chosen a password already');
    expect((await owner.page('/overview')).html).toContain('kim@relink.example was sent a new invitation');
  });

  it("a form's refusal to a client asking for JSON is the error itself, in JSON with its code (errors.md), not the page again", async () => {
    const owner = await user('jsonteam', 'owner@jsonteam.example', 'owner');
    const csrf = await owner.csrf();
    const ownId = (await t.server.people.listUsers('jsonteam')).find((u) => u.email === 'owner@jsonteam.example')!.id;
    const asJson = (client: WebClient, path: string, fields: Record<string, string>) =>
      client.request(path, { method: 'POST', site: 'same-origin', headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' }, body: new URLSearchParams(fields).toString() });
    const visitor = new WebClient(t.url);
    const answers = [
      await asJson(owner, '/account/password', { csrf, current: 'not the password', password: 'a new password here' }),
      await asJson(owner, '/account/members', { csrf, email: 'not an email', role: 'member' }),
      await asJson(owner, '/account/members/remove', { csrf, user: ownId, confirm: 'yes' }),
      await asJson(owner, '/keys/requests', { csrf, name: '', purpose: '' }),
      await asJson(visitor, '/sign-in', { pre: await visitor.preToken(), email: 'nobody@jsonteam.example', password: 'not the password' }),
    ];
    const seen = [];
    for (const answer of answers) {
      expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
      const body = (await answer.json()) as { error: string; code: string; requestId: string };
      expect(body.error.length).toBeGreaterThan(10);
      seen.push(`${answer.status} ${body.code}`);
    }
    expect(seen).toEqual(['401 invalid_credentials', '400 invalid_option', '400 invalid_option', '400 invalid_option', '401 invalid_credentials']);
    // The same refusals to a browser: the page again, with what was typed.
    const page = await owner.form('/account/members', { csrf, email: 'not an email', role: 'member' });
    expect([page.status, page.headers.get('content-type')]).toEqual([422, 'text/html; charset=utf-8']);
    expect(await page.text()).toContain('value="not an email"');
  });

  it('a NUL in a form field, a path or a query is 400 malformed_request (the database cannot store one: it was a 500)', async () => {
    const owner = await user('nul-studio', 'owner@nul-studio.example', 'owner');
    const csrf = await owner.csrf();
    const body = `csrf=${encodeURIComponent(csrf)}&key=a%00b`;
    for (const path of ['/keys/revoke', '/keys/roll']) {
      const refused = await owner.request(path, { method: 'POST', site: 'same-origin', headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' }, body });
      expect(refused.status, path).toBe(400);
      expect(await refused.json()).toMatchObject({ code: 'malformed_request', error: expect.stringContaining('NUL') });
    }
    for (const path of ['/vault?q=a%00b', '/history?q=%00', '/scans/scn_%00', '/api/v1/scans/scn_a%00b']) {
      const refused = await owner.request(path, { site: 'same-origin', headers: { Accept: 'application/json' } });
      expect(refused.status, path).toBe(400);
    }
  });

  it('an account sends at most 20 invitations an hour, refused ones included (an invitation says whether an email has a user elsewhere): the 21st is 429, the email kept', async () => {
    await user('elsewhere', 'known@elsewhere.example', 'owner');
    const owner = await user('prober', 'owner@prober.example', 'owner', 'free');
    const csrf = await owner.csrf();
    const taken = await owner.form('/account/members', { csrf, email: 'known@elsewhere.example', role: 'member' });
    expect(taken.status).toBe(422);
    expect(await taken.text()).toContain('already has a user');
    for (let i = 1; i < 20; i++) expect((await owner.form('/account/members', { csrf, email: `guess${i}@prober.example`, role: 'member' })).status).toBe(200);
    const braked = await owner.form('/account/members', { csrf, email: 'known@elsewhere.example', role: 'member' });
    expect(braked.status).toBe(429);
    expect(Number(braked.headers.get('retry-after'))).toBeGreaterThan(3500);
    const html = await braked.text();
    expect(html).toContain('sent 20 invitations in the last hour');
    expect(html).not.toContain('already has a user');
    expect(html).toContain('value="known@elsewhere.example"');
    // Another account has its own hour.
    const other = await user('other-team', 'owner@other-team.example', 'owner');
    expect((await other.form('/account/members', { csrf: await other.csrf(), email: 'new@other-team.example', role: 'member' })).status).toBe(200);
  });

  it('a Free account signs in and is told why it cannot mark or check; its calls are refused', async () => {
    const free = await user('gratis', 'kim@example.com', 'owner', 'free');
    expect((await free.page('/mark')).html).toContain('does not include marking or checking images');
    const answer = await free.app('/app/mark', { body: imageForm(JPEG) });
    expect(answer.status).toBe(403);
    expect(answer.json.code).toBe('plan_not_allowed');
  });
});

describe('malformed forms', () => {
  it('a form over 16 KiB is 413 body_too_large; a multipart body cut short is 400; a file name of HTML is shown as text; none of it counts', async () => {
    const browser = await user('rough', 'quin@example.com');
    const csrf = await browser.csrf();
    const big = await browser.request('/account/profile', {
      method: 'POST',
      site: 'same-origin',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
      body: new URLSearchParams({ csrf, displayName: 'x'.repeat(20_000) }).toString(),
    });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ code: 'body_too_large' });

    const boundary = 'optmark-cut';
    const cut = `--${boundary}\r\nContent-Disposition: form-data; name="csrf"\r\n\r\n${csrf}\r\n--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="a.jpg"\r\nContent-Type: image/jpeg\r\n\r\n${Buffer.from(JPEG.subarray(0, 500)).toString('latin1')}`;
    const truncated = await browser.request('/check', {
      method: 'POST',
      site: 'same-origin',
      headers: { 'Content-Type': `multipart/form-data; boundary=${boundary}`, Accept: 'application/json' },
      body: Buffer.from(cut, 'latin1'),
    });
    expect(truncated.status).toBe(400);
    expect(await truncated.json()).toMatchObject({ code: 'malformed_request' });

    const named = await browser.upload('/check', imageForm(JPEG, {}, '<img src=x onerror=alert(1)>.jpg'), csrf);
    const html = await named.text();
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;.jpg');
    expect(html).not.toContain('<img src=x');
    const usage = await t.server.admin.usage('rough');
    expect([usage.protect.used, usage.verify.used]).toEqual([0, 1]);
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
  });
});

describe('marking and checking', () => {
  it('one file without JavaScript: the marked file downloads and counts one; the check page says the verdict in words', async () => {
    const browser = await user('nojs', 'lea@example.com');
    const csrf = await browser.csrf();
    const marked = await browser.upload('/mark', imageForm(JPEG), csrf);
    expect(marked.status).toBe(200);
    expect(marked.headers.get('content-disposition')).toContain('photo-optout.jpg');
    const bytes = new Uint8Array(await marked.arrayBuffer());
    const checked = await browser.upload('/check', imageForm(bytes, {}, 'photo-optout.jpg'), csrf);
    const html = await checked.text();
    expect(html).toContain('<p class="headline">Opted out</p>');
    expect(html).toContain('Signed by this service, and unchanged since');
    expect((await t.server.admin.usage('nojs')).protect.used).toBe(1);
    expect((await t.server.admin.usage('nojs')).verify.used).toBe(1);
    // At the month's limit the page says it as the pages with JavaScript do: in words, with the day they start again.
    await t.server.admin.setLimits('nojs', { protectPerMonth: 1 });
    const refused = await browser.upload('/mark', imageForm(JPEG), csrf);
    expect(refused.status).toBe(429);
    const now = new Date();
    const returns = new Intl.DateTimeFormat('en', { dateStyle: 'long', timeZone: 'UTC' }).format(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)));
    expect(await refused.text()).toContain(`This month&#39;s markings are used up (1 a month); they start again on ${returns}.`);
  });

  it('a Free account\'s overview shows no meters of nothing and no day they start again', async () => {
    const free = await user('gratis-meters', 'fee@example.com', 'owner', 'free');
    const { html } = await free.page('/overview');
    expect(html).toContain('part of the Pro and Lifetime plans');
    expect(html).not.toContain('usage-protect');
    expect(html).not.toContain('The limits start again');
  });

  it('a batch takes 25 distinct files; a 26th is 409 batch_full; a file resent with its key counts once and gets the same bytes', async () => {
    const browser = await user('batcher', 'max@example.com');
    const csrf = await browser.csrf();
    const batch = await browser.app('/app/batches', { csrf });
    expect(batch.status).toBe(200);
    expect(batch.json).toMatchObject({ id: expect.stringMatching(/^bat_/), limit: 25 });
    const send = (key: string) => browser.app('/app/mark', { csrf, body: imageForm(JPEG), headers: { 'X-Batch-Id': String(batch.json.id), 'Idempotency-Key': key } });
    const first = await send('file-1');
    expect(first.status).toBe(200);
    const again = await send('file-1');
    expect(again.status).toBe(200);
    expect(again.json.sha256).toBe(first.json.sha256);
    expect(again.bytes!.equals(first.bytes!)).toBe(true);
    for (let i = 2; i <= 25; i++) expect((await send(`file-${i}`)).status, `file ${i}`).toBe(200);
    const full = await send('file-26');
    expect(full.status).toBe(409);
    expect(full.json).toMatchObject({ code: 'batch_full', error: expect.stringContaining('25 images already') });
    // A retry of a file already in the batch is still taken.
    expect((await send('file-7')).status).toBe(200);
    expect((await t.server.admin.usage('batcher')).protect.used).toBe(25);
    // The same key with another file: refused, not counted.
    const other = await browser.app('/app/mark', { csrf, body: imageForm(PHOTO), headers: { 'X-Batch-Id': String(batch.json.id), 'Idempotency-Key': 'file-3' } });
    expect(other.status).toBe(422);
    expect(other.json.code).toBe('idempotency_key_reused');
    expect((await t.server.admin.usage('batcher')).protect.used).toBe(25);
  });

  it("calls refused for the month's limit take no place in their batch: once the limit is raised, the batch still takes 25 files", async () => {
    const browser = await user('batch-limit', 'lim@example.com');
    const csrf = await browser.csrf();
    await t.server.admin.setLimits('batch-limit', { verifyPerMonth: 0 });
    const batch = String((await browser.app('/app/batches', { csrf })).json.id);
    const send = (key: string) => browser.app('/app/check', { csrf, body: imageForm(JPEG), headers: { 'X-Batch-Id': batch, 'Idempotency-Key': key } });
    for (let i = 1; i <= 25; i++) expect((await send(`refused-${i}`)).json.code).toBe('quota_exceeded');
    await t.server.admin.setLimits('batch-limit', { verifyPerMonth: null });
    for (let i = 1; i <= 25; i++) expect((await send(`taken-${i}`)).status, `file ${i}`).toBe(200);
    expect((await send('taken-26')).json.code).toBe('batch_full');
    expect((await t.server.admin.usage('batch-limit')).verify.used).toBe(25);
  });

  it("a file's own opt-out is kept unless the person asks for theirs to be written everywhere", async () => {
    const browser = await user('keeper', 'ray@example.com');
    const csrf = await browser.csrf();
    const genai = protect(JPEG, { value: 'DMI-PROHIBITED-GENAIMLTRAINING' }).bytes;
    const kept = await browser.app('/app/mark', { csrf, body: imageForm(genai, { value: 'DMI-PROHIBITED' }) });
    expect(kept.json).toMatchObject({ value: 'DMI-PROHIBITED-GENAIMLTRAINING', alreadyCarried: true, valueLabel: 'Prohibited for Generative AI/ML training' });
    const plain = await browser.app('/app/mark', { csrf, body: imageForm(JPEG, { value: 'DMI-PROHIBITED' }) });
    expect(plain.json).toMatchObject({ value: 'DMI-PROHIBITED', alreadyCarried: false });
    const overwritten = await browser.app('/app/mark', { csrf, body: imageForm(genai, { value: 'DMI-PROHIBITED', overwrite: 'on' }) });
    expect(overwritten.json).toMatchObject({ value: 'DMI-PROHIBITED', alreadyCarried: false });
    // Without JavaScript, the download says which it was.
    const download = await browser.upload('/mark', imageForm(genai), csrf);
    expect(download.headers.get('optmark-opt-out')).toBe('kept DMI-PROHIBITED-GENAIMLTRAINING');
  });

  it('"Prohibited, see plus:OtherConstraints" needs its text: without JavaScript the form comes back with why and what was chosen; marked, the text is in the file', async () => {
    const SEE = 'DMI-PROHIBITED-SEECONSTRAINT';
    const browser = await user('constraints', 'cora@example.com');
    const csrf = await browser.csrf();
    const page = await browser.page('/mark');
    expect(page.html).toContain(`<option value="${SEE}">Prohibited, see plus:OtherConstraints</option>`);
    // Without JavaScript the field is always there, with what it is for.
    expect(page.html).toContain('<input id="other-constraints" name="otherConstraints" type="text" maxlength="1000" value=""');
    expect(page.html).toContain('Needed with "Prohibited, see plus:OtherConstraints", and only with it');

    const noJs = (fields: Record<string, string>) => browser.upload('/mark', imageForm(JPEG, fields), csrf);
    const missing = await noJs({ value: SEE, otherConstraints: '', overwrite: 'on' });
    expect(missing.status).toBe(422);
    const missingHtml = await missing.text();
    expect(missingHtml).toContain('role="alert"');
    expect(missingHtml).toContain('(DMI-PROHIBITED-SEECONSTRAINT) needs a text');
    expect(missingHtml).toContain(`<option value="${SEE}" selected>`);
    expect(missingHtml).toContain('name="overwrite" value="on" checked>');
    // A text it refuses is shown again as typed.
    const long = `Tom & Jerry's <"terms"> `.repeat(50);
    const tooLong = await noJs({ value: SEE, otherConstraints: long });
    expect(tooLong.status).toBe(422);
    const tooLongHtml = await tooLong.text();
    expect(tooLongHtml).toContain('has 1199 characters; it may have 1000 at most');
    expect(tooLongHtml).toContain(`value="${long.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;')}"`);
    const otherValue = await noJs({ value: 'DMI-PROHIBITED', otherConstraints: 'Some terms' });
    expect(otherValue.status).toBe(422);
    expect(await otherValue.text()).toContain('value="Some terms"');
    expect((await t.server.admin.usage('constraints')).protect.used).toBe(0);

    const text = `Licensed for search indexing only — Zürich & 東京 <"studio">`;
    const downloaded = await noJs({ value: SEE, otherConstraints: text });
    expect(downloaded.status).toBe(200);
    expect(downloaded.headers.get('optmark-opt-out')).toBe(`written ${SEE}`);
    const downloadedBytes = new Uint8Array(await downloaded.arrayBuffer());
    expect(inspect(downloadedBytes).details.otherConstraints).toBe(text);
    // The check page shows the text.
    const checked = await (await browser.upload('/check', imageForm(downloadedBytes, {}, 'photo-optout.jpg'), csrf)).text();
    expect(checked).toContain('<dt>Constraints (plus:OtherConstraints)</dt><dd>Licensed for search indexing only — Zürich &amp; 東京 &lt;&quot;studio&quot;&gt;</dd>');

    // The page script's route: the same refusal in JSON; marked, the answer says the text.
    const refused = await browser.app('/app/mark', { csrf, body: imageForm(JPEG, { value: SEE }) });
    expect(refused.status).toBe(400);
    expect(refused.json).toMatchObject({ code: 'invalid_option', error: expect.stringContaining('needs a text') });
    const marked = await browser.app('/app/mark', { csrf, body: imageForm(JPEG, { value: SEE, otherConstraints: text }), headers: { 'Idempotency-Key': 'see-1' } });
    expect(marked.status).toBe(200);
    expect(marked.json).toMatchObject({ value: SEE, otherConstraints: text, valueLabel: 'Prohibited, see plus:OtherConstraints' });
    expect(inspect(marked.bytes!).details.otherConstraints).toBe(text);
    // The text is one of the options a key's repeat must match.
    const otherText = await browser.app('/app/mark', { csrf, body: imageForm(JPEG, { value: SEE, otherConstraints: 'Other terms' }), headers: { 'Idempotency-Key': 'see-1' } });
    expect(otherText.status).toBe(422);
    expect(otherText.json.code).toBe('idempotency_key_reused');
    expect((await t.server.admin.usage('constraints')).protect.used).toBe(2);
  });

  it('two requests with one key at the same moment (a double click): one is marked and counted, both get the same answer', async () => {
    const browser = await user('clicker', 'ned@example.com');
    const csrf = await browser.csrf();
    const send = () => browser.app('/app/mark', { csrf, body: imageForm(PHOTO, { fingerprint: 'on' }), headers: { 'Idempotency-Key': 'double' } });
    const [a, b] = await Promise.all([send(), send()]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.json.sha256).toBe(b.json.sha256);
    expect(createHash('sha256').update(a.bytes!).digest('hex')).toBe(a.json.sha256);
    expect(b.bytes!.equals(a.bytes!)).toBe(true);
    expect((await t.server.admin.usage('clicker')).protect.used).toBe(1);
  });

  it("a file marked or checked again under its key at the month's limit gets its answer again and counts nothing; a new file is refused", async () => {
    const browser = await user('at-limit', 'una@example.com');
    await t.server.admin.setLimits('at-limit', { protectPerMonth: 1, verifyPerMonth: 1 });
    const csrf = await browser.csrf();
    const mark = (key: string, bytes = JPEG) => browser.app('/app/mark', { csrf, body: imageForm(bytes), headers: { 'Idempotency-Key': key } });
    const check = (key: string, bytes = JPEG) => browser.app('/app/check', { csrf, body: imageForm(bytes), headers: { 'Idempotency-Key': key } });
    const marked = await mark('m-1');
    expect(marked.status).toBe(200);
    expect((await check('c-1')).status).toBe(200);
    const markedAgain = await mark('m-1');
    expect(markedAgain.status).toBe(200);
    expect(markedAgain.bytes!.equals(marked.bytes!)).toBe(true);
    expect((await check('c-1')).status).toBe(200);
    expect((await mark('m-2', PHOTO)).json.code).toBe('quota_exceeded');
    expect((await check('c-2', PHOTO)).json.code).toBe('quota_exceeded');
    expect(await t.server.admin.usage('at-limit')).toMatchObject({ protect: { used: 1 }, verify: { used: 1 } });
  });

  it("a member's overview shows the account's people and their own doings, not another member's API access or the owner's vault; the owner's shows it all, in words", async () => {
    const owner = await user('activity', 'oona@example.com');
    const reader = await user('activity', 'mia@example.com', 'member');
    await user('activity', 'noor@example.com', 'member');
    const noor = (await t.server.people.listUsers('activity')).find((u) => u.email === 'noor@example.com')!;
    await t.server.apiKeys.request({ kind: 'person', user: noor, plan: 'pro', address: null }, { name: 'Noor shop', purpose: 'Marks uploads', monthlyVolume: 100, scopes: ['protect'], contact: 'noor@example.com' });
    const ownersPage = (await owner.page('/overview')).html;
    expect(ownersPage).toContain('noor@example.com requested access (“Noor shop”)');
    expect(ownersPage).toContain('mia@example.com was added as member');
    const membersPage = (await reader.page('/overview')).html;
    expect(membersPage).toContain('mia@example.com was added as member');
    expect(membersPage).not.toContain('Noor shop');
    expect(membersPage).not.toContain('access.requested');
  });

  it("the page scripts' calls need the session's form token and a request of this site", async () => {
    const browser = await user('guarded', 'ola@example.com');
    expect((await browser.app('/app/mark', { csrf: 'wrong', body: imageForm(JPEG) })).status).toBe(403);
    const cross = await browser.request('/app/batches', { method: 'POST', site: 'cross-site', headers: { 'X-CSRF-Token': await browser.csrf() } });
    expect(cross.status).toBe(403);
    const signedOut = new WebClient(t.url);
    const none = await signedOut.app('/app/mark', { csrf: 'x', body: imageForm(JPEG) });
    expect(none.status).toBe(401);
    expect(none.json.code).toBe('not_signed_in');
    expect((await t.server.admin.usage('guarded')).protect.used).toBe(0);
  });

  it('the forms without JavaScript carry the form token as the first field of the body, never in the address; anything else is refused before the file is read', async () => {
    const browser = await user('tokenfirst', 'toni@example.com');
    const csrf = await browser.csrf();
    // The page's forms post to a plain address, the token hidden as their first field.
    for (const page of ['/mark', '/check']) {
      const { html } = await browser.page(page);
      const form = /<form id="work-form"[^>]*action="([^"]*)"[^>]*>\n([^\n]*)/.exec(html)!;
      expect(form[1]).toBe(page);
      expect(form[2]).toBe(`<input type="hidden" name="csrf" value="${csrf}">`);
    }
    const refused = async (response: Response) => {
      expect(response.status).toBe(403);
      expect(await response.json()).toMatchObject({ code: 'cross_site_request' });
    };
    const json = { Accept: 'application/json' };
    const send = (path: string, body: FormData, site: 'same-origin' | 'cross-site' = 'same-origin') => browser.request(path, { method: 'POST', site, headers: json, body });
    // The token in the address, as the forms used to send it, is no longer taken.
    await refused(await send(`/mark?csrf=${encodeURIComponent(csrf)}`, imageForm(JPEG)));
    // Missing, wrong, after the image, or under another name.
    await refused(await send('/mark', imageForm(JPEG)));
    await refused(await send('/check', imageForm(JPEG, { csrf: 'not-the-token' })));
    const late = imageForm(JPEG);
    late.append('csrf', csrf);
    await refused(await send('/mark', late));
    await refused(await send('/mark', imageForm(JPEG, { token: csrf })));
    // The right token from another site's page.
    await refused(await send('/mark', imageForm(JPEG, { csrf }), 'cross-site'));
    // An empty form carries no token either; a form of another type, with its token, is not an upload.
    await refused(await send('/check', new FormData()));
    const urlencoded = await browser.request('/check', { method: 'POST', site: 'same-origin', headers: { ...json, 'Content-Type': 'application/x-www-form-urlencoded' }, body: `csrf=${encodeURIComponent(csrf)}` });
    expect([urlencoded.status, ((await urlencoded.json()) as { code: string }).code]).toEqual([415, 'unsupported_content_type']);
    expect(await t.server.admin.usage('tokenfirst')).toMatchObject({ protect: { used: 0 }, verify: { used: 0 } });
    // The token first: marked and checked, each counted.
    const marked = await send('/mark', imageForm(JPEG, { csrf }));
    expect(marked.status).toBe(200);
    expect((await send('/check', imageForm(new Uint8Array(await marked.arrayBuffer()), { csrf }))).status).toBe(200);
    expect(await t.server.admin.usage('tokenfirst')).toMatchObject({ protect: { used: 1 }, verify: { used: 1 } });
  });

  it('without JavaScript, an image refused comes back on its page with why, the choices kept; other refusals keep the navigation', async () => {
    const browser = await user('nojs-refused', 'rafa@example.com');
    const csrf = await browser.csrf();
    const text = new TextEncoder().encode('not a picture at all');
    const checked = await browser.upload('/check', imageForm(text, {}, 'notes.jpg'), csrf);
    expect(checked.status).toBe(415);
    const checkHtml = await checked.text();
    expect(checkHtml).toContain('<h1>Check images</h1>');
    expect(checkHtml).toMatch(/role="alert">notes\.jpg: The file is not a JPEG, PNG or WebP image/);
    const marked = await browser.upload('/mark', imageForm(text, { value: 'DMI-PROHIBITED-GENAIMLTRAINING', fingerprint: 'on' }, 'notes.jpg'), csrf);
    expect(marked.status).toBe(415);
    const markHtml = await marked.text();
    expect(markHtml).toContain('<h1>Mark images</h1>');
    expect(markHtml).toContain('The file is not a JPEG, PNG or WebP image');
    expect(markHtml).toMatch(/<option value="DMI-PROHIBITED-GENAIMLTRAINING" selected>/);
    expect(markHtml).toMatch(/name="fingerprint" value="on"[^>]* checked>/);
    // A refusal before the image is read (no image part): the error page, with the site's navigation and sign-out.
    const empty = new FormData();
    empty.append('csrf', csrf);
    const none = await browser.request('/check', { method: 'POST', site: 'same-origin', body: empty });
    expect(none.status).toBe(400);
    const errorHtml = await none.text();
    expect(errorHtml).toContain('That did not work');
    expect(errorHtml).toContain('<nav aria-label="Main">');
    expect(errorHtml).toContain('Sign out');
    expect(await t.server.admin.usage('nojs-refused')).toMatchObject({ protect: { used: 0 }, verify: { used: 0 } });
  });

  it('the check answer puts the verdict in words: opted out; stripped of its metadata but fingerprinted; not opted out, never a percentage', async () => {
    const browser = await user('checker', 'pat@example.com');
    const csrf = await browser.csrf();
    const verdictOf = async (bytes: Uint8Array) => (await browser.app('/app/check', { csrf, body: imageForm(bytes) })).json.verdict as Record<string, string>;
    const marked = await browser.app('/app/mark', { csrf, body: imageForm(PHOTO, { fingerprint: 'on' }) });
    expect(marked.status).toBe(200);
    expect(marked.json.fingerprint).toBe('added');
    const bytes = marked.bytes!;
    expect(await verdictOf(bytes)).toMatchObject({ kind: 'opted-out', headline: 'Opted out', fingerprint: "Found: this service's fingerprint is in the pixels." });
    // Its metadata stripped (the same pixels written again without any): the fingerprint says what happened.
    const stripped = await sharp(bytes).png().toBuffer();
    expect(await verdictOf(stripped)).toMatchObject({
      kind: 'stripped',
      headline: "Not opted out in the metadata, but this service's fingerprint is in the pixels",
      explanation: expect.stringContaining('Mark it again'),
    });
    const plain = await verdictOf(PHOTO);
    expect(plain).toMatchObject({ kind: 'not-opted-out', headline: 'Not opted out', fingerprint: 'Not found.' });
  });
});

describe("a form done, sent by a browser's navigation (Post/Redirect/Get)", () => {
  /** A form as a browser's navigation sends it: Fetch Metadata's Sec-Fetch-Dest says `document`. */
  const navigate = (browser: WebClient, path: string, fields: Record<string, string>) =>
    browser.request(path, {
      method: 'POST',
      site: 'same-origin',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Sec-Fetch-Dest': 'document' },
      body: new URLSearchParams(fields).toString(),
    });

  it('is sent to its page with 303, which says what was done once: reloading it repeats neither the form nor the message', async () => {
    const browser = await user('prg', 'prg@example.com');
    const csrf = await browser.csrf();
    const done = await navigate(browser, '/account/profile', { csrf, displayName: 'Grace' });
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe('/account');
    const first = await browser.page('/account');
    expect(first.status).toBe(200);
    expect(first.html).toContain('Your name is now Grace.');
    expect(first.html).toContain('role="status"');
    const reloaded = await browser.page('/account');
    expect(reloaded.status).toBe(200);
    expect(reloaded.html).not.toContain('Your name is now');

    // The notice is its page's and its session's: another page, and the same person's other session, do not show or take it.
    const elsewhere = new WebClient(t.url);
    expect((await elsewhere.signIn('prg@example.com', PASSWORD)).status).toBe(303);
    expect((await navigate(browser, '/account/profile', { csrf, displayName: 'Grace H.' })).status).toBe(303);
    expect((await browser.page('/overview')).html).not.toContain('Your name is now');
    expect((await elsewhere.page('/account')).html).not.toContain('Your name is now');
    expect((await browser.page('/account')).html).toContain('Your name is now Grace H.');

    // A refusal is the page itself, with what was typed (nothing to repeat).
    const refused = await navigate(browser, '/account/password', { csrf, current: 'not the password', password: 'another fine password' });
    expect(refused.status).toBe(422);
    expect(await refused.text()).toContain('role="alert"');
    // A client without Fetch Metadata (a program, an older browser) gets the page itself, as before.
    const plain = await browser.form('/account/profile', { csrf, displayName: 'Ada' });
    expect(plain.status).toBe(200);
    expect(await plain.text()).toContain('Your name is now Ada.');
  });

  it('on the keys page, the console, the records and the vault alike; a key made is shown in its answer only, never left for a later page', async () => {
    const owner = await user('prg-keys', 'prg-owner@example.com');
    const csrf = await owner.csrf();
    await t.server.people.createUser({ account: 'prg-keys', email: 'prg-ops@example.com', role: 'member', operator: true, password: PASSWORD, actor: 'cli' });
    const operator = new WebClient(t.url);
    expect((await operator.signIn('prg-ops@example.com', PASSWORD)).status).toBe(303);
    const operatorCsrf = await operator.csrf();

    const requested = await navigate(owner, '/keys/requests', { csrf, name: 'Uploads', purpose: 'Marks our uploads', monthlyVolume: '1000', scopes: 'protect', contact: 'prg-owner@example.com' });
    expect(requested.status).toBe(303);
    expect(requested.headers.get('location')).toBe('/keys');
    expect((await owner.page('/keys')).html).toContain('Your request for Uploads is sent');

    const request = (await t.server.apiKeys.listAll()).find((r) => r.name === 'Uploads' && r.accountName === 'prg-keys')!;
    const approved = await navigate(operator, '/operator/requests/approve', { csrf: operatorCsrf, request: request.id, scopes: 'protect', expiresInDays: '' });
    expect(approved.status).toBe(303);
    expect(approved.headers.get('location')).toBe('/operator');
    expect((await operator.page('/operator')).html).toContain('Approved Uploads for prg-keys');

    // The key is in the reveal's own answer (no redirect), and no later page says it again.
    const revealed = await navigate(owner, '/keys/reveal', { csrf, request: request.id });
    expect(revealed.status).toBe(200);
    const key = /omk_[A-Za-z0-9]{38}/.exec(await revealed.text())?.[0];
    expect(key).toBeDefined();
    expect((await owner.page('/keys')).html).not.toContain(key!);

    const lookup = await navigate(owner, '/history/public-lookup', { csrf, enabled: 'on' });
    expect(lookup.status).toBe(303);
    expect(lookup.headers.get('location')).toBe('/history');
    expect((await owner.page('/history')).html).toContain('The public lookup is on');

    const vault = await navigate(owner, '/vault/settings', { csrf, enabled: 'on' });
    expect(vault.status).toBe(303);
    expect(vault.headers.get('location')).toBe('/vault');
    expect((await owner.page('/vault')).html).toContain('The Private Vault is on');
  });
});
