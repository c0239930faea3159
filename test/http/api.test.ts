/**
 * The v1 API over real HTTP, against a started server, on the embedded
 * database and on PostgreSQL alike.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verify } from '../../src/index.js';
import { corpusFile } from '../support/corpus.js';
import { ExifTool } from '../support/exiftool.js';
import { generatedImages } from '../support/generated.js';
import { BACKENDS, postImage, startTestServer, type TestServer } from '../support/server.js';
import { withC2pa } from '../support/c2pa.js';
import { withSegments, xmpPacket, xmpSegment } from '../support/build.js';
import { PUBLIC_API_PATHS } from '../support/public-paths.js';

const images = Object.fromEntries((await generatedImages()).map((g) => [g.name, g.bytes]));
const JPEG = images['baseline.jpg']!;
const WEBP = corpusFile('pillow/hopper.webp').bytes;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

describe.each(BACKENDS)('API on %s', (backend) => {
  let t: TestServer;
  let key: string;
  let exiftool: ExifTool;
  let dir: string;

  beforeAll(async () => {
    t = await startTestServer({ backend, env: { OPTMARK_MAX_UPLOAD_BYTES: String(25 * 1024 * 1024) } });
    key = await t.key('pro');
    exiftool = new ExifTool();
    dir = mkdtempSync(join(tmpdir(), 'optmark-api-'));
  });
  afterAll(async () => {
    await exiftool.close();
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const usage = async (k = key) => (await (await fetch(`${t.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${k}` } })).json()) as Record<string, { used: number }>;

  it('protects a JPEG: the decoded bytes carry the field, and sha256 is theirs', async () => {
    const before = await usage();
    const response = await postImage(t.url, key, JPEG, { filename: 'holiday photo.jpg', type: 'image/jpeg' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await response.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['filename', 'imageBase64', 'mimeType', 'sha256', 'signals']);
    const bytes = Buffer.from(body.imageBase64 as string, 'base64');
    expect(body).toMatchObject({ mimeType: 'image/jpeg', filename: 'holiday-photo-optout.jpg', signals: ['iptc.dataMining'], sha256: sha256(bytes) });
    const file = join(dir, `${backend}-marked.jpg`);
    writeFileSync(file, bytes);
    const tags = await exiftool.readJson(file, ['-XMP-plus:DataMining']);
    expect(tags['XMP-plus:DataMining']).toBe('DMI-PROHIBITED-AIMLTRAINING');
    expect((await usage()).protect!.used).toBe(before.protect!.used + 1);

    const verified = await postImage(t.url, key, bytes, { path: '/api/v1/verify' });
    expect(verified.status).toBe(200);
    const result = (await verified.json()) as Record<string, unknown>;
    expect(result).toEqual({
      optedOut: true,
      signals: ['iptc.dataMining'],
      provenance: { present: true, valid: true, verifiable: true },
      fingerprint: { present: false, confidence: 0, blocks: 0 },
      sha256: sha256(bytes),
    });
  });

  it('answers a marked file over 1 MB (sent as a stream of pieces) with the whole JSON its Content-Length announces', async () => {
    const big = await sharp({ create: { width: 1400, height: 1400, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } } }).jpeg({ quality: 95 }).toBuffer();
    expect(big.length).toBeGreaterThan(1024 * 1024);
    const response = await postImage(t.url, key, big, { filename: 'big.jpg', type: 'image/jpeg' });
    expect(response.status).toBe(200);
    const text = Buffer.from(await response.arrayBuffer());
    expect(Number(response.headers.get('content-length'))).toBe(text.length);
    const body = JSON.parse(text.toString('utf8')) as Record<string, unknown>;
    const bytes = Buffer.from(body.imageBase64 as string, 'base64');
    expect(body).toMatchObject({ mimeType: 'image/jpeg', filename: 'big-optout.jpg', signals: ['iptc.dataMining'], sha256: sha256(bytes) });
    // Every byte came through: the marked file is the input with its metadata written, and it opts out.
    expect(bytes.length).toBeGreaterThan(big.length);
    expect(bytes.subarray(bytes.length - 1024 * 1024).equals(big.subarray(big.length - 1024 * 1024))).toBe(true);
    expect(verify(bytes).optedOut).toBe(true);
  });

  it('describes a WebP upload by the bytes produced, whatever the upload was called', async () => {
    const response = await postImage(t.url, key, WEBP, { filename: 'cat.png', type: 'image/png' });
    expect(response.status).toBe(200);
    const body = (await response.json()) as Record<string, string>;
    expect(body.mimeType).toBe('image/webp');
    expect(body.filename).toBe('cat-optout.webp');
    expect(Buffer.from(body.imageBase64!, 'base64').subarray(8, 12).toString('latin1')).toBe('WEBP');
  });

  it('carries Request-Id and RateLimit headers (draft-ietf-httpapi-ratelimit-headers-11)', async () => {
    const response = await postImage(t.url, key, JPEG, { path: '/api/v1/verify' });
    expect(response.headers.get('request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(response.headers.get('ratelimit-policy')).toMatch(/^"verify";q=50000;w=\d+$/);
    const remaining = 50000 - (await usage()).verify!.used;
    expect(response.headers.get('ratelimit')).toMatch(new RegExp(`^"verify";r=${remaining};t=\\d+$`));
    const given = await fetch(`${t.url}/healthz`, { headers: { 'Request-Id': 'my-trace-42' } });
    expect(given.headers.get('request-id')).toBe('my-trace-42');
  });

  it('reports usage in the documented shape, free of charge', async () => {
    const first = await fetch(`${t.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } });
    const body = (await first.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['protect', 'resetsAt', 'verify']);
    expect(body.protect).toEqual({ used: expect.any(Number), limit: 10000, remaining: 10000 - (body.protect as { used: number }).used });
    const now = new Date();
    expect(body.resetsAt).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString());
    expect(first.headers.get('ratelimit-policy')).toMatch(/^"protect";q=10000;w=\d+, "verify";q=50000;w=\d+$/);
    expect(await usage()).toEqual(body);
  });

  describe('every error: status, code, and the quota does not move', () => {
    const cases: Array<[string, number, string, () => Promise<Response>]> = [
      ['no key', 401, 'missing_api_key', () => postImage(t.url, undefined, JPEG)],
      ['a malformed key', 401, 'invalid_api_key', () => postImage(t.url, 'not-a-key', JPEG)],
      ['a well-formed unknown key', 401, 'invalid_api_key', () => postImage(t.url, 'omk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA0xqHyc', JPEG)],
      ['no image part', 400, 'missing_image_part', () => postImage(t.url, key, JPEG, { field: 'file' })],
      ['two parts', 400, 'multiple_parts', () => postImage(t.url, key, JPEG, { extra: [['image', new Blob([JPEG])]] })],
      ['an extra text field', 400, 'multiple_parts', () => postImage(t.url, key, JPEG, { extra: [['note', 'hello']] })],
      ['an empty file', 400, 'empty_image', () => postImage(t.url, key, new Uint8Array(0))],
      ['a 26 MB file', 413, 'image_too_large', () => postImage(t.url, key, new Uint8Array(26 * 1024 * 1024))],
      ['GIF bytes sent as image/png', 415, 'unsupported_image_format', () => postImage(t.url, key, Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1'), { type: 'image/png', filename: 'x.png' })],
      ['a corrupt JPEG', 422, 'corrupt_image', () => postImage(t.url, key, JPEG.subarray(0, JPEG.length >> 1))],
      ['a JSON body', 415, 'unsupported_content_type', () => fetch(`${t.url}/api/v1/protect`, { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: '{}' })],
    ];

    it.each(cases)('%s: %i %s', async (_, status, code, send) => {
      for (const path of ['/api/v1/protect', '/api/v1/verify']) {
        const before = await usage();
        const response = path.endsWith('protect') ? await send() : await retarget(send, path);
        expect(response.status).toBe(status);
        expect(response.headers.get('content-type')).toMatch(/^application\/json/);
        const body = (await response.json()) as Record<string, string>;
        expect(Object.keys(body).sort()).toEqual(['code', 'error', 'requestId']);
        expect(body.code).toBe(code);
        expect(body.error!.length).toBeGreaterThan(10);
        expect(body.requestId).toBe(response.headers.get('request-id'));
        if (status === 401) expect(response.headers.get('www-authenticate')).toBe('Bearer');
        expect(await usage()).toEqual(before);
      }
    });

    it('a revoked key: 401, the same body as an unknown key, and no usage', async () => {
      const name = `revoked-${backend}`;
      await t.server.admin.createAccount(name, 'pro');
      const issued = await t.server.admin.issueKey(name);
      expect((await postImage(t.url, issued.key, JPEG)).status).toBe(200);
      await t.server.admin.revokeKey(issued.id);
      const headers = (k: string) => ({ Authorization: `Bearer ${k}`, 'Request-Id': 'same-id' });
      const revoked = await fetch(`${t.url}/api/v1/usage`, { headers: headers(issued.key) });
      const unknown = await fetch(`${t.url}/api/v1/usage`, { headers: headers('omk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA0xqHyc') });
      expect(revoked.status).toBe(401);
      expect(await revoked.text()).toBe(await unknown.text());
      expect((await postImage(t.url, issued.key, JPEG)).status).toBe(401);
      expect((await t.server.admin.usage(name)).protect.used).toBe(1);
    });

    it('a Free plan: 403 plan_not_allowed from protect, verify and usage alike, nothing counted', async () => {
      const free = await t.key('free');
      const answers = [
        await postImage(t.url, free, JPEG),
        await postImage(t.url, free, JPEG, { path: '/api/v1/verify' }),
        await fetch(`${t.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${free}` } }),
      ];
      for (const response of answers) {
        expect(response.status).toBe(403);
        expect(((await response.json()) as { code: string }).code).toBe('plan_not_allowed');
      }
    });
  });

  it('answers an oversized Content-Length with 413 before reading the body', async () => {
    const started = performance.now();
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const url = new URL(`${t.url}/api/v1/protect`);
      const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'Content-Type': 'multipart/form-data; boundary=x', 'Content-Length': String(30 * 1024 * 1024), Authorization: `Bearer ${key}` } }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, body: text }));
      });
      req.on('error', reject);
      req.write('--x\r\n'); // and never the rest
    });
    expect(status).toBe(413);
    expect(JSON.parse(body)).toMatchObject({ code: 'image_too_large' });
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('enforces the size limit while streaming an upload that declares no length', async () => {
    const before = await usage();
    const chunk = new Uint8Array(1024 * 1024).fill(0x41);
    const head = new TextEncoder().encode('--b\r\nContent-Disposition: form-data; name="image"; filename="big.jpg"\r\nContent-Type: image/jpeg\r\n\r\n');
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 0) controller.enqueue(head);
        if (sent >= 30) {
          controller.enqueue(new TextEncoder().encode('\r\n--b--\r\n'));
          controller.close();
          return;
        }
        sent++;
        controller.enqueue(chunk);
      },
    });
    const response = await fetch(`${t.url}/api/v1/protect`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'multipart/form-data; boundary=b' },
      body,
      duplex: 'half',
    } as RequestInit).catch((error: Error) => error);
    if (response instanceof Error) throw response;
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ code: 'image_too_large' });
    expect(await usage()).toEqual(before);
  });

  it('answers unknown paths with a JSON 404 and wrong methods with a JSON 405', async () => {
    const missing = await fetch(`${t.url}/api/v2/protect`, { method: 'POST' });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: 'not_found' });
    const wrong = await fetch(`${t.url}/api/v1/protect`);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
    expect(await wrong.json()).toMatchObject({ code: 'method_not_allowed' });
    const usageWrong = await fetch(`${t.url}/api/v1/usage`, { method: 'DELETE' });
    expect(usageWrong.status).toBe(405);
    expect(usageWrong.headers.get('allow')).toBe('GET');
    // The open paths too: the document, the key set, the health checks.
    for (const path of ['/api/v1/openapi.json', '/.well-known/jwks.json', '/healthz', '/readyz']) {
      const posted = await fetch(`${t.url}${path}`, { method: 'POST' });
      expect(posted.status, path).toBe(405);
      expect(posted.headers.get('allow'), path).toBe('GET');
      expect(await posted.json()).toMatchObject({ code: 'method_not_allowed' });
    }
  });

  it('says when protect breaks a C2PA manifest (Optmark-C2PA-Manifest: invalidated), and verify reports its CAWG signal', async () => {
    const signed = await withC2pa(JPEG, { 'cawg.ai_training': 'notAllowed' });
    // No plus:DataMining field: signals is [] (the spec's rule); ?detail=full shows the CAWG signal.
    const checked = await postImage(t.url, key, signed, { path: '/api/v1/verify' });
    expect(await checked.json()).toMatchObject({ optedOut: false, signals: [] });
    const detailed = await postImage(t.url, key, signed, { path: '/api/v1/verify?detail=full' });
    expect(await detailed.json()).toMatchObject({ optedOut: false, signals: [], details: { signals: ['cawg.trainingMining'], c2pa: { present: true, readable: true } } });
    const response = await postImage(t.url, key, signed, { filename: 'signed.jpg' });
    expect(response.status).toBe(200);
    expect(response.headers.get('optmark-c2pa-manifest')).toBe('invalidated');
    // protect lists the signals it wrote; verify finds both.
    const body = (await response.json()) as { signals: string[]; imageBase64: string };
    expect(body.signals).toEqual(['iptc.dataMining']);
    const marked = await postImage(t.url, key, Buffer.from(body.imageBase64, 'base64'), { path: '/api/v1/verify' });
    expect(await marked.json()).toMatchObject({ optedOut: true, signals: ['iptc.dataMining', 'cawg.trainingMining'], provenance: { valid: true } });
    const plain = await postImage(t.url, key, JPEG);
    expect(plain.headers.get('optmark-c2pa-manifest')).toBeNull();
  });

  describe('verify: the signals rule and ?detail=full', () => {
    const TDM = 'xmlns:tdm="http://www.w3.org/ns/tdmrep/" tdm:reservation="1" tdm:policy="https://example.com/tdm-policy.json"';
    const PLUS = 'xmlns:plus="http://ns.useplus.org/ldf/xmp/1.0/"';
    const tdmOnly = withSegments(JPEG, xmpSegment(xmpPacket(`<rdf:Description rdf:about="" ${TDM}/>`)));
    const tdmAndAllowed = withSegments(JPEG, xmpSegment(xmpPacket(`<rdf:Description rdf:about="" ${TDM} ${PLUS} plus:DataMining="http://ns.useplus.org/ldf/vocab/DMI-ALLOWED"/>`)));
    const verifyAt = (bytes: Uint8Array, query = '') => postImage(t.url, key, bytes, { path: `/api/v1/verify${query}` });

    it('signals is [] when the file has no plus:DataMining, whatever else it says; with the field, it lists every signal found', async () => {
      const absent = (await (await verifyAt(tdmOnly)).json()) as Record<string, unknown>;
      expect(Object.keys(absent).sort()).toEqual(['fingerprint', 'optedOut', 'provenance', 'sha256', 'signals']);
      expect(absent).toMatchObject({ optedOut: false, signals: [] });
      // The field is present (allowing): the signals found are listed, and optedOut is still false.
      expect(await (await verifyAt(tdmAndAllowed)).json()).toMatchObject({ optedOut: false, signals: ['tdmrep.reservation'] });
    });

    it('?detail=full adds details, with every signal found, each value, warnings and the C2PA summary, and changes nothing else', async () => {
      const plain = (await (await verifyAt(tdmOnly)).json()) as Record<string, unknown>;
      const response = await verifyAt(tdmOnly, '?detail=full');
      expect(response.status).toBe(200);
      const full = (await response.json()) as Record<string, unknown>;
      const { details, ...rest } = full;
      expect(rest).toEqual(plain);
      expect(details).toEqual({
        format: 'jpeg',
        mimeType: 'image/jpeg',
        signals: ['tdmrep.reservation'],
        dataMining: [],
        otherConstraints: null,
        tdmrep: { reservation: '1', policy: 'https://example.com/tdm-policy.json' },
        c2pa: { present: false, readable: false, trainingMining: [] },
        warnings: [],
      });

      // Each value, and the warning about repeated properties that Adobe-based readers reject.
      const reagan = (await (await verifyAt(corpusFile('exiv2/ReaganLargeJpg.jpg').bytes, '?detail=full')).json()) as { details: { warnings: string[] } };
      expect(reagan.details.warnings).toEqual([expect.stringMatching(/^the XMP packet repeats photoshop:ColorMode \(2 times\).*Adobe's XMP Toolkit/)]);
      const marked = Buffer.from(((await (await postImage(t.url, key, JPEG)).json()) as { imageBase64: string }).imageBase64, 'base64');
      const detailed = (await (await verifyAt(marked, '?detail=full')).json()) as { signals: string[]; details: Record<string, unknown> };
      expect(detailed.signals).toEqual(['iptc.dataMining']);
      expect(detailed.details.dataMining).toEqual([
        { value: 'http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED-AIMLTRAINING', code: 'DMI-PROHIBITED-AIMLTRAINING', label: 'Prohibited for AI/ML training', prohibited: true, form: 'element', extended: false },
      ]);

      // Both answers fit the OpenAPI document's VerifyResult, details included.
      const doc = (await (await fetch(`${t.url}/api/v1/openapi.json`)).json()) as { components: { schemas: Record<string, Schema> } };
      expect(schemaErrors(doc.components.schemas.VerifyResult!, plain)).toEqual([]);
      expect(schemaErrors(doc.components.schemas.VerifyResult!, full)).toEqual([]);
      expect(schemaErrors(doc.components.schemas.VerifyResult!, detailed)).toEqual([]);
    });

    it.each([
      ['another value', '?detail=summary', /Expected "full" for detail but received "summary"/],
      ['an empty value', '?detail', /for detail/],
      ['the parameter twice', '?detail=full&detail=full', /for detail/],
      ['another parameter', '?verbose=1', /only the parameter detail.*"verbose"/],
      ['another parameter next to detail', '?detail=full&x=1', /only the parameter detail.*"x"/],
    ])('%s: 400 invalid_option, before the upload is read, counting nothing', async (_, query, message) => {
      const before = await usage();
      const response = await verifyAt(tdmOnly, query);
      expect(response.status).toBe(400);
      const body = (await response.json()) as { code: string; error: string };
      expect(body.code).toBe('invalid_option');
      expect(body.error).toMatch(message);
      expect(await usage()).toEqual(before);
      // The key is checked first.
      expect((await postImage(t.url, undefined, tdmOnly, { path: `/api/v1/verify${query}` })).status).toBe(401);
    });

    it('the OpenAPI document describes detail, details, the protect signals and the Optmark-Opt-Out header', async () => {
      const doc = (await (await fetch(`${t.url}/api/v1/openapi.json`)).json()) as {
        paths: Record<string, { post: { parameters?: Array<{ name: string; in: string; schema: unknown }>; responses: Record<string, { description: string; headers?: Record<string, unknown> }> } }>;
        components: { schemas: Record<string, Schema> };
      };
      const verifyOp = doc.paths['/api/v1/verify']!.post;
      expect(verifyOp.parameters).toEqual([
        expect.objectContaining({ name: 'detail', in: 'query', schema: { type: 'string', enum: ['full'] } }),
        expect.objectContaining({ name: 'Idempotency-Key', in: 'header' }),
      ]);
      expect(verifyOp.responses['400']!.description).toContain('invalid_option');
      const result = doc.components.schemas.VerifyResult!;
      expect(result.required).not.toContain('details');
      expect(Object.keys(result.properties!.details!.properties!).sort()).toEqual(['c2pa', 'dataMining', 'format', 'mimeType', 'otherConstraints', 'signals', 'tdmrep', 'warnings']);
      expect(result.properties!.signals!.description).toMatch(/empty array when the field is absent/);
      expect(doc.components.schemas.ProtectResult!.properties!.signals!.items).toEqual({ type: 'string', enum: ['iptc.dataMining'] });
      expect(doc.paths['/api/v1/protect']!.post.parameters).toEqual([expect.objectContaining({ name: 'Idempotency-Key', in: 'header', required: false })]);
      for (const path of ['/api/v1/protect', '/api/v1/verify']) {
        expect(doc.paths[path]!.post.responses['422']!.description).toContain('idempotency_key_reused');
        expect(doc.paths[path]!.post.responses['200']!.headers).toHaveProperty('Idempotent-Replayed');
      }
      expect(Object.keys(doc.paths['/api/v1/protect']!.post.responses['200']!.headers!)).toContain('Optmark-Opt-Out');
      expect(doc.paths['/api/v1/protect']!.post.responses['422']!.description).toContain('conflicting_xmp');
    });
  });

  it('protect keeps an opt-out value the upload already carries, says so in Optmark-Opt-Out, and counts the call', async () => {
    const gen = withSegments(JPEG, xmpSegment(xmpPacket('<rdf:Description rdf:about="" xmlns:plus="http://ns.useplus.org/ldf/xmp/1.0/"><plus:DataMining>http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED-GENAIMLTRAINING</plus:DataMining></rdf:Description>')));
    const before = await usage();
    const response = await postImage(t.url, key, gen);
    expect(response.status).toBe(200);
    expect(response.headers.get('optmark-opt-out')).toBe('kept DMI-PROHIBITED-GENAIMLTRAINING');
    const body = (await response.json()) as { imageBase64: string; signals: string[] };
    expect(Object.keys(body).sort()).toEqual(['filename', 'imageBase64', 'mimeType', 'sha256', 'signals']);
    const file = join(dir, `${backend}-kept.jpg`);
    writeFileSync(file, Buffer.from(body.imageBase64, 'base64'));
    expect((await exiftool.readJson(file, ['-XMP-plus:DataMining']))['XMP-plus:DataMining']).toBe('DMI-PROHIBITED-GENAIMLTRAINING');
    expect((await usage()).protect!.used).toBe(before.protect!.used + 1);
    // A file without one gets the default, and the header says it was written.
    expect((await postImage(t.url, key, JPEG)).headers.get('optmark-opt-out')).toBe('written DMI-PROHIBITED-AIMLTRAINING');
  });

  it('publishes its signing keys as a JWKS that verifies its tags offline', async () => {
    const response = await fetch(`${t.url}/.well-known/jwks.json`);
    expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    const jwks = (await response.json()) as { keys: Array<Record<string, string>> };
    expect(jwks.keys).toEqual([expect.objectContaining({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig', kid: expect.any(String) })]);
    expect(JSON.stringify(jwks)).not.toMatch(/"d"/);
  });

  it('serves health, readiness and the OpenAPI 3.1 document', async () => {
    expect(await (await fetch(`${t.url}/healthz`)).json()).toEqual({ status: 'ok' });
    expect(await (await fetch(`${t.url}/readyz`)).json()).toEqual({ status: 'ok' });
    const doc = (await (await fetch(`${t.url}/api/v1/openapi.json`)).json()) as { openapi: string; paths: Record<string, unknown>; components: { schemas: Record<string, unknown> } };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths).sort()).toEqual(PUBLIC_API_PATHS);
    expect(Object.keys(doc.components.schemas).sort()).toEqual(['Error', 'Health', 'Jwk', 'Jwks', 'ProtectResult', 'Records', 'Scan', 'ScanItem', 'ScanReport', 'ScanSummary', 'Usage', 'VerifyResult']);
  });
});

/** Re-send a request builder's body to another path (the builders target protect). */
async function retarget(send: () => Promise<Response>, path: string): Promise<Response> {
  const original = globalThis.fetch;
  globalThis.fetch = ((input: string | URL | Request, init?: RequestInit) => original(String(input).replace('/api/v1/protect', path), init)) as typeof fetch;
  try {
    return await send();
  } finally {
    globalThis.fetch = original;
  }
}

interface Schema {
  readonly type?: string | readonly string[];
  readonly required?: readonly string[];
  readonly properties?: Record<string, Schema>;
  readonly additionalProperties?: boolean | Schema;
  readonly items?: Schema;
  readonly enum?: readonly unknown[];
  readonly description?: string;
}

/** What in `value` does not fit `schema`: types, required and unknown properties, enums (the subset the OpenAPI document uses). */
function schemaErrors(schema: Schema, value: unknown, path = '$'): string[] {
  const kind = value === null ? 'null' : Array.isArray(value) ? 'array' : Number.isInteger(value) ? 'integer' : typeof value;
  const types = schema.type === undefined ? undefined : [schema.type].flat();
  if (types && !types.includes(kind) && !(kind === 'integer' && types.includes('number'))) return [`${path}: ${kind}, not ${types.join('|')}`];
  if (schema.enum && !schema.enum.includes(value)) return [`${path}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`];
  const errors: string[] = [];
  if (kind === 'array' && schema.items) (value as unknown[]).forEach((item, i) => errors.push(...schemaErrors(schema.items!, item, `${path}[${i}]`)));
  if (kind === 'object') {
    const record = value as Record<string, unknown>;
    for (const name of schema.required ?? []) if (!(name in record)) errors.push(`${path}.${name}: missing`);
    for (const [name, item] of Object.entries(record)) {
      const sub = schema.properties?.[name] ?? (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined);
      if (sub) errors.push(...schemaErrors(sub, item, `${path}.${name}`));
      else if (schema.additionalProperties === false) errors.push(`${path}.${name}: not in the schema`);
    }
  }
  return errors;
}
