/**
 * Dated service records over HTTP, against a real server (docs/records.md):
 * every marking of the dashboard (the page script's /app/mark and the page
 * without JavaScript, POST /mark) makes one record, a repeat under its
 * Idempotency-Key none, and the API's protect none; the API finds a record
 * by either hash, for its own account only, at no cost to the monthly
 * limits; both JWS check with the JWKS alone (jose) and the private one
 * holds the public one's hash; the database keeps records append-only and
 * drops them only with their account; the public lookup says only what it
 * may, only when the owner turned it on; the certificates (PDF, read back
 * with poppler's pdftotext, their first page drawn by pdftoppm into
 * test-output/screenshots) hold both hashes and the date; the records page
 * searches and exports CSV; a check links a file to its record; and on
 * PostgreSQL, the same append-only rule and cascade.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTag } from '../../src/core/provenance/tag.js';
import { SERVICE_TAG } from '../../src/core/xmp/namespaces.js';
import { findProperty } from '../../src/core/xmp/properties.js';
import { parseXmp } from '../../src/core/xmp/document.js';
import { sniff } from '../../src/core/formats/sniff.js';
import { fixFingerprintKey, texturedPhoto } from '../fingerprint/support.js';
import { SHOTS } from '../support/browser.js';
import { signInToDashboard, type DashboardSession } from '../support/dashboard.js';
import { generatedImages } from '../support/generated.js';
import { freshDataDir, postImage, startTestServer, type TestServer } from '../support/server.js';
import { turnVault } from '../support/vault.js';
import { WebClient } from '../support/web-client.js';

const images = await generatedImages();
const JPEG = images.find((g) => g.name === 'baseline.jpg')!.bytes;
const PNG = images.find((g) => g.name.endsWith('.png'))!.bytes;
const PASSWORD = 'correct horse battery staple';
const sha256 = (bytes: Uint8Array | string) => createHash('sha256').update(bytes).digest('hex');
const scratch = mkdtempSync(join(tmpdir(), 'optmark-records-'));
const dataDir = freshDataDir();
fixFingerprintKey(dataDir, 'optmark test: records');

let t: TestServer;
let owner: DashboardSession;
let member: WebClient;
let stranger: DashboardSession;
/** A key of the studio account that may only verify (the lookup takes any scope). */
let studioKey: string;
let strangerKey: string;

/** A file marked by the page script, as mark.ts sends it. */
interface Marked {
  readonly status: number;
  readonly json: Record<string, unknown>;
  readonly bytes?: Buffer;
}

function imageForm(bytes: Uint8Array, name: string, fields: Record<string, string> = {}): FormData {
  const form = new FormData();
  for (const [key, value] of Object.entries(fields)) form.append(key, value);
  form.append('image', new Blob([bytes], { type: 'application/octet-stream' }), name);
  return form;
}

async function newBatch(browser: WebClient): Promise<string> {
  const made = await browser.app('/app/batches');
  expect(made.status).toBe(200);
  return String(made.json.id);
}

async function markOnPage(browser: WebClient, bytes: Uint8Array, name: string, options: { batch?: string; key?: string; fields?: Record<string, string> } = {}): Promise<Marked> {
  const batch = options.batch ?? (await newBatch(browser));
  return browser.app('/app/mark', { body: imageForm(bytes, name, options.fields), headers: { 'X-Batch-Id': batch, 'Idempotency-Key': options.key ?? `file-${Math.random()}` } });
}

async function recordsOf(account: string): Promise<Array<{ id: string; sha256_original: string; sha256_marked: string; batch_id: string | null; file_name: string }>> {
  const { rows } = await sql<{ id: string; sha256_original: string; sha256_marked: string; batch_id: string | null; file_name: string }>`
    select r.id, r.sha256_original, r.sha256_marked, r.batch_id, r.file_name from records r join accounts a on a.id = r.account_id where a.name = ${account} order by r.created_at, r.id`.execute(t.server.database.db);
  return rows;
}

const lookup = (key: string | undefined, hash: string) => fetch(`${t.url}/api/v1/records/${hash}`, { headers: key ? { Authorization: `Bearer ${key}` } : {} });

async function usage(key: string): Promise<unknown> {
  const response = await fetch(`${t.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } });
  expect(response.status).toBe(200);
  const { protect, verify } = (await response.json()) as Record<string, unknown>;
  return { protect, verify };
}

/** The text of a PDF, as poppler's pdftotext reads it (layout kept). */
function pdfText(bytes: Uint8Array, name: string): string {
  const path = join(scratch, `${name}.pdf`);
  writeFileSync(path, bytes);
  return execFileSync('pdftotext', ['-layout', path, '-'], { encoding: 'utf8' });
}

/** The PDF's first page drawn to test-output/screenshots/NAME.png, for a person to look at. */
function drawFirstPage(bytes: Uint8Array, name: string): string {
  mkdirSync(SHOTS, { recursive: true });
  const path = join(scratch, `${name}.pdf`);
  writeFileSync(path, bytes);
  execFileSync('pdftoppm', ['-png', '-r', '80', '-f', '1', '-l', '1', '-singlefile', path, join(SHOTS, name)]);
  return join(SHOTS, `${name}.png`);
}

function tagKidOf(bytes: Uint8Array): string {
  const packet = sniff(bytes).readXmp(bytes).packets[0]!.text;
  return parseTag(findProperty(parseXmp(packet), SERVICE_TAG.uri, SERVICE_TAG.local)[0]!.value!)!.kid;
}

beforeAll(async () => {
  t = await startTestServer({ dataDir });
  owner = await signInToDashboard(t, 'studio');
  const ownerEmail = (await t.server.people.listUsers('studio'))[0]!.email;
  await t.server.people.createUser({ account: 'studio', email: 'mia@studio.example', role: 'member', password: PASSWORD, actor: 'cli' });
  member = new WebClient(t.url);
  expect((await member.signIn('mia@studio.example', PASSWORD)).status).toBe(303);
  stranger = await signInToDashboard(t, 'elsewhere');
  studioKey = (await t.server.admin.issueKey('studio', { user: ownerEmail, scopes: ['verify'] })).key;
  strangerKey = (await t.server.admin.issueKey('elsewhere', { user: (await t.server.people.listUsers('elsewhere'))[0]!.email })).key;
}, 60_000);

afterAll(async () => {
  await t?.close();
  rmSync(scratch, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

describe('dated service records', () => {
  let first: Marked;

  it('the page script’s marking makes one record; its repeat under the same Idempotency-Key makes none', async () => {
    const batch = await newBatch(owner.browser);
    first = await markOnPage(owner.browser, JPEG, 'harbour.jpg', { batch, key: 'harbour-1' });
    expect(first.status).toBe(200);
    expect(first.json.recordId).toMatch(/^rec_[A-Za-z0-9]{20}$/);
    expect(first.json.certificate).toBe(`/history/${String(first.json.recordId)}/certificate.pdf`);
    const rows = await recordsOf('studio');
    expect(rows).toEqual([{ id: first.json.recordId, sha256_original: sha256(JPEG), sha256_marked: sha256(first.bytes!), batch_id: batch, file_name: 'harbour.jpg' }]);

    const again = await owner.browser.request('/app/mark', {
      method: 'POST',
      site: 'same-origin',
      headers: { 'X-CSRF-Token': owner.formToken, 'X-Batch-Id': batch, 'Idempotency-Key': 'harbour-1', Accept: 'application/json' },
      body: imageForm(JPEG, 'harbour.jpg'),
    });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(JSON.parse(decodeURIComponent(again.headers.get('optmark-result')!)).recordId).toBe(first.json.recordId);
    expect(Buffer.from(await again.arrayBuffer()).equals(first.bytes!)).toBe(true);
    expect(await recordsOf('studio')).toHaveLength(1);
  });

  it('the page without JavaScript (POST /mark) makes a record too; the API’s protect makes none', async () => {
    const response = await owner.browser.upload('/mark', imageForm(PNG, 'Diagram.png'), owner.formToken);
    expect(response.status).toBe(200);
    const marked = Buffer.from(await response.arrayBuffer());
    const id = response.headers.get('optmark-record');
    expect(id).toMatch(/^rec_/);
    const rows = await recordsOf('studio');
    expect(rows).toHaveLength(2);
    expect(rows.find((r) => r.id === id)).toEqual({ id, sha256_original: sha256(PNG), sha256_marked: sha256(marked), batch_id: null, file_name: 'Diagram.png' });

    const protectKey = (await t.server.admin.issueKey('studio', { user: (await t.server.people.listUsers('studio')).find((u) => u.role === 'owner')!.email, scopes: ['protect'] })).key;
    const api = await postImage(t.url, protectKey, await texturedPhoto(300, 200, 'jpeg', 41), { filename: 'api.jpg' });
    expect(api.status).toBe(200);
    const { sha256: apiMarked } = (await api.json()) as { sha256: string };
    expect(await recordsOf('studio')).toHaveLength(2);
    expect((await lookup(studioKey, apiMarked)).status).toBe(404);
  });

  it('a fingerprinted marking records the layer with the version of its secret', async () => {
    const photo = await texturedPhoto(640, 480, 'jpeg', 5);
    const marked = await markOnPage(owner.browser, photo, 'textured.jpg', { fields: { fingerprint: 'on' } });
    expect(marked.status).toBe(200);
    expect(marked.json.fingerprint).toBe('added');
    const body = (await (await lookup(studioKey, sha256(marked.bytes!))).json()) as { records: Array<{ layers: unknown }> };
    expect(body.records[0]!.layers).toEqual([{ name: 'fingerprint', state: 'added', keyVersion: 1 }]);
  });

  it('the API finds a record by either hash, with a key of any scope, and counts toward no limit', async () => {
    const before = await usage(studioKey);
    const byMarked = await lookup(studioKey, sha256(first.bytes!));
    expect(byMarked.status).toBe(200);
    const { records } = (await byMarked.json()) as { records: Array<Record<string, unknown>> };
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      recordId: first.json.recordId,
      fileName: 'harbour.jpg',
      sha256Original: sha256(JPEG),
      sha256Marked: sha256(first.bytes!),
      value: 'DMI-PROHIBITED-AIMLTRAINING',
      layers: [],
      kid: tagKidOf(first.bytes!),
      user: expect.stringMatching(/@dashboard\.example$/),
    });
    expect(Date.parse(String(records[0]!.createdAt))).toBeGreaterThan(Date.now() - 120_000);
    // The original's hash, in capitals as some tools print it.
    const byOriginal = await lookup(studioKey, sha256(JPEG).toUpperCase());
    expect(byOriginal.status).toBe(200);
    expect(((await byOriginal.json()) as { records: Array<{ recordId: string }> }).records.map((r) => r.recordId)).toEqual([first.json.recordId]);
    expect(await usage(studioKey)).toEqual(before);
  });

  it('another account’s record is not found, like an unknown hash; a malformed hash is 400; no key is 401', async () => {
    for (const hash of [sha256(first.bytes!), sha256(JPEG), sha256('nobody marked this')]) {
      const refused = await lookup(strangerKey, hash);
      expect(refused.status).toBe(404);
      expect(((await refused.json()) as { code: string }).code).toBe('record_not_found');
    }
    for (const bad of ['abc', `${sha256(JPEG)}0`, 'z'.repeat(64)]) {
      const refused = await lookup(studioKey, bad);
      expect(refused.status, bad).toBe(400);
      expect(((await refused.json()) as { code: string }).code).toBe('invalid_sha256');
    }
    const anonymous = await lookup(undefined, sha256(JPEG));
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as { code: string }).code).toBe('missing_api_key');
    // A session cookie is not a key.
    expect((await owner.browser.request(`/api/v1/records/${sha256(JPEG)}`, { site: 'same-origin' })).status).toBe(401);
    const post = await fetch(`${t.url}/api/v1/records/${sha256(JPEG)}`, { method: 'POST', headers: { Authorization: `Bearer ${studioKey}` } });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
  });

  it('both JWS check with the JWKS alone, and the private one holds the public one’s hash', async () => {
    const jwks = createLocalJWKSet((await (await fetch(`${t.url}/.well-known/jwks.json`)).json()) as JSONWebKeySet);
    const { records } = (await (await lookup(studioKey, sha256(first.bytes!))).json()) as { records: Array<{ jws: { public: string; private: string }; kid: string; createdAt: string }> };
    const { public: publicJws, private: privateJws } = records[0]!.jws;
    const open = await jwtVerify(publicJws, jwks, { algorithms: ['EdDSA'] });
    expect(open.payload.iat).toBe(Math.floor(Date.parse(records[0]!.createdAt) / 1000));
    expect(Object.keys(open.payload).sort()).toEqual(['iat', 'iss', 'kid', 'layers', 'recordId', 'sha256Marked', 'value']);
    expect(open.payload).toMatchObject({ recordId: first.json.recordId, sha256Marked: sha256(first.bytes!), value: 'DMI-PROHIBITED-AIMLTRAINING', layers: [], kid: records[0]!.kid, iss: t.url });
    expect(decodeProtectedHeader(publicJws).kid).toBe(records[0]!.kid);
    const closed = await jwtVerify(privateJws, jwks, { algorithms: ['EdDSA'] });
    expect(closed.payload).toMatchObject({
      recordId: first.json.recordId,
      iat: open.payload.iat,
      account: { name: 'studio' },
      user: { email: expect.stringMatching(/@dashboard\.example$/) },
      fileName: 'harbour.jpg',
      sha256Original: sha256(JPEG),
      batchId: expect.stringMatching(/^bat_/),
      publicJwsSha256: sha256(publicJws),
    });
    // A changed payload does not check.
    const [header, payload, signature] = publicJws.split('.') as [string, string, string];
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), value: 'DMI-PROHIBITED' })).toString('base64url');
    await expect(jwtVerify(`${header}.${forged}.${signature}`, jwks)).rejects.toThrow(/signature/i);
  });

  it('records are append-only; they go only with their account', async () => {
    const db = t.server.database.db;
    await expect(sql`update records set value = 'DMI-PROHIBITED'`.execute(db)).rejects.toThrow(/append-only/);
    await expect(sql`delete from records`.execute(db)).rejects.toThrow(/append-only/);
    expect(await recordsOf('studio')).toHaveLength(3);
    // Removing the person who marked keeps their records, as they were.
    const doomed = await signInToDashboard(t, 'doomed');
    const { user: leo } = await t.server.people.createUser({ account: 'doomed', email: 'leo@doomed.example', role: 'member', password: PASSWORD, actor: 'cli' });
    const leoBrowser = new WebClient(t.url);
    expect((await leoBrowser.signIn('leo@doomed.example', PASSWORD)).status).toBe(303);
    expect((await markOnPage(leoBrowser, JPEG, 'gone.jpg')).status).toBe(200);
    expect((await doomed.browser.form('/account/members/remove', { csrf: doomed.formToken, user: leo.id, confirm: 'yes' })).status).toBe(200);
    expect((await sql<{ user_email: string }>`select user_email from records r join accounts a on a.id = r.account_id where a.name = 'doomed'`.execute(db)).rows).toEqual([{ user_email: 'leo@doomed.example' }]);
    const accountId = (await sql<{ id: string }>`select id from accounts where name = 'doomed'`.execute(db)).rows[0]!.id;
    await t.server.admin.deleteAccount('doomed', 'cli');
    expect((await sql<{ n: number }>`select count(*)::int as n from records where account_id = ${accountId}`.execute(db)).rows[0]!.n).toBe(0);
  });

  it('the public lookup is off by default; an owner turns it on; it then tells only when and with which value, for the marked file only', async () => {
    const marked = sha256(first.bytes!);
    const publicJws = ((await (await lookup(studioKey, marked)).json()) as { records: Array<{ jws: { public: string; private: string } }> }).records[0]!.jws;
    const anyone = new WebClient(t.url);
    const asJson = (hash: string) => anyone.request(`/records/${hash}`, { headers: { Accept: 'application/json' } });
    expect((await asJson(marked)).status).toBe(404);
    expect(((await (await asJson(marked)).json()) as { code: string }).code).toBe('record_not_found');
    expect((await anyone.page(`/records/${marked}`)).status).toBe(404);

    // A member may not turn it on; the owner may.
    const refused = await member.form('/history/public-lookup', { csrf: await member.csrf(), enabled: 'on' });
    expect(refused.status).toBe(403);
    const on = await owner.browser.form('/history/public-lookup', { csrf: owner.formToken, enabled: 'on' });
    expect(on.status).toBe(200);
    expect(await on.text()).toContain('The public lookup is on');

    const page = await anyone.page(`/records/${marked}`);
    expect(page.status).toBe(200);
    expect(page.html).toContain('Marked by this service');
    expect(page.html).toContain('Prohibited for AI/ML training');
    expect(page.html).toContain(publicJws.public);
    expect(page.html).toMatch(/\d{4} at \d{1,2}:\d{2}|\d{4}, \d{1,2}:\d{2}/);
    for (const secret of ['harbour.jpg', 'studio', '@dashboard.example', publicJws.private, sha256(JPEG)]) expect(page.html, secret).not.toContain(secret);
    const json = await asJson(marked.toUpperCase());
    expect(json.status).toBe(200);
    const body = (await json.json()) as Record<string, unknown>;
    expect(body).toEqual({ sha256Marked: marked, records: [{ markedAt: expect.any(String), value: 'DMI-PROHIBITED-AIMLTRAINING', jws: publicJws.public }] });
    // Nothing for the original's hash, nor a malformed one.
    expect((await asJson(sha256(JPEG))).status).toBe(404);
    expect((await asJson('abc')).status).toBe(400);
    // Another account's records stay private: its lookup is off.
    const elsewhere = await markOnPage(stranger.browser, await texturedPhoto(300, 300, 'png', 9), 'theirs.png');
    expect((await asJson(sha256(elsewhere.bytes!))).status).toBe(404);

    const off = await owner.browser.form('/history/public-lookup', { csrf: owner.formToken, enabled: 'off' });
    expect(off.status).toBe(200);
    expect((await asJson(marked)).status).toBe(404);
    const audit = (await sql<{ detail: string }>`select detail from audit_log where action = 'records.public-lookup' order by id`.execute(t.server.database.db)).rows;
    expect(audit.map((r) => (JSON.parse(r.detail) as { enabled: boolean }).enabled)).toEqual([true, false]);
  });

  it('a record’s certificate holds both hashes, the date and how to check it; only the account’s people get it', async () => {
    const url = String(first.json.certificate);
    const response = await member.request(url, { site: 'same-origin' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/pdf');
    expect(response.headers.get('content-disposition')).toContain(`optmark-certificate-${String(first.json.recordId)}.pdf`);
    const pdf = new Uint8Array(await response.arrayBuffer());
    const text = pdfText(pdf, 'record');
    const { records } = (await (await lookup(studioKey, sha256(first.bytes!))).json()) as { records: Array<{ createdAt: string; kid: string }> };
    const date = `${records[0]!.createdAt.slice(0, 10)} ${records[0]!.createdAt.slice(11, 19)} UTC`;
    for (const expected of ['Certificate of marking', 'harbour.jpg', sha256(JPEG), sha256(first.bytes!), date, 'Prohibited for AI/ML training', 'DMI-PROHIBITED-AIMLTRAINING', records[0]!.kid, `${t.url}/.well-known/jwks.json`, 'How to check it']) {
      expect(text, expected).toContain(expected);
    }
    // The thumbnail, made after the marking's answer (or at once for this certificate), is in it: a JPEG image.
    expect(Buffer.from(pdf).toString('latin1')).toContain('/DCTDecode');
    const shot = drawFirstPage(pdf, 'certificate-record');
    expect(readFileSync(shot).subarray(1, 4).toString()).toBe('PNG');

    // Another account's people, and nobody signed in, get nothing.
    const other = await stranger.browser.request(url, { site: 'same-origin', headers: { Accept: 'application/json' } });
    expect(other.status).toBe(404);
    expect(((await other.json()) as { code: string }).code).toBe('record_not_found');
    const signedOut = await new WebClient(t.url).request(url, { site: 'none' });
    expect(signedOut.status).toBe(303);
    expect(signedOut.headers.get('location')).toMatch(/^\/sign-in\?next=/);
  });

  it('a batch’s certificate lists every file of the batch, then each record', async () => {
    const batch = await newBatch(owner.browser);
    const files = await Promise.all([1, 2, 3].map(async (i) => ({ name: `quay ${i}.jpg`, bytes: await texturedPhoto(320 + i, 240, 'jpeg', 20 + i) })));
    const marked: Marked[] = [];
    for (const file of files) marked.push(await markOnPage(owner.browser, file.bytes, file.name, { batch }));
    expect(marked.map((m) => m.status)).toEqual([200, 200, 200]);
    const response = await owner.browser.request(`/history/batches/${batch}/certificate.pdf`, { site: 'same-origin' });
    expect(response.status).toBe(200);
    const pdf = new Uint8Array(await response.arrayBuffer());
    const text = pdfText(pdf, 'batch');
    expect(text).toContain('Certificate of a batch');
    expect(text).toContain(batch);
    for (const [i, file] of files.entries()) {
      expect(text).toContain(file.name);
      expect(text).toContain(sha256(file.bytes));
      expect(text).toContain(sha256(marked[i]!.bytes!));
    }
    drawFirstPage(pdf, 'certificate-batch');
    const other = await stranger.browser.request(`/history/batches/${batch}/certificate.pdf`, { site: 'same-origin', headers: { Accept: 'application/json' } });
    expect(other.status).toBe(404);
    expect((await owner.browser.request('/history/batches/bat_nothing/certificate.pdf', { site: 'same-origin', headers: { Accept: 'application/json' } })).status).toBe(404);
  });

  it('the records page finds by file name, hash and dates, and exports CSV', async () => {
    const page = async (query: string) => owner.browser.page(`/history${query}`);
    const all = await page('');
    expect(all.status).toBe(200);
    expect(all.html).toContain('6 records');
    expect((await page('?q=HARBOUR')).html).toContain('1 record found');
    expect((await page(`?q=${sha256(first.bytes!).slice(0, 10)}`)).html).toContain('harbour.jpg');
    expect((await page(`?q=${sha256(JPEG)}`)).html).toContain('1 record found');
    const today = new Date().toISOString().slice(0, 10);
    expect((await page(`?from=${today}&to=${today}`)).html).toContain('6 records found');
    expect((await page('?from=2000-01-01&to=2000-01-31')).html).toContain('No record matches.');
    const bad = await page('?from=2026-02-30');
    expect(bad.status).toBe(400);
    expect(bad.html).toContain('The &quot;From&quot; date is not a date of the calendar: give it as YYYY-MM-DD');
    // A range the wrong way round is said in words, not as what a parser expected.
    const backwards = await page('?from=2026-11-02&to=2026-11-01');
    expect(backwards.status).toBe(400);
    expect(backwards.html).toContain('The &quot;To&quot; date (2026-11-01) is before the &quot;From&quot; date (2026-11-02): choose a &quot;To&quot; on or after it');
    expect(backwards.html).not.toContain('Expected');
    // Members see the account's records too; another account sees none of them.
    expect((await member.page('/history')).html).toContain('6 records');
    expect((await stranger.browser.page('/history')).html).not.toContain('harbour.jpg');

    const csv = await owner.browser.request('/history/export.csv?q=quay', { site: 'same-origin' });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    const lines = (await csv.text()).replace(/^\uFEFF/, '').trim().split('\r\n');
    expect(lines[0]).toBe('recordId,createdAt,fileName,user,sha256Original,sha256Marked,value,layers,kid,batchId,publicJws,privateJws');
    expect(lines).toHaveLength(4);
    expect(lines.slice(1).every((l) => /^"rec_[A-Za-z0-9]+","\d{4}-\d{2}-\d{2}T[^"]+","quay \d\.jpg",/.test(l))).toBe(true);
  });

  it('a check links a file to its record: the marked file, its original, and nothing for another file', async () => {
    const check = async (bytes: Uint8Array) => {
      const answer = await owner.browser.app('/app/check', { body: imageForm(bytes, 'check.jpg'), headers: { 'X-Batch-Id': await newBatch(owner.browser), 'Idempotency-Key': `check-${Math.random()}` } });
      expect(answer.status).toBe(200);
      return answer.json.record as Record<string, unknown> | null;
    };
    expect(await check(first.bytes!)).toMatchObject({ recordId: first.json.recordId, as: 'marked', certificate: first.json.certificate });
    expect(await check(JPEG)).toMatchObject({ recordId: first.json.recordId, as: 'original' });
    expect(await check(await texturedPhoto(300, 200, 'jpeg', 77))).toBeNull();
    // Without JavaScript: the result page links it.
    const response = await owner.browser.upload('/check', imageForm(first.bytes!, 'harbour-optout.jpg'), owner.formToken);
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toContain('This is the file your account marked');
    expect(html).toContain(String(first.json.certificate));
  });
});

describe('names and failures of a marking’s record', () => {
  /** The page script's marking with the file name in the part's header as given (RFC 5987 `filename*`, percent-encoded UTF-8). */
  async function markNamed(session: DashboardSession, encodedName: string): Promise<Marked> {
    const batch = await newBatch(session.browser);
    const boundary = 'optmark-names';
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="image"; filename*=utf-8''${encodedName}\r\nContent-Type: image/jpeg\r\n\r\n`),
      JPEG,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    return session.browser.app('/app/mark', { body: body as unknown as FormData, headers: { 'Content-Type': `multipart/form-data; boundary=${boundary}`, 'X-Batch-Id': batch, 'Idempotency-Key': `named-${Math.random()}` } });
  }

  it('a name with control characters or over 1,024 characters is kept without them and cut, its extension kept, in the record and the vault', async () => {
    const session = await signInToDashboard(t, 'names-studio');
    expect((await turnVault(session.browser, true)).status).toBe(200);
    const withNul = await markNamed(session, 'Harbour%00%07%1B%7F%20at%20dawn.jpg');
    expect(withNul.status, JSON.stringify(withNul.json)).toBe(200);
    const long = await markNamed(session, `${'x'.repeat(2000)}.jpg`);
    expect(long.status, JSON.stringify(long.json)).toBe(200);
    for (const marked of [withNul, long]) expect(marked.json.vault).toMatchObject({ state: 'stored' });
    const names = (await recordsOf('names-studio')).map((r) => r.file_name);
    expect(names[0]).toBe('Harbour at dawn.jpg');
    expect(Array.from(names[1]!)).toHaveLength(1024);
    expect(names[1]).toMatch(/^x+…x+\.jpg$/);
    const kept = (await sql<{ original_name: string }>`select original_name from vault_files f join accounts a on a.id = f.account_id where a.name = 'names-studio' order by f.created_at`.execute(t.server.database.db)).rows;
    expect(kept.map((r) => r.original_name)).toEqual(names);

    // The certificate shows the account as its record signed it, also once the account is renamed.
    await t.server.admin.renameAccount('names-studio', 'names-renamed');
    const certificate = await session.browser.request(String(withNul.json.certificate), { site: 'same-origin' });
    expect(certificate.status).toBe(200);
    const text = pdfText(new Uint8Array(await certificate.arrayBuffer()), 'record-renamed');
    expect(text).toContain('names-studio');
    expect(text).not.toContain('names-renamed');
    expect(text).toContain('Harbour at dawn.jpg');
  });

  it('a record that cannot be written fails the marking (500, nothing counted) and the server goes on; no rejection is left unhandled', async () => {
    const session = await signInToDashboard(t, 'unrecorded-studio');
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    const db = t.server.database.db;
    await sql`create function test_refuse_records() returns trigger language plpgsql as $$ begin raise exception 'records refused'; end $$`.execute(db);
    await sql`create trigger test_refuse_records before insert on records for each row execute function test_refuse_records()`.execute(db);
    const before = (await t.server.admin.usage('unrecorded-studio')).protect.used;
    let refused: Marked;
    try {
      refused = await markOnPage(session.browser, JPEG, 'unrecorded.jpg');
      // A turn of the event loop for a rejection nobody handled to be reported.
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      await sql`drop trigger test_refuse_records on records`.execute(db);
      await sql`drop function test_refuse_records()`.execute(db);
      process.off('unhandledRejection', onUnhandled);
    }
    expect(refused.status).toBe(500);
    expect(refused.json).toMatchObject({ code: 'internal_error' });
    expect(unhandled).toEqual([]);
    expect((await t.server.admin.usage('unrecorded-studio')).protect.used).toBe(before);
    expect((await markOnPage(session.browser, JPEG, 'recorded.jpg')).status).toBe(200);
  });
});

describe('dated service records on PostgreSQL', () => {
  it('are append-only there too, and go with their account', async () => {
    const pg = await startTestServer({ backend: 'postgres' });
    try {
      const session = await signInToDashboard(pg, 'pg-studio');
      const marked = await markOnPage(session.browser, JPEG, 'pg.jpg');
      expect(marked.status).toBe(200);
      const db = pg.server.database.db;
      const count = async () => (await sql<{ n: number }>`select count(*)::int as n from records`.execute(db)).rows[0]!.n;
      expect(await count()).toBe(1);
      await expect(sql`update records set file_name = 'other.jpg'`.execute(db)).rejects.toThrow(/append-only/);
      await expect(sql`delete from records`.execute(db)).rejects.toThrow(/append-only/);
      const found = await fetch(`${pg.url}/api/v1/records/${sha256(marked.bytes!)}`, { headers: { Authorization: `Bearer ${(await pg.server.admin.issueKey('pg-studio', { user: (await pg.server.people.listUsers('pg-studio'))[0]!.email })).key}` } });
      expect(found.status).toBe(200);
      await pg.server.admin.deleteAccount('pg-studio', 'cli');
      expect(await count()).toBe(0);
    } finally {
      await pg.close();
    }
  });
});
