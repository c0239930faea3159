/**
 * The web dashboard over real HTTP, as a browser without JavaScript uses it:
 * sign in with an API key (a session cookie), mark an image with or without
 * the in-pixel fingerprint (the marked file comes back as a download),
 * check one, sign out. Its calls count exactly like API calls; forms from
 * other sites, and sessions whose key was revoked, do nothing.
 */
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SESSION_HOURS } from '../../src/app/dashboard-sessions.js';
import { texturedPhoto } from '../fingerprint/support.js';
import { withC2pa } from '../support/c2pa.js';
import { withSegments, xmpPacket, xmpSegment } from '../support/build.js';
import { signInToDashboard } from '../support/dashboard.js';
import { postImage, startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
const clock = { time: new Date('2026-06-10T12:00:00Z'), now: () => clock.time };
const photo = await texturedPhoto(640, 480, 'jpeg');
const photoPng = await texturedPhoto(512, 384, 'png');

beforeAll(async () => {
  t = await startTestServer({ clock });
});
afterAll(async () => t?.close());

interface Session {
  readonly cookie: string;
  readonly formToken: string;
  readonly key: string;
  readonly account: string;
}

async function signIn(key: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${t.url}/dashboard/sign-in`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams({ key }).toString(),
    redirect: 'manual',
  });
}

async function dashboard(cookie?: string): Promise<{ response: Response; body: string }> {
  const response = await fetch(`${t.url}/dashboard`, { headers: cookie ? { Cookie: cookie } : {} });
  return { response, body: await response.text() };
}

async function newSession(plan: 'pro' | 'lifetime' = 'pro'): Promise<Session> {
  const account = `dash-${Math.random().toString(36).slice(2, 8)}`;
  const key = await t.key(plan, account);
  return { ...(await signInToDashboard(t.url, key)), key, account };
}

/** Post a dashboard form as the browser would: multipart, the session cookie, the form token in the action. */
async function post(
  session: Session | undefined,
  action: 'protect' | 'verify',
  image: Uint8Array,
  options: { fields?: Record<string, string>; formToken?: string; headers?: Record<string, string>; filename?: string } = {},
): Promise<Response> {
  const form = new FormData();
  for (const [name, value] of Object.entries(options.fields ?? {})) form.append(name, value);
  form.append('image', new Blob([image], { type: 'image/jpeg' }), options.filename ?? 'holiday photo.jpg');
  const token = options.formToken ?? session?.formToken ?? '';
  return fetch(`${t.url}/dashboard/${action}?form=${encodeURIComponent(token)}`, {
    method: 'POST',
    headers: { ...(session ? { Cookie: session.cookie } : {}), 'Sec-Fetch-Site': 'same-origin', Accept: 'text/html', ...options.headers },
    body: form,
  });
}

async function apiVerify(key: string, bytes: Uint8Array) {
  const response = await postImage(t.url, key, bytes, { path: '/api/v1/verify' });
  expect(response.status).toBe(200);
  return (await response.json()) as { optedOut: boolean; provenance: { valid: boolean }; fingerprint: { present: boolean; blocks: number } };
}

async function usage(key: string) {
  const response = await fetch(`${t.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } });
  return (await response.json()) as { protect: { used: number }; verify: { used: number } };
}

describe('pages', () => {
  it('sends / to the dashboard, which asks to sign in, as UTF-8 HTML that loads nothing but its stylesheet', async () => {
    const root = await fetch(`${t.url}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/dashboard');

    const { response, body } = await dashboard();
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(body).toContain('<meta charset="utf-8">');
    expect(body).toContain('action="/dashboard/sign-in"');
    expect(body).not.toContain('<script');

    // An action's address opened as a page (the back button, a bookmark) leads back to the dashboard.
    for (const action of ['sign-in', 'protect', 'verify', 'sign-out']) {
      const opened = await fetch(`${t.url}/dashboard/${action}?form=x`, { redirect: 'manual' });
      expect(opened.status).toBe(303);
      expect(opened.headers.get('location')).toBe('/dashboard');
    }

    const css = await fetch(`${t.url}/dashboard/style.css`);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect(await css.text()).toContain('font');
  });
});

describe('signing in', () => {
  it('opens a session for a Pro key: an HttpOnly, SameSite=Strict cookie that is not the key', async () => {
    const key = await t.key('pro');
    const response = await signIn(key);
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/dashboard');
    const setCookie = response.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/^optmark_session=[A-Za-z0-9_-]{43};/);
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Strict');
    expect(setCookie).toContain('Path=/dashboard');
    expect(setCookie).toContain(`Max-Age=${SESSION_HOURS * 3600}`);
    expect(setCookie).not.toContain(key);
  });

  it('refuses a wrong key with a readable page (or JSON when asked), and a Free plan with 403', async () => {
    const wrong = await signIn('omk_not-a-key');
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(wrong.headers.get('set-cookie')).toBeNull();
    const page = await wrong.text();
    expect(page).toContain('The API key is not valid');
    expect(page).toContain('invalid_api_key');

    const asJson = await signIn('omk_not-a-key', { Accept: 'application/json' });
    expect(asJson.status).toBe(401);
    expect(await asJson.json()).toMatchObject({ code: 'invalid_api_key', error: 'The API key is not valid' });

    const free = await signIn(await t.key('free'), { Accept: 'application/json' });
    expect(free.status).toBe(403);
    expect(((await free.json()) as { code: string }).code).toBe('plan_not_allowed');
  });

  it('refuses a sign-in posted from another site', async () => {
    const key = await t.key('pro');
    for (const headers of [{ 'Sec-Fetch-Site': 'cross-site' }, { Origin: 'https://elsewhere.example' }] as Array<Record<string, string>>) {
      const response = await signIn(key, { ...headers, Accept: 'application/json' });
      expect(response.status).toBe(403);
      expect(((await response.json()) as { code: string }).code).toBe('cross_site_request');
      expect(response.headers.get('set-cookie')).toBeNull();
    }
  });

  it("shows the account, this month's usage and the forms", async () => {
    const session = await newSession();
    const { response, body } = await dashboard(session.cookie);
    expect(response.status).toBe(200);
    expect(body).toContain(session.account);
    expect(body).toContain('name="fingerprint"');
    expect(body).toContain('DMI-PROHIBITED-GENAIMLTRAINING');
    expect(body).toMatch(/<th scope="row">Marked<\/th><td>0<\/td><td>10000<\/td><td>10000<\/td>/);
    expect(body).toContain(`action="/dashboard/verify?form=${session.formToken}"`);
  });
});

describe('marking and checking', () => {
  it('marks losslessly without the fingerprint: a download named for the output, opted out, signed, pixels identical', async () => {
    const session = await newSession();
    const response = await post(session, 'protect', photo);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/jpeg');
    expect(response.headers.get('content-disposition')).toBe(`attachment; filename="holiday-photo-optout.jpg"; filename*=UTF-8''holiday-photo-optout.jpg`);
    const marked = new Uint8Array(await response.arrayBuffer());
    const verified = await apiVerify(session.key, marked);
    expect(verified.optedOut).toBe(true);
    expect(verified.provenance.valid).toBe(true);
    expect(verified.fingerprint.present).toBe(false);
    const [before, after] = await Promise.all([sharp(photo).raw().toBuffer(), sharp(marked).raw().toBuffer()]);
    expect(after.equals(before)).toBe(true);
  });

  it('adds the fingerprint when the box is ticked: found by verify with the opt-out and a valid signature; PNG stays PNG', async () => {
    const session = await newSession();
    for (const [input, type] of [
      [photo, 'image/jpeg'],
      [photoPng, 'image/png'],
    ] as const) {
      const response = await post(session, 'protect', input, { fields: { fingerprint: 'on' } });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe(type);
      expect(response.headers.get('optmark-fingerprint')).toBe('added');
      const marked = new Uint8Array(await response.arrayBuffer());
      const verified = await apiVerify(session.key, marked);
      expect(verified).toMatchObject({ optedOut: true, provenance: { valid: true }, fingerprint: { present: true } });
      // Re-encoded, but the same picture.
      const { width, height } = await sharp(marked).metadata();
      expect([width, height]).toEqual([(await sharp(input).metadata()).width, (await sharp(input).metadata()).height]);
      // Marked again: the mark is found and not added a second time; the file comes back as it was.
      const again = await post(session, 'protect', marked, { fields: { fingerprint: 'on' } });
      expect(again.status).toBe(200);
      expect(again.headers.get('optmark-fingerprint')).toBe('found');
      expect(Buffer.from(await again.arrayBuffer()).equals(Buffer.from(marked))).toBe(true);
    }
  });

  it('writes the chosen opt-out value, and the check page shows what the file carries', async () => {
    const session = await newSession();
    const marked = new Uint8Array(await (await post(session, 'protect', photo, { fields: { value: 'DMI-PROHIBITED-GENAIMLTRAINING' } })).arrayBuffer());
    const response = await post(session, 'verify', marked, { filename: 'x.jpg' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const page = await response.text();
    expect(page).toContain('x.jpg: opted out');
    expect(page).toContain('http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED-GENAIMLTRAINING');
    expect(page).toContain('Prohibited for Generative AI/ML training');
    expect(page).toContain('present and valid');
    expect(page).toContain('&quot;optedOut&quot;: true');
  });

  it("keeps the image's own opt-out when the chooser is left on its first choice, says so in Optmark-Opt-Out, and replaces it when another is chosen", async () => {
    const session = await newSession();
    const { body } = await dashboard(session.cookie);
    expect(body).toMatch(/<select id="value" name="value"><option value="" selected>The image's own opt-out if it has one, otherwise Prohibited for AI\/ML training \(DMI-PROHIBITED-AIMLTRAINING\)<\/option><option value="DMI-PROHIBITED-AIMLTRAINING">/);
    const gen = withSegments(photo, xmpSegment(xmpPacket(`<rdf:Description rdf:about="" xmlns:plus="http://ns.useplus.org/ldf/xmp/1.0/" plus:DataMining="http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED-GENAIMLTRAINING"/>`)));
    // A browser sends the chooser's empty first choice.
    const kept = await post(session, 'protect', gen, { fields: { value: '' } });
    expect(kept.status).toBe(200);
    expect(kept.headers.get('optmark-opt-out')).toBe('kept DMI-PROHIBITED-GENAIMLTRAINING');
    const keptPage = await (await post(session, 'verify', new Uint8Array(await kept.arrayBuffer()))).text();
    expect(keptPage).toContain('http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED-GENAIMLTRAINING');
    const chosen = await post(session, 'protect', gen, { fields: { value: 'DMI-PROHIBITED' } });
    expect(chosen.headers.get('optmark-opt-out')).toBe('written DMI-PROHIBITED');
    expect((await post(session, 'protect', photo, { fields: { value: '' } })).headers.get('optmark-opt-out')).toBe('written DMI-PROHIBITED-AIMLTRAINING');
    // Each a call that counts.
    expect(await usage(session.key)).toMatchObject({ protect: { used: 3 } });
  });

  it('shows the signals of other vocabularies on the check page, though the API answer lists none without the IPTC field', async () => {
    const session = await newSession();
    const tdm = withSegments(photo, xmpSegment(xmpPacket(`<rdf:Description rdf:about="" xmlns:tdm="http://www.w3.org/ns/tdmrep/" tdm:reservation="1"/>`)));
    const page = await (await post(session, 'verify', tdm)).text();
    expect(page).toContain("<tr><th scope=\"row\">Signals</th><td>tdmrep.reservation (the API&#39;s signals lists none of them: the file has no IPTC Data Mining field)</td></tr>");
    expect(page).toContain('&quot;signals&quot;: []');
  });

  it('counts every dashboard call like an API call with the same key, and nothing for a failure', async () => {
    const session = await newSession();
    expect((await post(session, 'protect', photo)).status).toBe(200);
    expect((await post(session, 'protect', photo, { fields: { fingerprint: 'on' } })).status).toBe(200);
    expect((await post(session, 'verify', photo)).status).toBe(200);
    expect(await usage(session.key)).toMatchObject({ protect: { used: 2 }, verify: { used: 1 } });

    // Failures, each with its page and its code; none of them counts.
    const failures: Array<[Response, number, string]> = [
      [await post(session, 'protect', Buffer.from('GIF89a not really')), 415, 'unsupported_image_format'],
      [await post(session, 'protect', await sharp(photo).resize(200).jpeg().toBuffer(), { fields: { fingerprint: 'on' } }), 422, 'fingerprint_not_possible'],
      [await post(session, 'protect', photo, { fields: { value: 'DMI-ALLOWED' } }), 400, 'invalid_option'],
      [await post(session, 'verify', Buffer.alloc(0)), 400, 'empty_image'],
    ];
    for (const [response, status, code] of failures) {
      expect(response.status).toBe(status);
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(await response.text()).toContain(`<code>${code}</code>`);
    }
    // A hand-made form with a field the page does not have is told which parts the action takes.
    const extra = await post(session, 'protect', photo, { fields: { extra: 'x' } });
    expect(extra.status).toBe(400);
    expect(await extra.text()).toContain('Send the file &quot;image&quot; and at most the fields &quot;value&quot;, &quot;fingerprint&quot;, once each; found also field &quot;extra&quot;');
    expect(await usage(session.key)).toMatchObject({ protect: { used: 2 }, verify: { used: 1 } });
    const { body } = await dashboard(session.cookie);
    expect(body).toMatch(/<th scope="row">Marked<\/th><td>2<\/td>/);
    expect(body).toMatch(/<th scope="row">Checked<\/th><td>1<\/td>/);
  });
});

describe('Content Credentials', () => {
  it('the check says a file carries a C2PA manifest that marking would invalidate; the download says it did, as the API does', async () => {
    const session = await newSession();
    const signed = await withC2pa(photo, { 'cawg.ai_training': 'notAllowed' });
    const page = await (await post(session, 'verify', signed)).text();
    expect(page).toContain('yes: marking this file would invalidate its signature');
    const marked = await post(session, 'protect', signed);
    expect(marked.status).toBe(200);
    expect(marked.headers.get('optmark-c2pa-manifest')).toBe('invalidated');
    expect((await post(session, 'protect', photo)).headers.get('optmark-c2pa-manifest')).toBeNull();
  });
});

describe('what does nothing', () => {
  it('refuses an action without a session, or without the form token, or from another site, before any work', async () => {
    const session = await newSession();
    const cases: Array<[Response, number, string]> = [
      [await post(undefined, 'protect', photo), 401, 'not_signed_in'],
      [await post(session, 'protect', photo, { formToken: 'guessed' }), 403, 'cross_site_request'],
      [await post(session, 'protect', photo, { formToken: '' }), 403, 'cross_site_request'],
      [await post(session, 'protect', photo, { headers: { 'Sec-Fetch-Site': 'cross-site' } }), 403, 'cross_site_request'],
      [await post(session, 'verify', photo, { headers: { 'Sec-Fetch-Site': 'same-site' } }), 403, 'cross_site_request'],
      [await post(session, 'protect', photo, { headers: { 'Sec-Fetch-Site': '', Origin: 'https://elsewhere.example' } }), 403, 'cross_site_request'],
    ];
    for (const [response, status, code] of cases) {
      expect(response.status).toBe(status);
      expect(await response.text()).toContain(`<code>${code}</code>`);
    }
    expect(await usage(session.key)).toMatchObject({ protect: { used: 0 }, verify: { used: 0 } });
  });

  it('ends the session when its key is revoked', async () => {
    const session = await newSession();
    const [issued] = await t.server.admin.listKeys(session.account);
    await t.server.admin.revokeKey(issued!.id);
    const response = await post(session, 'protect', photo);
    expect(response.status).toBe(401);
    expect(await response.text()).toContain('<code>not_signed_in</code>');
    expect((await dashboard(session.cookie)).body).toContain('action="/dashboard/sign-in"');
  });

  it('signs out: the cookie is cleared and the old one no longer works', async () => {
    const session = await newSession();
    const response = await fetch(`${t.url}/dashboard/sign-out?form=${session.formToken}`, {
      method: 'POST',
      headers: { Cookie: session.cookie, 'Sec-Fetch-Site': 'same-origin' },
      redirect: 'manual',
    });
    expect(response.status).toBe(303);
    expect(response.headers.get('set-cookie')).toMatch(/^optmark_session=; Max-Age=0;/);
    expect((await dashboard(session.cookie)).body).toContain('action="/dashboard/sign-in"');
    expect((await post(session, 'verify', photo)).status).toBe(401);
  });

  it(`ends a session ${SESSION_HOURS} hours after sign-in`, async () => {
    const session = await newSession();
    clock.time = new Date(clock.time.getTime() + SESSION_HOURS * 3_600_000 - 1000);
    expect((await dashboard(session.cookie)).body).toContain(session.account);
    clock.time = new Date(clock.time.getTime() + 1000);
    expect((await dashboard(session.cookie)).body).toContain('action="/dashboard/sign-in"');
  });
});

describe('hostile input', () => {
  it('refuses an oversized sign-in form with 413 and a malformed upload with 400, counting nothing, and stays healthy', async () => {
    const big = await signIn('x'.repeat(10_000));
    expect(big.status).toBe(413);
    expect(await big.text()).toContain('<code>body_too_large</code>');

    const session = await newSession();
    const boundary = 'b0undary';
    // The closing boundary never comes: the form ends early.
    const truncated = `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="a.jpg"\r\nContent-Type: image/jpeg\r\n\r\n${'x'.repeat(1000)}`;
    const response = await fetch(`${t.url}/dashboard/protect?form=${session.formToken}`, {
      method: 'POST',
      headers: { Cookie: session.cookie, 'Sec-Fetch-Site': 'same-origin', 'Content-Type': `multipart/form-data; boundary=${boundary}` },
      body: truncated,
    });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('<code>malformed_request</code>');
    expect(await usage(session.key)).toMatchObject({ protect: { used: 0 }, verify: { used: 0 } });
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
  });

  it('never lets a file name become markup on the result page', async () => {
    const session = await newSession();
    const response = await post(session, 'verify', photo, { filename: '<img src=x onerror=alert(1)>.jpg' });
    expect(response.status).toBe(200);
    const page = await response.text();
    expect(page).not.toContain('<img');
    expect(page).toContain('&lt;img src=x onerror=alert(1)&gt;.jpg');
  });
});
