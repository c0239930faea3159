/**
 * The error contract at the edges of a request, found by probing every
 * route: each answer is a status with the error in JSON (or a page, for a
 * browser), never Node's bare answer or silence, and a body goes only where
 * its route takes that type.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signInToDashboard, type DashboardSession } from '../support/dashboard.js';
import { parseResponse, rawExchange } from '../support/raw-http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { WebClient } from '../support/web-client.js';

let t: TestServer;
let owner: DashboardSession;
let key: string;

beforeAll(async () => {
  t = await startTestServer();
  owner = await signInToDashboard(t, 'edges');
  const [person] = await t.server.people.listUsers('edges');
  key = (await t.server.admin.issueKey('edges', { user: person!.email })).key;
});
afterAll(() => t?.close());

const json = async (response: Response) => (await response.json()) as { error: string; code: string; requestId: string };

describe('bodies a route does not take', () => {
  it('a multipart body to a form is refused 415 unread, saying what the form takes; nothing changes', async () => {
    const { browser, formToken } = owner;
    expect((await browser.form('/account/profile', { csrf: formToken, displayName: 'Ada' })).status).toBe(200);
    const body = new FormData();
    body.append('displayName', 'Bob');
    for (const accept of ['application/json', 'text/html']) {
      const refused = await browser.request('/account/profile', { method: 'POST', site: 'same-origin', headers: { 'X-CSRF-Token': formToken, Accept: accept }, body });
      expect(refused.status, accept).toBe(415);
      const text = await refused.text();
      expect(text, accept).toContain('This form takes its fields URL-encoded (application/x-www-form-urlencoded)');
      if (accept === 'application/json') expect(JSON.parse(text)).toMatchObject({ code: 'unsupported_content_type' });
    }
    expect((await t.server.people.listUsers('edges'))[0]!.displayName).toBe('Ada');
  });

  it('a body of the wrong type to a JSON route of the API is told to send JSON, not an image', async () => {
    const refused = await fetch(`${t.url}/api/v1/scans`, { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'text/plain' }, body: 'x' });
    expect(refused.status).toBe(415);
    expect(await json(refused)).toMatchObject({ code: 'unsupported_content_type', error: 'Send the body as JSON (Content-Type: application/json)' });
    const multipart = new FormData();
    multipart.append('url', 'https://example.com/repo.git');
    const stray = await fetch(`${t.url}/api/v1/scans`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: multipart });
    expect(stray.status).toBe(415);
    expect((await json(stray)).error).toBe('Send the body as JSON (Content-Type: application/json)');
    // The image routes still say what they take.
    const image = await fetch(`${t.url}/api/v1/verify`, { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'text/plain' }, body: 'x' });
    expect((await json(image)).error).toBe('Send the image as multipart/form-data with one part named "image"');
  });

  it('a declared length over the upload limit is image_too_large only where an image goes: a form\'s is body_too_large, an unknown path 404', async () => {
    const huge = 27_000_000;
    const exchange = async (path: string, type: string, extra = '') =>
      parseResponse(
        (
          await rawExchange(t.url, `POST ${path} HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\nContent-Type: ${type}\r\nContent-Length: ${huge}\r\n${extra}\r\nemail=a`, 5000, 0, {
            until: (r) => r.includes('\r\n\r\n') && r.includes('}'),
          })
        ).text,
      );
    const upload = await exchange('/api/v1/protect', 'multipart/form-data; boundary=b', `Authorization: Bearer ${key}\r\n`);
    expect(upload.status).toBe(413);
    expect(JSON.parse(upload.body)).toMatchObject({ code: 'image_too_large' });
    const form = await exchange('/sign-in', 'application/x-www-form-urlencoded');
    expect(form.status).toBe(413);
    expect(JSON.parse(form.body)).toMatchObject({ code: 'body_too_large' });
    const scans = await exchange('/api/v1/scans', 'application/json', `Authorization: Bearer ${key}\r\n`);
    expect(scans.status).toBe(413);
    expect(JSON.parse(scans.body)).toMatchObject({ code: 'body_too_large' });
    const nowhere = await exchange('/no-such-path', 'application/x-www-form-urlencoded');
    expect(nowhere.status).toBe(404);
    expect(JSON.parse(nowhere.body)).toMatchObject({ code: 'not_found' });
  });
});

describe('requests Node would answer on its own', () => {
  it('an Expect other than 100-continue is ignored (RFC 9110 allows it): the request is served as usual', async () => {
    const get = async (headers: string) =>
      parseResponse((await rawExchange(t.url, `GET /api/v1/usage HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\n${headers}Connection: close\r\n\r\n`, 5000)).text);
    for (const expectation of ['foo', '']) {
      const answer = await get(`Authorization: Bearer ${key}\r\nExpect: ${expectation}\r\n`);
      expect(answer.status, JSON.stringify(expectation)).toBe(200);
      const refused = await get(`Expect: ${expectation}\r\n`);
      expect(refused.status).toBe(401);
      expect(JSON.parse(refused.body)).toMatchObject({ code: 'missing_api_key' });
    }
  });

  it('CONNECT is answered 405 in JSON, not by closing the connection', async () => {
    for (const target of ['/api/v1/usage', 'example.com:443']) {
      const { text, closed } = await rawExchange(t.url, `CONNECT ${target} HTTP/1.1\r\nHost: example.com:443\r\n\r\n`, 5000);
      const answer = parseResponse(text);
      expect(answer.status, target).toBe(405);
      expect(answer.headers.allow).toBe('GET, HEAD, POST');
      expect(JSON.parse(answer.body)).toMatchObject({ code: 'method_not_allowed', error: 'CONNECT is not allowed here: this server is not a proxy' });
      expect(closed).toBe(true);
    }
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
  });
});

describe('signed out, and paths that are not there', () => {
  it('a script asking for JSON from a page route while signed out gets 401 not_signed_in; a browser is taken to sign in', async () => {
    const stranger = new WebClient(t.url);
    for (const path of ['/scans/scn_00000000000000000000000000000000/progress', '/overview']) {
      const asked = await stranger.request(path, { headers: { Accept: 'application/json' } });
      expect(asked.status, path).toBe(401);
      expect(await json(asked)).toMatchObject({ code: 'not_signed_in' });
      const browsed = await stranger.request(path, { headers: { Accept: 'text/html' } });
      expect(browsed.status, path).toBe(303);
      expect(browsed.headers.get('location')).toBe(`/sign-in?next=${encodeURIComponent(path)}`);
    }
  });

  it('a browser asking for a path that is not there (or not for GET) gets a page saying so; a script its JSON', async () => {
    const page = await owner.browser.request('/sign-out', { headers: { Accept: 'text/html,application/xhtml+xml' } });
    expect(page.status).toBe(404);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await page.text();
    expect(html).toContain('There is no GET /sign-out');
    expect(html).toContain('<code>not_found</code>');
    const script = await owner.browser.request('/sign-out', { headers: { Accept: 'application/json' } });
    expect(script.status).toBe(404);
    expect(await json(script)).toMatchObject({ code: 'not_found' });
  });
});
