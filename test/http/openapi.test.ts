/**
 * The OpenAPI document as tools use it: Redocly's recommended rules find no
 * error in it, and real answers of running servers, one for every status
 * each operation documents (and 404, 405), fit it: the body against the
 * response's schema (the error code against that status's enum), every
 * required header present, every header sent documented and its value
 * fitting the header's schema.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HeldUpload, multipartBody, parseResponse, rawExchange, rawPost } from '../support/raw-http.js';
import { PUBLIC_API_PATHS } from '../support/public-paths.js';
import { freshPgDatabase, postImage, startTestServer, type TestServer } from '../support/server.js';
import { SAMPLE_JPEG } from '../process/support.js';
import { protect } from '../../src/app/protect-image.js';
import { makeRepository, serveRepositories, type GitServers } from '../support/git-server.js';
import { signInToDashboard } from '../support/dashboard.js';

const run = promisify(execFile);
const REDOCLY = join(import.meta.dirname, '../../node_modules/.bin/redocly');

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Headers of the transport, not of the API (HTTP/1.1 framing, and the body's own type). */
const TRANSPORT = new Set(['content-type', 'content-length', 'date', 'connection', 'keep-alive', 'transfer-encoding']);

class Checker {
  readonly seen = new Set<string>();
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });

  constructor(readonly doc: Json) {
    addFormats.default(this.ajv);
    this.ajv.addSchema(doc, 'openapi');
  }

  private resolve(node: Json): Json {
    let at = node;
    while (typeof at.$ref === 'string') {
      at = (at.$ref as string).slice(2).split('/').reduce<Json>((o, k) => o[k.replace(/~1/g, '/').replace(/~0/g, '~')], this.doc);
    }
    return at;
  }

  private pointer(parts: readonly string[]): string {
    return `openapi#/${parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
  }

  /** Check one answer; `headers` with lower-case names. */
  check(method: string, path: string, status: number, headers: Record<string, string>, body: string): void {
    const where = `${method.toUpperCase()} ${path} ${status}`;
    const operation = this.doc.paths[path]?.[method];
    let responsePath: string[];
    if (!this.doc.paths[path]) responsePath = ['components', 'responses', 'NotFound'];
    else if (!operation) responsePath = ['components', 'responses', 'MethodNotAllowed'];
    else if (operation.responses[String(status)]) responsePath = ['paths', path, method, 'responses', String(status)];
    else throw new Error(`${where}: status not documented`);
    this.seen.add(`${method} ${path} ${status}`);
    const response = this.resolve(responsePath.reduce<Json>((o, k) => o[k], this.doc));
    const schemaPath = [...responsePath, 'content', 'application/json', 'schema'];
    const validate = this.ajv.compile({ $ref: this.pointer(schemaPath) });
    expect(headers['content-type'], where).toMatch(/^application\/json/);
    const parsed = JSON.parse(body) as unknown;
    expect(validate(parsed) ? [] : validate.errors, `${where} body ${body.slice(0, 300)}`).toEqual([]);
    const documented = Object.fromEntries(Object.entries((response.headers ?? {}) as Json).map(([name, header]) => [name.toLowerCase(), this.resolve(header as Json)]));
    for (const [name, header] of Object.entries(documented)) {
      if (header.required) expect(headers, `${where}: required header ${name}`).toHaveProperty([name]);
      if (headers[name] !== undefined) {
        const check = this.ajv.compile(header.schema as Json);
        expect(check(headers[name]) ? [] : check.errors, `${where}: header ${name}: ${headers[name]}`).toEqual([]);
      }
    }
    for (const name of Object.keys(headers)) {
      if (!TRANSPORT.has(name)) expect(documented, `${where}: header ${name} sent but not documented`).toHaveProperty([name]);
    }
  }

  async fetched(method: string, path: string, response: Response): Promise<number> {
    this.check(method, path, response.status, Object.fromEntries([...response.headers].map(([k, v]) => [k.toLowerCase(), v])), await response.text());
    return response.status;
  }

  raw(method: string, path: string, text: string): number {
    const response = parseResponse(text);
    this.check(method, path, response.status, response.headers, response.body);
    return response.status;
  }

  /** Every status of every operation the document lists, as `method path status`. */
  documented(): string[] {
    const all: string[] = [];
    for (const [path, item] of Object.entries(this.doc.paths as Json)) {
      for (const [method, operation] of Object.entries(item as Json)) {
        for (const status of Object.keys((operation as Json).responses)) if (status !== 'default') all.push(`${method} ${path} ${status}`);
      }
    }
    return all.sort();
  }
}

/** A JPEG cut inside a segment: 422 corrupt_image. */
const CORRUPT = SAMPLE_JPEG.subarray(0, 300);
const form = (bytes: Uint8Array) => multipartBody([{ name: 'image', filename: 'photo.jpg', type: 'image/jpeg', data: bytes }]);
const multipart = { 'Content-Type': 'multipart/form-data; boundary=optmark-boundary' };

describe('the OpenAPI document', () => {
  let t: TestServer;
  let doc: Json;
  let checker: Checker;
  let dir: string;
  let repoRoot: string;
  let git: GitServers;

  beforeAll(async () => {
    repoRoot = mkdtempSync(join(tmpdir(), 'optmark-openapi-repos-'));
    makeRepository(repoRoot, 'site', [
      { path: 'marked.jpg', bytes: protect(SAMPLE_JPEG).bytes },
      { path: 'plain.jpg', bytes: SAMPLE_JPEG },
    ]);
    git = await serveRepositories(repoRoot);
    t = await startTestServer({ env: { OPTMARK_BASE_URL: 'https://optmark.example', OPTMARK_UPLOAD_STALL_SECONDS: '1', OPTMARK_SCAN_SOURCES: git.daemonUrl } });
    doc = (await (await fetch(`${t.url}/api/v1/openapi.json`)).json()) as Json;
    checker = new Checker(doc);
    dir = mkdtempSync(join(tmpdir(), 'optmark-openapi-'));
  });
  afterAll(async () => {
    await t?.close();
    await git?.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(repoRoot, { recursive: true, force: true });
  });

  it('passes Redocly\'s recommended rules without an error', async () => {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc));
    const { stdout } = await run(REDOCLY, ['lint', file, '--format=json'], { env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } }).catch((error: { stdout: string }) => error);
    const report = JSON.parse(stdout) as { totals: { errors: number; warnings: number }; problems: Array<{ ruleId: string; message: string; severity: string }> };
    expect(report.problems.filter((p) => p.severity === 'error')).toEqual([]);
    // The only warnings: the 404 and 405 answers, described once for every path rather than on each operation.
    expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`).sort()).toEqual([
      'no-unused-components: Component: "MethodNotAllowed" is never used.',
      'no-unused-components: Component: "NotFound" is never used.',
    ]);
  });

  it('declares the upload as binary, its server, licence, contact, tags, the JWK schema and every public path', () => {
    const image = doc.paths['/api/v1/protect'].post.requestBody.content['multipart/form-data'].schema.properties.image;
    expect(image).toMatchObject({ type: 'string', format: 'binary', contentMediaType: 'application/octet-stream' });
    expect(doc.servers).toEqual([{ url: 'https://optmark.example', description: 'This deployment' }]);
    expect(doc.info.license.name).toBeTruthy();
    expect(doc.info.contact.url).toBe('https://optmark.example');
    expect(doc.tags.map((tag: Json) => tag.name)).toEqual(['Images', 'Account', 'Records', 'Scans', 'Keys', 'Health', 'Meta']);
    expect(doc.components.schemas.Jwk.required).toEqual(['kty', 'crv', 'x', 'kid', 'alg', 'use']);
    expect(Object.keys(doc.paths).sort()).toEqual(PUBLIC_API_PATHS);
    // A read token is write-only; the fix's zip is binary.
    expect(doc.paths['/api/v1/scans'].post.requestBody.content['application/json'].schema.properties.token.writeOnly).toBe(true);
    expect(doc.paths['/api/v1/scans/{id}/fix'].post.responses['200'].content['application/zip'].schema).toMatchObject({ type: 'string', format: 'binary' });
    // The people's routes are not part of it.
    expect(JSON.stringify(doc.paths)).not.toMatch(/sign-in|\/app\//);
  });

  it('gives each status its error codes, from the error-to-status map', () => {
    const codes = (status: string) => doc.paths['/api/v1/protect'].post.responses[status].content['application/json'].schema.allOf[1].properties.code.enum;
    expect(codes('401')).toEqual(['missing_api_key', 'invalid_api_key']);
    expect(codes('429')).toEqual(['quota_exceeded', 'too_many_requests', 'too_many_failed_calls']);
    expect(codes('503')).toEqual(['service_unavailable', 'server_busy']);
    expect(codes('422')).toContain('conflicting_xmp');
    expect(doc.paths['/api/v1/verify'].post.responses['422'].content['application/json'].schema.allOf[1].properties.code.enum).not.toContain('conflicting_xmp');
    // Every request and response has an example.
    for (const item of Object.values(doc.paths as Json)) {
      for (const operation of Object.values(item as Json)) {
        for (const [status, response] of Object.entries((operation as Json).responses as Json)) {
          if (status === 'default') continue;
          expect(Object.keys(response.content['application/json'].examples ?? {}).length, `${(operation as Json).operationId} ${status}`).toBeGreaterThan(0);
        }
        for (const media of Object.values(((operation as Json).requestBody?.content ?? {}) as Json)) expect((media as Json).examples).toBeDefined();
      }
    }
  });

  it('fits every answer of a running server, each documented status, headers included', async () => {
    const pro = await t.key('pro');
    const free = await t.key('free');
    // An account whose month is used up.
    const broke = await t.key('pro', 'openapi-broke');
    await t.server.admin.setLimits('openapi-broke', { protectPerMonth: 0, verifyPerMonth: 0 });
    const auth = (key: string) => ({ Authorization: `Bearer ${key}` });

    for (const op of ['protect', 'verify'] as const) {
      const path = `/api/v1/${op}`;
      const post = (key: string | undefined, bytes: Uint8Array, headers: Record<string, string> = {}) =>
        fetch(`${t.url}${path}`, { method: 'POST', headers: { ...(key ? auth(key) : {}), ...headers }, body: (() => { const f = new FormData(); f.append('image', new Blob([bytes]), 'photo.jpg'); return f; })() });
      expect(await checker.fetched('post', path, await post(pro, SAMPLE_JPEG))).toBe(200);
      // A repeat under one Idempotency-Key: Idempotent-Replayed on a 200 and on a refusal.
      expect(await checker.fetched('post', path, await post(pro, SAMPLE_JPEG, { 'Idempotency-Key': `openapi-${op}` }))).toBe(200);
      const replayed = await post(pro, SAMPLE_JPEG, { 'Idempotency-Key': `openapi-${op}` });
      expect(replayed.headers.get('idempotent-replayed')).toBe('true');
      expect(await checker.fetched('post', path, replayed)).toBe(200);
      expect(await checker.fetched('post', path, await post(pro, CORRUPT, { 'Idempotency-Key': `openapi-bad-${op}` }))).toBe(422);
      const replayedRefusal = await post(pro, CORRUPT, { 'Idempotency-Key': `openapi-bad-${op}` });
      expect(replayedRefusal.headers.get('idempotent-replayed')).toBe('true');
      expect(await checker.fetched('post', path, replayedRefusal)).toBe(422);
      expect(await checker.fetched('post', path, await post(pro, Buffer.from('GIF89a not an image')))).toBe(415);
      expect(await checker.fetched('post', path, await fetch(`${t.url}${path}`, { method: 'POST', headers: { ...auth(pro), 'Content-Type': 'text/plain' }, body: 'hello' }))).toBe(415);
      expect(await checker.fetched('post', path, await fetch(`${t.url}${path}`, { method: 'POST', headers: auth(pro), body: new FormData() }))).toBe(400);
      expect(await checker.fetched('post', path, await post(undefined, SAMPLE_JPEG))).toBe(401);
      expect(await checker.fetched('post', path, await post(free, SAMPLE_JPEG))).toBe(403);
      expect(await checker.fetched('post', path, await post(broke, SAMPLE_JPEG))).toBe(429);
      // Declared over the limit: refused from Content-Length.
      const large = await rawExchange(t.url, `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${pro}\r\n${Object.entries(multipart).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\nContent-Length: 40000000\r\n\r\n`, 5000);
      expect(checker.raw('post', path, large.text)).toBe(413);
      // An upload that stalls (OPTMARK_UPLOAD_STALL_SECONDS=1).
      const body = form(SAMPLE_JPEG);
      const stalled = await rawExchange(t.url, [rawPost(path, { ...auth(pro), ...multipart, 'Content-Length': String(body.length) }, body.subarray(0, 200))], 10_000);
      expect(checker.raw('post', path, stalled.text)).toBe(408);
      expect(checker.raw('post', path, (await rawExchange(t.url, `POST ${path} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 5000)).text)).toBe(431);
    }

    expect(await checker.fetched('get', '/api/v1/usage', await fetch(`${t.url}/api/v1/usage`, { headers: auth(pro) }))).toBe(200);
    expect(await checker.fetched('get', '/api/v1/usage', await fetch(`${t.url}/api/v1/usage`))).toBe(401);
    expect(await checker.fetched('get', '/api/v1/usage', await fetch(`${t.url}/api/v1/usage`, { headers: auth(free) }))).toBe(403);
    for (const path of ['/.well-known/jwks.json', '/healthz', '/readyz', '/api/v1/openapi.json', '/api/v1/usage']) {
      if (path !== '/api/v1/usage') expect(await checker.fetched('get', path, await fetch(`${t.url}${path}`))).toBe(200);
      expect(checker.raw('get', path, (await rawExchange(t.url, `GET ${path} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 5000)).text)).toBe(431);
    }
    // A record, made by the dashboard's marking (the API's protect makes none), looked up with a key of its account.
    const studio = await signInToDashboard(t, 'openapi-records');
    const batch = await studio.browser.app('/app/batches');
    const marked = await studio.browser.app('/app/mark', { body: (() => { const f = new FormData(); f.append('image', new Blob([SAMPLE_JPEG]), 'photo.jpg'); return f; })(), headers: { 'X-Batch-Id': String(batch.json.id), 'Idempotency-Key': 'openapi-record' } });
    expect(marked.status).toBe(200);
    const recordsKey = (await t.server.admin.issueKey('openapi-records', { user: (await t.server.people.listUsers('openapi-records'))[0]!.email, scopes: ['verify'] })).key;
    const records = '/api/v1/records/{sha256}';
    const lookup = (key: string | undefined, hash: string) => fetch(`${t.url}/api/v1/records/${hash}`, { headers: key ? auth(key) : {} });
    const hash = String(marked.json.sha256);
    expect(await checker.fetched('get', records, await lookup(recordsKey, hash))).toBe(200);
    expect(await checker.fetched('get', records, await lookup(recordsKey, 'not-a-hash'))).toBe(400);
    expect(await checker.fetched('get', records, await lookup(undefined, hash))).toBe(401);
    expect(await checker.fetched('get', records, await lookup(free, hash))).toBe(403);
    // Another account's record: not found, as an unknown hash is.
    expect(await checker.fetched('get', records, await lookup(pro, hash))).toBe(404);
    expect(checker.raw('get', records, (await rawExchange(t.url, `GET /api/v1/records/${hash} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 5000)).text)).toBe(431);

    // Repository scans, on a repository served by git daemon on loopback.
    const scanner = (await t.server.admin.issueKey('openapi-records', { user: (await t.server.people.listUsers('openapi-records'))[0]!.email })).key;
    const protectOnly = (await t.server.admin.issueKey('openapi-records', { user: (await t.server.people.listUsers('openapi-records'))[0]!.email, scopes: ['protect'] })).key;
    const json = (key: string | undefined, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      fetch(`${t.url}${path}`, { method, headers: { ...(key ? auth(key) : {}), ...(body === undefined ? {} : { 'Content-Type': 'application/json' }), ...headers }, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
    const scans = '/api/v1/scans';
    const repository = `${git.daemonUrl}site.git`;
    const created = await json(scanner, 'POST', scans, { repository });
    const { id } = (await created.clone().json()) as { id: string };
    expect(await checker.fetched('post', scans, created)).toBe(202);
    expect(await checker.fetched('post', scans, await json(scanner, 'POST', scans, { repository, colour: 'blue' }))).toBe(400);
    expect(await checker.fetched('post', scans, await json(scanner, 'POST', scans, '{"repository":'))).toBe(400);
    expect(await checker.fetched('post', scans, await json(undefined, 'POST', scans, { repository }))).toBe(401);
    expect(await checker.fetched('post', scans, await json(free, 'POST', scans, { repository }))).toBe(403);
    expect(await checker.fetched('post', scans, await json(scanner, 'POST', scans, 'x=1', { 'Content-Type': 'text/plain' }))).toBe(415);
    expect(await checker.fetched('post', scans, await json(scanner, 'POST', scans, { repository: 'https://example.com/x.git' }))).toBe(422);
    expect(await checker.fetched('post', scans, await json(scanner, 'POST', scans, { repository, ref: 'a'.repeat(20_000) }))).toBe(413);
    await t.server.admin.setLimits('openapi-records', { scansPerUserPerDay: 1 });
    expect(await checker.fetched('post', scans, await json(scanner, 'POST', scans, { repository }))).toBe(429);
    await t.server.admin.setLimits('openapi-records', { scansPerUserPerDay: null });
    await t.server.scans.pause();
    expect(await checker.fetched('post', scans, await json(scanner, 'POST', scans, { repository }))).toBe(503);
    await t.server.scans.resume();
    expect(await checker.fetched('get', scans, await json(scanner, 'GET', scans))).toBe(200);
    expect(await checker.fetched('get', scans, await json(undefined, 'GET', scans))).toBe(401);
    expect(await checker.fetched('get', scans, await json(free, 'GET', scans))).toBe(403);
    const one = '/api/v1/scans/{id}';
    for (let i = 0; i < 200; i++) {
      const status = ((await (await json(scanner, 'GET', `${scans}/${id}`)).json()) as { status: string }).status;
      if (status === 'done') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await checker.fetched('get', one, await json(scanner, 'GET', `${scans}/${id}`))).toBe(200);
    expect(await checker.fetched('get', one, await json(undefined, 'GET', `${scans}/${id}`))).toBe(401);
    expect(await checker.fetched('get', one, await json(free, 'GET', `${scans}/${id}`))).toBe(403);
    expect(await checker.fetched('get', one, await json(pro, 'GET', `${scans}/${id}`))).toBe(404);
    const report = '/api/v1/scans/{id}/report';
    expect(await checker.fetched('get', report, await json(scanner, 'GET', `${scans}/${id}/report`))).toBe(200);
    expect(await checker.fetched('get', report, await json(undefined, 'GET', `${scans}/${id}/report`))).toBe(401);
    expect(await checker.fetched('get', report, await json(free, 'GET', `${scans}/${id}/report`))).toBe(403);
    expect(await checker.fetched('get', report, await json(pro, 'GET', `${scans}/${id}/report`))).toBe(404);
    expect(await checker.fetched('delete', one, await json(scanner, 'DELETE', `${scans}/${id}`))).toBe(409);
    expect(await checker.fetched('delete', one, await json(undefined, 'DELETE', `${scans}/${id}`))).toBe(401);
    expect(await checker.fetched('delete', one, await json(protectOnly, 'DELETE', `${scans}/${id}`))).toBe(403);
    expect(await checker.fetched('delete', one, await json(pro, 'DELETE', `${scans}/${id}`))).toBe(404);
    const plainDelete = await fetch(`${t.url}${scans}/${id}`, { method: 'DELETE', headers: { Authorization: `Bearer ${scanner}`, 'Content-Type': 'text/plain' }, body: 'cancel it' });
    expect(await checker.fetched('delete', one, plainDelete)).toBe(415);
    const queued = (await (await json(scanner, 'POST', scans, { repository })).json()) as { id: string };
    expect(await checker.fetched('delete', one, await json(scanner, 'DELETE', `${scans}/${queued.id}`))).toBe(200);
    const fix = '/api/v1/scans/{id}/fix';
    const fixOf = (key: string | undefined, body?: unknown, scan = id, headers: Record<string, string> = {}) => json(key, 'POST', `${scans}/${scan}/fix`, body, headers);
    // The 200 as JSON: a pushed branch (git daemon takes pushes here).
    expect(await checker.fetched('post', fix, await fixOf(scanner, { confirm: 1, push: true, token: 'unused-by-git-daemon' }))).toBe(200);
    expect(await checker.fetched('post', fix, await fixOf(scanner, { confirm: 7 }))).toBe(400);
    expect(await checker.fetched('post', fix, await fixOf(scanner, '{'))).toBe(400);
    expect(await checker.fetched('post', fix, await fixOf(undefined, { confirm: 1 }))).toBe(401);
    expect(await checker.fetched('post', fix, await fixOf(free, { confirm: 1 }))).toBe(403);
    expect(await checker.fetched('post', fix, await fixOf(pro, { confirm: 1 }))).toBe(404);
    expect(await checker.fetched('post', fix, await fixOf(scanner, { confirm: 1 }, queued.id))).toBe(409);
    expect(await checker.fetched('post', fix, await fixOf(scanner, 'x', id, { 'Content-Type': 'text/plain' }))).toBe(415);
    expect(await checker.fetched('post', fix, await fixOf(scanner, { confirm: 1, token: 'x'.repeat(20_000) }))).toBe(413);
    await t.server.admin.setLimits('openapi-records', { protectPerMonth: 0 });
    expect(await checker.fetched('post', fix, await fixOf(scanner, { confirm: 1 }))).toBe(429);
    await t.server.admin.setLimits('openapi-records', { protectPerMonth: null });
    // The repository gone from its server: 502.
    rmSync(join(repoRoot, 'site.git'), { recursive: true, force: true });
    expect(await checker.fetched('post', fix, await fixOf(scanner, { confirm: 1 }))).toBe(502);
    for (const path of [scans, `${scans}/${id}`, `${scans}/${id}/report`]) {
      const documentedPath = path === scans ? scans : path.endsWith('/report') ? report : one;
      expect(checker.raw('get', documentedPath, (await rawExchange(t.url, `GET ${path} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 5000)).text)).toBe(431);
    }
    expect(checker.raw('post', scans, (await rawExchange(t.url, `POST ${scans} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 5000)).text)).toBe(431);
    expect(checker.raw('delete', one, (await rawExchange(t.url, `DELETE ${scans}/${id} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 5000)).text)).toBe(431);
    expect(checker.raw('post', fix, (await rawExchange(t.url, `POST ${scans}/${id}/fix HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 5000)).text)).toBe(431);
    // Any operation's address may be refused before its route is reached: a NUL in the query, a path that is not valid URL encoding.
    for (const [path, item] of Object.entries(doc.paths as Json)) {
      for (const method of Object.keys(item as Json)) {
        const address = `${t.url}${path.replace('{sha256}', hash).replace('{id}', id)}?x=%00`;
        expect(await checker.fetched(method, path, await fetch(address, { method: method.toUpperCase() })), `${method} ${path}`).toBe(400);
      }
    }
    expect(await checker.fetched('get', records, await lookup(recordsKey, '%zz'))).toBe(400);
    expect(await checker.fetched('get', '/api/v2/protect', await fetch(`${t.url}/api/v2/protect`))).toBe(404);
    expect(await checker.fetched('get', '/api/v1/protect', await fetch(`${t.url}/api/v1/protect`))).toBe(405);
  });

  it('fits the answers of a server at capacity and of one whose database is gone', async () => {
    // PostgreSQL behind a TCP proxy this test cuts.
    const database = await freshPgDatabase();
    const upstream = new URL(database.url);
    const sockets = new Set<Socket>();
    const proxy = createServer((client) => {
      const server = connect(Number(upstream.port || 5432), upstream.hostname);
      for (const socket of [client, server]) {
        sockets.add(socket);
        socket.on('error', () => [client, server].forEach((x) => x.destroy()));
      }
      client.pipe(server).pipe(client);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxied = new URL(database.url);
    proxied.port = String((proxy.address() as AddressInfo).port);
    const s = await startTestServer({ backend: 'postgres', databaseUrl: proxied.toString(), env: { OPTMARK_MAX_IN_FLIGHT: '2', OPTMARK_MAX_IN_FLIGHT_PER_KEY: '1', OPTMARK_AUTH_FAILURES_PER_MINUTE: '1' } });
    try {
      const [a, b, c] = [await s.key(), await s.key(), await s.key()];
      const body = form(SAMPLE_JPEG);
      for (const op of ['protect', 'verify'] as const) {
        const path = `/api/v1/${op}`;
        const until = async (key: string, status: number) => {
          let got = 0;
          for (let i = 0; i < 50 && got !== status; i++) {
            got = await checker.fetched('post', path, await postImage(s.url, key, SAMPLE_JPEG, { path }));
            if (got !== status) await new Promise((r) => setTimeout(r, 100));
          }
          return got;
        };
        const held = [new HeldUpload(s.url, a, body, path), new HeldUpload(s.url, b, body, path)];
        try {
          // Both taken in (a call of the same key sent at once could overtake its held upload, which would then be the one refused).
          const answeredEarly = await Promise.race([...held.map((h) => h.answered.then((r) => r.status)), new Promise((r) => setTimeout(() => r('held'), 300))]);
          expect(answeredEarly).toBe('held');
          // Once both are in flight: the same key again is 429 too_many_requests, a third key 503 server_busy.
          expect(await until(a, 429)).toBe(429);
          expect(await until(c, 503)).toBe(503);
        } finally {
          for (const h of held) h.abort();
        }
        // The server gives the places of the uploads given up back as it sees their connections close: once it has, each key calls again.
        expect(await until(a, 200)).toBe(200);
        expect(await until(b, 200)).toBe(200);
      }
      // Invalid keys from one address (127.0.0.2): its next request with a valid key is 429 too.
      const from2 = { localAddress: '127.0.0.2' };
      await rawExchange(s.url, `GET /api/v1/usage HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer omk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA0xqHyc\r\nConnection: close\r\n\r\n`, 5000, 0, from2);
      const limited = await rawExchange(s.url, `GET /api/v1/usage HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a}\r\nConnection: close\r\n\r\n`, 5000, 0, from2);
      expect(checker.raw('get', '/api/v1/usage', limited.text)).toBe(429);
      const limitedRecords = await rawExchange(s.url, `GET /api/v1/records/${'0'.repeat(64)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a}\r\nConnection: close\r\n\r\n`, 5000, 0, from2);
      expect(checker.raw('get', '/api/v1/records/{sha256}', limitedRecords.text)).toBe(429);
      const scanId = 'scn_00000000000000000000000000000000';
      for (const [method, path, documented] of [
        ['POST', '/api/v1/scans', '/api/v1/scans'],
        ['GET', '/api/v1/scans', '/api/v1/scans'],
        ['GET', `/api/v1/scans/${scanId}`, '/api/v1/scans/{id}'],
        ['DELETE', `/api/v1/scans/${scanId}`, '/api/v1/scans/{id}'],
        ['GET', `/api/v1/scans/${scanId}/report`, '/api/v1/scans/{id}/report'],
        ['POST', `/api/v1/scans/${scanId}/fix`, '/api/v1/scans/{id}/fix'],
      ] as const) {
        const answer = await rawExchange(s.url, `${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`, 5000, 0, from2);
        expect(checker.raw(method.toLowerCase(), documented, answer.text), `${method} ${path}`).toBe(429);
      }
      // The database gone: usage and readiness answer 503 with Retry-After.
      await new Promise<void>((resolve) => {
        proxy.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
      expect(await checker.fetched('get', '/api/v1/usage', await fetch(`${s.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${b}` } }))).toBe(503);
      expect(await checker.fetched('get', '/readyz', await fetch(`${s.url}/readyz`))).toBe(503);
      expect(await checker.fetched('get', '/api/v1/records/{sha256}', await fetch(`${s.url}/api/v1/records/${'0'.repeat(64)}`, { headers: { Authorization: `Bearer ${b}` } }))).toBe(503);
      const gone = 'scn_00000000000000000000000000000000';
      for (const [method, path, documented, body] of [
        ['GET', '/api/v1/scans', '/api/v1/scans', undefined],
        ['GET', `/api/v1/scans/${gone}`, '/api/v1/scans/{id}', undefined],
        ['DELETE', `/api/v1/scans/${gone}`, '/api/v1/scans/{id}', undefined],
        ['GET', `/api/v1/scans/${gone}/report`, '/api/v1/scans/{id}/report', undefined],
        ['POST', `/api/v1/scans/${gone}/fix`, '/api/v1/scans/{id}/fix', '{"confirm":1}'],
      ] as const) {
        const answer = await fetch(`${s.url}${path}`, { method, headers: { Authorization: `Bearer ${b}`, ...(body ? { 'Content-Type': 'application/json' } : {}) }, body });
        expect(await checker.fetched(method.toLowerCase(), documented, answer), `${method} ${path}`).toBe(503);
      }
    } finally {
      await s.close();
      proxy.close();
      await database.drop();
    }
    // Every status each operation documents was answered and checked, by this test and the one before.
    expect([...checker.seen].filter((s) => !s.includes('/api/v2/') && !s.startsWith('get /api/v1/protect')).sort()).toEqual(checker.documented());
  });
});
