/**
 * The malformed-input table of our hardening plan, row by row, against a
 * running server: each input gets its status and code, the server is still
 * healthy afterwards, and the account's usage moves only for a 200. Where our
 * contract (docs/errors.md) differs from the plan's table, the contract is
 * what is asserted, and the row says so.
 */
import type { IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  afterIhdr,
  blackPng,
  chunk,
  enc,
  extensionSegment,
  extensionSegments,
  headerOnlyPng,
  jpegWithFrameSize,
  latin1,
  md5Guid,
  PNG_SIGNATURE,
  progressiveHeaders,
  riff,
  segment,
  u32be,
  withSegments,
  xmpPacket,
  xmpSegment,
} from '../support/build.js';
import { corpusFile } from '../support/corpus.js';
import { generatedImages } from '../support/generated.js';
import { multipartBody, parseResponse, rawExchange, rawPost, type RawResponse } from '../support/raw-http.js';
import { startTestServer, type TestServer } from '../support/server.js';

const JPEG = corpusFile('exiftool/XMP.jpg').bytes;
/** Made in code, without any XMP of its own. */
const GENERATED = Object.fromEntries((await generatedImages()).map((g) => [g.name, g.bytes]));
const PNG = corpusFile('pngsuite/basn2c08.png').bytes;
const WEBP = corpusFile('pillow/hopper.webp').bytes;
const BOUNDARY = 'optmark-boundary';
const MULTIPART = `multipart/form-data; boundary=${BOUNDARY}`;

let t: TestServer;
let key: string;

beforeAll(async () => {
  t = await startTestServer({ env: { OPTMARK_HEADERS_TIMEOUT: '1', OPTMARK_UPLOAD_STALL_SECONDS: '1' } });
  key = await t.key('pro');
});
afterAll(async () => t?.close());

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly json: Record<string, unknown>;
}

/** A server and a key of it: the shared one by default, or one a row starts with settings of its own. */
interface Target {
  readonly url: string;
  readonly key: string;
}
const shared = (): Target => ({ url: t.url, key });

const usage = async (on: Target = shared()) => {
  const body = (await (await fetch(`${on.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${on.key}` } })).json()) as Record<string, { used: number }>;
  return { protect: body.protect!.used, verify: body.verify!.used };
};

/** One image part, through fetch. */
async function post(
  bytes: Uint8Array,
  path = '/api/v1/protect',
  type = 'application/octet-stream',
  headers: Record<string, string> = {},
  { on = shared(), filename = 'upload.bin' }: { on?: Target; filename?: string } = {},
): Promise<Answer> {
  const form = new FormData();
  form.append('image', new Blob([bytes], { type }), filename);
  const response = await fetch(`${on.url}${path}`, { method: 'POST', headers: { Authorization: `Bearer ${on.key}`, ...headers }, body: form });
  return { status: response.status, headers: Object.fromEntries(response.headers), json: (await response.json()) as Record<string, unknown> };
}

/** Bytes on a socket, the answer parsed by hand. */
async function raw(bytes: string | Uint8Array | ReadonlyArray<string | Uint8Array>, waitMs = 5000, gapMs = 0, url = t.url): Promise<Answer> {
  const exchange = await rawExchange(url, typeof bytes === 'string' || bytes instanceof Uint8Array ? [bytes] : bytes, waitMs, gapMs);
  const response: RawResponse = parseResponse(exchange.text);
  return { status: response.status, headers: response.headers, json: JSON.parse(response.body) as Record<string, unknown> };
}

const multipartPost = (body: Uint8Array, contentType = MULTIPART, extra: Record<string, string> = {}) =>
  raw(rawPost('/api/v1/protect', { Authorization: `Bearer ${key}`, 'Content-Type': contentType, ...extra }, body));

/**
 * Run one row: the answer has `status` and `code` in the error shape, the
 * server is healthy after it, and usage moved by `counted` (0 unless 200).
 * `on` is the server the row is sent to, when it is not the shared one.
 */
async function row(
  send: () => Promise<Answer>,
  status: number,
  code: string | undefined,
  counted: { protect?: number; verify?: number } = {},
  on: Target = shared(),
): Promise<Answer> {
  const before = await usage(on);
  const answer = await send();
  expect(answer.status, JSON.stringify(answer.json)).toBe(status);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  if (code !== undefined) {
    expect(answer.json).toMatchObject({ code, error: expect.any(String), requestId: expect.any(String) });
    expect(Object.keys(answer.json).sort()).toEqual(['code', 'error', 'requestId']);
    expect((answer.json.error as string).length).toBeGreaterThan(10);
  }
  expect((await fetch(`${on.url}/healthz`)).status).toBe(200);
  expect(await usage(on)).toEqual({ protect: before.protect + (counted.protect ?? 0), verify: before.verify + (counted.verify ?? 0) });
  return answer;
}

describe('authentication (rows 1-2)', () => {
  it('1: no Authorization header: 401 missing_api_key with WWW-Authenticate', async () => {
    const answer = await row(async () => {
      const response = await fetch(`${t.url}/api/v1/protect`, { method: 'POST', body: new FormData() });
      return { status: response.status, headers: Object.fromEntries(response.headers), json: (await response.json()) as Record<string, unknown> };
    }, 401, 'missing_api_key');
    expect(answer.headers['www-authenticate']).toBe('Bearer');
  });

  it('2: a malformed (not-a-key, right prefix but wrong length), a bad checksum, an unknown, a revoked and an expired key: 401 invalid_api_key, byte-identical bodies', async () => {
    let now = Date.now();
    const own = await startTestServer({ clock: { now: () => new Date(now) } });
    try {
      const name = 'keys-table';
      await own.server.admin.createAccount(name, 'pro');
      const revoked = await own.server.admin.issueKey(name);
      await own.server.admin.revokeKey(revoked.id);
      const expiring = await own.server.admin.issueKey(name, { expiresInDays: 1 });
      const live = await own.server.admin.issueKey(name);
      const badChecksum = `${live.key.slice(0, -1)}${live.key.endsWith('A') ? 'B' : 'A'}`;
      const unknown = 'omk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA0xqHyc';
      // Malformed: refused from their shape, before any checksum or lookup; the answer must not say so.
      const malformed = ['not-a-key', `${live.key}A`, live.key.slice(0, 20)];
      expect((await fetch(`${own.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${expiring.key}` } })).status).toBe(200);
      now += 2 * 86_400_000;
      // The body's only per-request field is requestId: with the caller's own Request-Id the bodies are byte for byte
      // the same; without it they differ in that field alone.
      const bodies = new Set<string>();
      const withoutId = new Set<string>();
      const presented = [...malformed, badChecksum, unknown, revoked.key, expiring.key];
      for (const k of presented) {
        for (const requestId of ['same', undefined]) {
          const response = await fetch(`${own.url}/api/v1/protect`, { method: 'POST', headers: { Authorization: `Bearer ${k}`, ...(requestId ? { 'Request-Id': requestId } : {}) }, body: new FormData() });
          expect(response.status).toBe(401);
          expect(response.headers.get('www-authenticate')).toBe('Bearer');
          expect(response.headers.get('content-type')).toMatch(/^application\/json/);
          const text = await response.text();
          if (requestId) bodies.add(text);
          else withoutId.add(JSON.stringify({ ...(JSON.parse(text) as object), requestId: undefined }));
        }
      }
      expect(bodies.size).toBe(1);
      expect(withoutId.size).toBe(1);
      expect(JSON.parse([...bodies][0]!)).toEqual({ code: 'invalid_api_key', error: expect.any(String), requestId: 'same' });
      expect((await own.server.admin.usage(name)).protect.used).toBe(0);
      expect((await fetch(`${own.url}/healthz`)).status).toBe(200);
    } finally {
      await own.close();
    }
  });
});

describe('the request (rows 3-15)', () => {
  it('3: a JSON body: 415 unsupported_content_type', () =>
    row(() => raw(rawPost('/api/v1/protect', { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, enc('{"image":"x"}'))), 415, 'unsupported_content_type'));

  it('4: multipart without a boundary: 400 malformed_request', () =>
    row(() => multipartPost(multipartBody([{ name: 'image', filename: 'a.jpg', data: JPEG }]), 'multipart/form-data'), 400, 'malformed_request'));

  it('5: an HTTP/1.1 request without Host: 400 malformed_request in JSON, like every refusal (Node answered a bare 400)', () =>
    row(() => raw(`GET /api/v1/usage HTTP/1.1\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`), 400, 'malformed_request'));

  it('5: multipart without its closing boundary: 400 malformed_request', () =>
    row(() => multipartPost(multipartBody([{ name: 'image', filename: 'a.jpg', data: JPEG }], BOUNDARY, false)), 400, 'malformed_request'));

  // Our contract (docs/errors.md): the file name is only ever used to name
  // the output, cleaned; control characters in it are dropped, not refused.
  it.each([
    ['a NUL', 'a\0.jpg'],
    ['a CRLF', 'a\r\n.jpg'],
  ])('6: %s inside the quoted file name: 200, the name cleaned', async (_, filename) => {
    const answer = await row(() => multipartPost(multipartBody([{ name: 'image', disposition: `form-data; name="image"; filename="${filename}"`, data: JPEG }])), 200, undefined, { protect: 1 });
    expect(answer.json.filename).toBe('a-optout.jpg');
  });

  // Browsers and undici's FormData send a quote, a CR and an LF in a file name
  // as %22, %0D and %0A: the name is read as its sender wrote it (it came back
  // as say-22hi-22-optout.jpg, not the name the command line had planned).
  it.each([
    ['%22 for a quote', 'say %22hi%22.jpg', 'say-hi-optout.jpg'],
    ['%0D%0A for a line end', 'a%0d%0Ab.jpg', 'ab-optout.jpg'],
  ])('6: %s in the quoted file name: 200, the name decoded then cleaned', async (_, filename, expected) => {
    const answer = await row(() => multipartPost(multipartBody([{ name: 'image', disposition: `form-data; name="image"; filename="${filename}"`, data: JPEG }])), 200, undefined, { protect: 1 });
    expect(answer.json.filename).toBe(expected);
  });

  it("6: a quote and a line end in a name sent by undici's FormData: 200, the name as sent, cleaned", async () => {
    const answer = await row(() => post(JPEG, '/api/v1/protect', 'image/jpeg', {}, { filename: 'say "hi"\r\nagain.jpg' }), 200, undefined, { protect: 1 });
    expect(answer.json.filename).toBe('say-hi-again-optout.jpg');
  });

  it('6: a NUL in the parameter name (the part has no name): 400 missing_image_part', async () => {
    const answer = await row(() => multipartPost(multipartBody([{ name: 'image', disposition: 'form-data; na\0me="image"; filename="a.jpg"', data: JPEG }])), 400, 'missing_image_part');
    expect(answer.json.error).toMatch(/a file part without a name/);
  });

  // A part without Content-Disposition is no form field: the parser skips it. Over the parser's
  // buffer size and ending in the same read as the body, it once left the call hanging until the
  // request timeout, holding its slot.
  it('7: the image and then a 40 KB part without Content-Disposition, in one write: 200 at once', async () => {
    const stray = Buffer.concat([Buffer.from(`--${BOUNDARY}\r\nContent-Type: application/octet-stream\r\n\r\n`), Buffer.alloc(40 * 1024, 0x61), Buffer.from(`\r\n--${BOUNDARY}--\r\n`)]);
    const body = Buffer.concat([multipartBody([{ name: 'image', filename: 'a.jpg', data: JPEG }], BOUNDARY, false), stray]);
    const started = performance.now();
    await row(() => multipartPost(body), 200, undefined, { protect: 1 });
    expect(performance.now() - started).toBeLessThan(3000);
  });

  it('7: no image part (only a part named "file"): 400 missing_image_part', () =>
    row(() => multipartPost(multipartBody([{ name: 'file', filename: 'a.jpg', data: JPEG }])), 400, 'missing_image_part'));

  it('7: the image part typed image/jpeg without a file name (RFC 7578 allows it): 200', () =>
    row(() => multipartPost(multipartBody([{ name: 'image', type: 'image/jpeg', data: JPEG }])), 200, undefined, { protect: 1 }));

  it('7: a part named "image" without a type or a file name is a text field: 400 missing_image_part, saying so', async () => {
    for (const type of [undefined, 'text/plain; charset=utf-8']) {
      const answer = await row(() => multipartPost(multipartBody([{ name: 'image', ...(type ? { type } : {}), data: JPEG }])), 400, 'missing_image_part');
      expect(answer.json.error).toMatch(/the body has field "image"/);
    }
  });

  it('7: no image part, only text fields: 400 missing_image_part', async () => {
    const answer = await row(() => multipartPost(multipartBody([{ name: 'note', data: 'hello' }, { name: 'title', data: 'a photo' }])), 400, 'missing_image_part');
    expect(answer.json.error).toMatch(/no file part named "image"/);
  });

  // Our contract has one code for "more than the one image part" (rows 8 and 9).
  it('8: two image parts: 400 multiple_parts', () =>
    row(() => multipartPost(multipartBody([{ name: 'image', filename: 'a.jpg', data: JPEG }, { name: 'image', filename: 'b.jpg', data: JPEG }])), 400, 'multiple_parts'));

  it('9: an extra text field: 400 multiple_parts', () =>
    row(() => multipartPost(multipartBody([{ name: 'image', filename: 'a.jpg', data: JPEG }, { name: 'note', data: 'hello' }])), 400, 'multiple_parts'));

  it('9: five extra text fields: 400 multiple_parts', () =>
    row(() => multipartPost(multipartBody([{ name: 'image', filename: 'a.jpg', data: JPEG }, ...Array.from({ length: 5 }, (_, i) => ({ name: `f${i}`, data: 'x' }))])), 400, 'multiple_parts'));

  it('10: an image part of 0 bytes: 400 empty_image', () => row(() => post(new Uint8Array(0)), 400, 'empty_image'));

  it('11: a declared Content-Length over the limit: 413 image_too_large before the body, connection closed', async () => {
    const answer = await row(
      () => raw(`POST /api/v1/protect HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: ${MULTIPART}\r\nContent-Length: ${26 * 1024 * 1024 + 65 * 1024}\r\n\r\n--${BOUNDARY}\r\n`),
      413,
      'image_too_large',
    );
    expect(answer.headers.connection).toBe('close');
  });

  it('11: a streamed (chunked) file over 25 MB: 413 image_too_large, connection closed', async () => {
    const head = `POST /api/v1/protect HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: ${MULTIPART}\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const opening = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="big.jpg"\r\n\r\n`);
    const piece = Buffer.alloc(1024 * 1024, 0x41);
    const asChunk = (b: Buffer) => Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')]);
    const answer = await row(() => raw([head, asChunk(opening), ...Array.from({ length: 27 }, () => asChunk(piece))], 20_000), 413, 'image_too_large');
    // Without a Content-Length the client cannot be told to stop before it
    // starts; closing is what stops it streaming the rest.
    expect(answer.headers.connection).toBe('close');
  });

  const smuggling: Array<[string, string]> = [
    ['Transfer-Encoding and Content-Length together', 'Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
    ['two different Content-Length headers', 'Content-Length: 4\r\nContent-Length: 5\r\n\r\nabcde'],
    ['Transfer-Encoding: chunked, gzip', 'Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n'],
    ['a space before the colon', 'Content-Length : 4\r\n\r\nabcd'],
    ['an obs-fold Transfer-Encoding', 'Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n'],
    ['a bare CR in a header', 'X-A: 1\rX-B: 2\r\nContent-Length: 0\r\n\r\n'],
  ];
  it.each(smuggling)('12: %s: 400 malformed_request, connection closed, the handler never runs', async (_, rest) => {
    // Requests to protect that reach the application at all: Node's server
    // emits 'request' for each message it parsed, before any of fastify's
    // hooks (onRequest, the preHandler that reserves a unit) or the route
    // handler run. A message the parser refuses never becomes one.
    let reached = 0;
    const counting = (request: IncomingMessage) => {
      if (request.method === 'POST' && request.url === '/api/v1/protect') reached++;
    };
    t.server.app.server.on('request', counting);
    try {
      const answer = await row(() => raw(`POST /api/v1/protect HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: ${MULTIPART}\r\n${rest}`), 400, 'malformed_request');
      expect(answer.headers.connection).toBe('close');
      expect(reached).toBe(0);
      // The control: a well-formed POST to the same path (no key: 401, nothing read or counted) is seen, once.
      expect((await raw(`POST /api/v1/protect HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`)).status).toBe(401);
      expect(reached).toBe(1);
    } finally {
      t.server.app.server.off('request', counting);
    }
  });

  it('13: a header block over 16 KB: 431 header_too_large', () =>
    row(() => raw(`GET /api/v1/usage HTTP/1.1\r\nHost: x\r\nX-Padding: ${'a'.repeat(20 * 1024)}\r\n\r\n`), 431, 'header_too_large'));

  // The limit is 16 KiB, set on the server explicitly (build-app.ts), not lower.
  it('13: a header block just under 16 KB is read (here: 401 missing_api_key)', () =>
    row(() => raw(`GET /api/v1/usage HTTP/1.1\r\nHost: x\r\nX-Padding: ${'a'.repeat(15 * 1024)}\r\nConnection: close\r\n\r\n`), 401, 'missing_api_key'));

  it('13: 200 headers: 431 header_too_large', () =>
    row(() => raw(`GET /api/v1/usage HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 200 }, (_, i) => `X-H${i}: ${'v'.repeat(80)}\r\n`).join('')}\r\n`), 431, 'header_too_large'));

  it('14: headers not finished within the headers timeout (1 s here): 408 request_timeout', () =>
    row(() => raw(`POST /api/v1/protect HTTP/1.1\r\nHost: x\r\n`, 5000), 408, 'request_timeout'));

  it('14: a request sent on a connection after its 408 (a browser picks an idle connection as the server closes it) is not run: its retry under the same Idempotency-Key runs anew, counted once', async () => {
    const before = await usage();
    const late = rawPost('/api/v1/protect', { Authorization: `Bearer ${key}`, 'Content-Type': MULTIPART, 'Idempotency-Key': 'after-408' }, multipartBody([{ name: 'image', filename: 'a.jpg', data: JPEG }]));
    const { port } = new URL(t.url);
    // Half open, as a browser's connection is: it still sends after the server's FIN.
    const socket = connect({ port: Number(port), host: '127.0.0.1', allowHalfOpen: true });
    socket.setEncoding('latin1');
    socket.on('error', () => {});
    let text = '';
    const answered408 = new Promise<void>((resolve) =>
      socket.on('data', (chunk: string) => {
        text += chunk;
        if (text.includes('request_timeout')) resolve();
      }),
    );
    await answered408;
    socket.write(late);
    // Time for the server to run it, if it ran it (it would then keep its outcome under the key).
    await new Promise((resolve) => setTimeout(resolve, 1000));
    socket.destroy();
    expect(parseResponse(text).status).toBe(408);
    // Only the 408: nothing answered the request sent after it.
    expect(text.match(/HTTP\/1\.1 /g)).toHaveLength(1);
    const retry = await post(JPEG, '/api/v1/protect', 'application/octet-stream', { 'Idempotency-Key': 'after-408' });
    expect(retry.status).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(await usage()).toEqual({ protect: before.protect + 1, verify: before.verify });
  });

  it('15: a body slower than the minimum rate (64 KiB per window; 1 s here): 408 request_timeout, connection closed', async () => {
    const body = multipartBody([{ name: 'image', filename: 'a.jpg', data: JPEG }]);
    const head = `POST /api/v1/protect HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: ${MULTIPART}\r\nContent-Length: ${body.length}\r\n\r\n`;
    const drip = Array.from({ length: 40 }, (_, i) => body.subarray(i * 10, i * 10 + 10));
    const started = performance.now();
    const answer = await row(() => raw([head, ...drip], 6000, 100), 408, 'request_timeout');
    expect(performance.now() - started).toBeLessThan(4000);
    expect(answer.headers.connection).toBe('close');
  });

  // The other half of row 15: a body that keeps above the minimum rate (the
  // stall window is 20 s here) but is not complete within the request
  // timeout (1 s here). Node checks it once a second, so the cut comes
  // between 1 and 2 s. (The headers timeout must not be longer than the
  // request timeout: Node 20 then never applies the request timeout.)
  it('15: a body still arriving when the request timeout (1 s here) passes: 408 request_timeout, connection closed', async () => {
    const own = await startTestServer({ env: { OPTMARK_REQUEST_TIMEOUT: '1', OPTMARK_HEADERS_TIMEOUT: '1', OPTMARK_UPLOAD_STALL_SECONDS: '20' } });
    try {
      const on = { url: own.url, key: await own.key('pro') };
      const body = multipartBody([{ name: 'image', filename: 'a.jpg', data: JPEG }]);
      const head = `POST /api/v1/protect HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${on.key}\r\nContent-Type: ${MULTIPART}\r\nContent-Length: ${body.length}\r\n\r\n`;
      // 40 pieces 100 ms apart: 4 s to send it all.
      const drip = Array.from({ length: 40 }, (_, i) => body.subarray(i * 10, i * 10 + 10));
      const started = performance.now();
      const answer = await row(() => raw([head, ...drip], 6000, 100, own.url), 408, 'request_timeout', {}, on);
      expect(performance.now() - started).toBeLessThan(3500);
      expect(answer.headers.connection).toBe('close');
    } finally {
      await own.close();
    }
  });
});

describe('the image (rows 16-29)', () => {
  it('16: a part that says image/png carrying JPEG bytes: 200, judged JPEG', async () => {
    const answer = await row(() => post(JPEG, '/api/v1/protect', 'image/png'), 200, undefined, { protect: 1 });
    expect(answer.json.mimeType).toBe('image/jpeg');
  });

  const foreign: Array<[string, Uint8Array]> = [
    ['SVG', latin1('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="9" height="9"/>')],
    ['GIF', latin1('GIF89a\x01\x00\x01\x00\x00\x00\x00;')],
    ['TIFF', Buffer.from('49492a000800000000000000', 'hex')],
    ['HEIC', Buffer.concat([Buffer.from([0, 0, 0, 24]), latin1('ftypheic'), Buffer.alloc(12)])],
    ['4 KiB of random bytes', Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) & 0xff))],
  ];
  it.each(foreign)('17-18: %s, declared image/jpeg and named photo.jpg: 415 unsupported_image_format on both endpoints', async (_, bytes) => {
    await row(() => post(bytes, '/api/v1/protect', 'image/jpeg', {}, { filename: 'photo.jpg' }), 415, 'unsupported_image_format');
    await row(() => post(bytes, '/api/v1/verify', 'image/jpeg', {}, { filename: 'photo.jpg' }), 415, 'unsupported_image_format');
  });

  const [pngHead, pngTail] = afterIhdr(PNG);
  const webpImage = WEBP.subarray(12);
  const corrupt: Array<[string, Uint8Array]> = [
    ['19: a JPEG cut at 50 %', JPEG.subarray(0, JPEG.length >> 1)],
    ['19: a JPEG without its EOI', JPEG.subarray(0, JPEG.length - 2)],
    ['19: an APP1 length past the end', withSegments(JPEG.subarray(0, 2), segment(0xe1, Buffer.alloc(10), 60000))],
    ['20: a PNG with a bad IHDR CRC (PngSuite xhdn0g08)', corpusFile('pngsuite/xhdn0g08.png').bytes],
    ['20: a PNG with a bad IDAT CRC (PngSuite xcsn0g01)', corpusFile('pngsuite/xcsn0g01.png').bytes],
    ['21: a PNG iTXt chunk of length 0x3FFFFFFF past the end', Buffer.concat([pngHead, u32be(0x3fffffff), latin1('iTXt'), Buffer.alloc(16)])],
    ['21: a PNG with two IHDR chunks', Buffer.concat([pngHead, pngHead.subarray(8), pngTail])],
    ['22: a RIFF size larger than the file', riff([webpImage], webpImage.length + 100)],
    ['22: a RIFF size smaller than the file', riff([webpImage], webpImage.length - 4)],
    ['22: an odd RIFF size', Buffer.concat([riff([webpImage], webpImage.length + 5), Buffer.alloc(1)])],
    ['22: a VP8X canvas other than the bitstream', riff([Buffer.concat([latin1('VP8X'), Buffer.from([10, 0, 0, 0, 0, 0, 0, 0, 99, 0, 0, 99, 0, 0])]), webpImage])],
    ['23: a PNG of width 0', Buffer.concat([PNG_SIGNATURE, chunk('IHDR', Buffer.from([0, 0, 0, 0, 0, 0, 0, 1, 8, 2, 0, 0, 0])), pngTail])],
    ['23: a JPEG frame of 0x0', jpegWithFrameSize(JPEG, 0, 0)],
  ];
  it.each(corrupt)('%s: 422 corrupt_image on both endpoints', async (_, bytes) => {
    await row(() => post(bytes, '/api/v1/protect'), 422, 'corrupt_image');
    await row(() => post(bytes, '/api/v1/verify'), 422, 'corrupt_image');
  });

  // Our contract: an image whose header declares more than
  // OPTMARK_MAX_IMAGE_PIXELS (default 16383 x 16383) is refused by protect
  // and verify alike, from the header, before anything else is done with it.
  // Decoded, any of these bombs would take 400 MB or more; the server runs
  // in this process, so a decode would show in its peak RSS (getrusage's
  // maxRSS, in KiB) however soon it was freed. The plan's bound: 20 MB.
  // (The plan asks for 20 ms; timed around an HTTP call that is noise, so
  // each call is held to 1 s here, and the refusal itself to well under a
  // millisecond in test/app/image-size.test.ts.)
  it.each([
    ['a 1-bit PNG of 20000x20000 (about 50 KB)', blackPng(20_000, 20_000)],
    ['a 68-byte PNG whose header declares 100000x100000 (10^10 pixels)', headerOnlyPng(100_000, 100_000)],
    ['a JPEG whose frame says 65500x65500', jpegWithFrameSize(JPEG, 65_500, 65_500)],
  ])('24: %s: 422 image_dimensions_too_large on both endpoints, each within 1 s, no pixel decoded', async (_, bytes) => {
    const peakBefore = process.resourceUsage().maxRSS;
    for (const path of ['/api/v1/protect', '/api/v1/verify']) {
      let ms = 0;
      const answer = await row(
        async () => {
          const started = performance.now();
          const sent = await post(bytes, path);
          ms = performance.now() - started;
          return sent;
        },
        422,
        'image_dimensions_too_large',
      );
      expect(answer.json.error).toMatch(/over the limit of 268402689 pixels/);
      expect(ms, path).toBeLessThan(1000);
    }
    const peakGrowthMb = (process.resourceUsage().maxRSS - peakBefore) / 1024;
    console.info(`24: peak RSS +${peakGrowthMb.toFixed(1)} MB`);
    expect(peakGrowthMb).toBeLessThan(20);
  });

  // Between the pixel decoder's limit (OPTMARK_MAX_PIXELS, 100 MP) and
  // protect's and verify's (268 MP), an image is still marked and verified
  // from its metadata; only the fingerprint, which would decode it, passes
  // it over: it examines no block.
  it('24: a PNG of 12000x12000 (144 MP), over the decoder\'s limit and under the image limit: 200 on both endpoints, no pixel decoded', async () => {
    const bytes = blackPng(12_000, 12_000);
    const peakBefore = process.resourceUsage().maxRSS;
    const marked = await row(() => post(bytes, '/api/v1/protect'), 200, undefined, { protect: 1 });
    expect(marked.json.mimeType).toBe('image/png');
    const verified = await row(() => post(bytes, '/api/v1/verify'), 200, undefined, { verify: 1 });
    expect(verified.json.fingerprint).toEqual({ present: false, confidence: 0, blocks: 0 });
    const peakGrowthMb = (process.resourceUsage().maxRSS - peakBefore) / 1024;
    expect(peakGrowthMb).toBeLessThan(20);
  });

  // A JPEG whose header declares 100 MP and 400 scans (a scan bomb: decoded,
  // such a file takes libjpeg seconds to minutes whatever the output size)
  // is marked from its metadata and verified without decoding it.
  it('24: a progressive JPEG scan bomb (100 MP, 400 scans, 3 KB): 200 on both endpoints, the fingerprint not looked for, each within 1 s', async () => {
    const bytes = progressiveHeaders(10_000, 10_000, 400);
    for (const [path, counted] of [
      ['/api/v1/protect', { protect: 1 }],
      ['/api/v1/verify', { verify: 1 }],
    ] as const) {
      const started = performance.now();
      const answer = await row(() => post(bytes, path), 200, undefined, counted);
      expect(performance.now() - started, path).toBeLessThan(1000);
      if (path === '/api/v1/verify') expect(answer.json.fingerprint).toEqual({ present: false, confidence: 0, blocks: 0 });
    }
  });

  // The limit is the configured one, to the pixel: 64 x 64 = 4096 is taken,
  // 17 x 241 = 4097 refused, on both endpoints.
  it('24: with OPTMARK_MAX_IMAGE_PIXELS=4096, an image of 4097 pixels gets 422 image_dimensions_too_large and one of 4096 is marked and verified', async () => {
    const own = await startTestServer({ env: { OPTMARK_MAX_IMAGE_PIXELS: '4096' } });
    try {
      const on = { url: own.url, key: await own.key('pro') };
      const over = blackPng(17, 241);
      const at = blackPng(64, 64);
      for (const path of ['/api/v1/protect', '/api/v1/verify']) {
        const refused = await row(() => post(over, path, undefined, {}, { on }), 422, 'image_dimensions_too_large', {}, on);
        expect(refused.json.error).toMatch(/17x241 pixels, over the limit of 4096 pixels/);
      }
      await row(() => post(at, '/api/v1/protect', undefined, {}, { on }), 200, undefined, { protect: 1 }, on);
      await row(() => post(at, '/api/v1/verify', undefined, {}, { on }), 200, undefined, { verify: 1 }, on);
      // The shared server, on the default limit, takes the image this one refuses.
      await row(() => post(over, '/api/v1/protect'), 200, undefined, { protect: 1 });
    } finally {
      await own.close();
    }
  });

  const inJpeg = (packet: string) => withSegments(JPEG.subarray(0, 2), xmpSegment(packet), JPEG.subarray(2));
  const plainJpeg = GENERATED['baseline.jpg']!;
  const withExtended = (standard: string, ...extension: Buffer[]) => withSegments(plainJpeg.subarray(0, 2), xmpSegment(standard), ...extension, plainJpeg.subarray(2));
  const hasExtended = (guid: string) => xmpPacket(`<rdf:Description xmlns:xmpNote="http://ns.adobe.com/xmp/note/" xmpNote:HasExtendedXMP="${guid}"/>`);
  const extension = enc(xmpPacket('<rdf:Description xmlns:dc="http://purl.org/dc/elements/1.1/" dc:format="image/jpeg"/>'));
  const guid = md5Guid(extension);
  const xmp: Array<[string, Uint8Array]> = [
    ['25: a DOCTYPE with an external entity (XXE)', inJpeg(`<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><x:xmpmeta xmlns:x="adobe:ns:meta/">&xxe;</x:xmpmeta>`)],
    ['25: billion laughs', inJpeg(`<!DOCTYPE l [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]><x:xmpmeta xmlns:x="adobe:ns:meta/">&b;</x:xmpmeta>`)],
    ['26: nesting deeper than 64', inJpeg(`<x:xmpmeta xmlns:x="adobe:ns:meta/">${'<a>'.repeat(65)}${'</a>'.repeat(65)}</x:xmpmeta>`)],
    ['26: two root elements', inJpeg(`<x:xmpmeta xmlns:x="adobe:ns:meta/"/><x:xmpmeta xmlns:x="adobe:ns:meta/"/>`)],
    ['26: over the 8 MiB XMP cap (in a PNG)', bigXmpPng()],
    ['27: Extended XMP whose MD5 is not its GUID', withExtended(hasExtended(md5Guid(enc('other'))), ...extensionSegments(extension, md5Guid(enc('other'))))],
    ['27: Extended XMP parts that are not contiguous', withExtended(hasExtended(guid), extensionSegment(guid, extension.length, 0, extension.subarray(0, 40)), extensionSegment(guid, extension.length, 60, extension.subarray(60)))],
    ['27: an Extended XMP offset past its full length', withExtended(hasExtended(guid), extensionSegment(guid, extension.length, extension.length + 10, extension))],
    [
      '27: an Extended XMP offset equal to its full length (after a whole copy)',
      withExtended(hasExtended(guid), extensionSegment(guid, extension.length, 0, extension), extensionSegment(guid, extension.length, extension.length, latin1('x'))),
    ],
    ['27: a lowercase GUID', withExtended(hasExtended(guid.toLowerCase()), ...extensionSegments(extension, guid.toLowerCase()))],
  ];
  it.each(xmp)('%s: 422 invalid_xmp on both endpoints', async (_, bytes) => {
    await row(() => post(bytes, '/api/v1/protect'), 422, 'invalid_xmp');
    await row(() => post(bytes, '/api/v1/verify'), 422, 'invalid_xmp');
  });

  // Our contract: one XMP packet may hold up to 8 MiB, not the table's 1 MiB
  // (real camera files carry more: docs/errors.md).
  it('26: an XMP packet of 2 MiB (over the table\'s 1 MiB, under our 8 MiB): 200 on both endpoints, the packet kept', async () => {
    const bytes = xmpPng(2 * 1024 * 1024);
    const marked = await row(() => post(bytes, '/api/v1/protect'), 200, undefined, { protect: 1 });
    const output = Buffer.from(marked.json.imageBase64 as string, 'base64');
    expect(output.length).toBeGreaterThan(2 * 1024 * 1024);
    expect(output.includes(Buffer.from('x'.repeat(1024)))).toBe(true);
    await row(() => post(bytes, '/api/v1/verify'), 200, undefined, { verify: 1 });
  });

  // Our contract: Extended XMP whose GUID is not the one the standard packet
  // names is not part of this file's XMP (the XMP specification says readers
  // ignore it), so it is kept untouched and the file is marked.
  it('27: Extended XMP of another GUID than HasExtendedXMP is ignored: 200, and it is kept', async () => {
    const other = md5Guid(enc('unrelated'));
    const bytes = withExtended(hasExtended(guid), ...extensionSegments(extension, guid), ...extensionSegments(enc('unrelated'), other));
    const answer = await row(() => post(bytes, '/api/v1/protect'), 200, undefined, { protect: 1 });
    const output = Buffer.from(answer.json.imageBase64 as string, 'base64');
    expect(output.includes(Buffer.from(other, 'latin1'))).toBe(true);
  });

  it('28: two standard XMP packets: 422 ambiguous_xmp on protect, 200 on verify (the first is read)', async () => {
    const bytes = corpusFile('exiv2/bug1229-two-xmp.jpg').bytes;
    await row(() => post(bytes, '/api/v1/protect'), 422, 'ambiguous_xmp');
    await row(() => post(bytes, '/api/v1/verify'), 200, undefined, { verify: 1 });
  });

  it('28: a PNG with two XMP iTXt chunks: 422 ambiguous_xmp on protect, 200 on verify (the first is read)', async () => {
    const [head, tail] = afterIhdr(PNG);
    const packet = (value: string) => xmpItxt(`<rdf:Description xmlns:plus="http://ns.useplus.org/ldf/xmp/1.0/" plus:DataMining="http://ns.useplus.org/ldf/vocab/${value}"/>`);
    const bytes = Buffer.concat([head, packet('DMI-PROHIBITED'), packet('DMI-ALLOWED'), tail]);
    const refused = await row(() => post(bytes, '/api/v1/protect'), 422, 'ambiguous_xmp');
    expect(refused.json.error).toMatch(/PNG carries 2 XMP packets/);
    const verified = await row(() => post(bytes, '/api/v1/verify'), 200, undefined, { verify: 1 });
    expect(verified.json.optedOut).toBe(true);
  });

  it('28: an XMP packet that repeats a property with different values: 422 conflicting_xmp on protect, 200 on verify with a warning', async () => {
    const [head, tail] = afterIhdr(PNG);
    const bytes = Buffer.concat([head, xmpItxt('<rdf:Description xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/" photoshop:City="Lima"><photoshop:City>Cusco</photoshop:City></rdf:Description>'), tail]);
    const refused = await row(() => post(bytes, '/api/v1/protect'), 422, 'conflicting_xmp');
    expect(refused.json.error).toMatch(/^The XMP repeats photoshop:City \("Lima", "Cusco"\) with different values\./);
    const verified = await row(() => post(bytes, '/api/v1/verify?detail=full'), 200, undefined, { verify: 1 });
    expect((verified.json.details as { warnings: string[] }).warnings).toEqual([expect.stringMatching(/^the XMP packet repeats photoshop:City \(2 times\)/)]);
  });

  it.each([
    ['JPEG', JPEG],
    ['PNG', PNG],
  ])('29: a %s followed by a ZIP and HTML (a polyglot): 200, the trailing bytes kept exactly', async (_, image) => {
    const trailer = Buffer.concat([Buffer.from('504b0304140000000800', 'hex'), latin1('<html><script>alert(1)</script></html>')]);
    const answer = await row(() => post(Buffer.concat([image, trailer]), '/api/v1/protect'), 200, undefined, { protect: 1 });
    const output = Buffer.from(answer.json.imageBase64 as string, 'base64');
    expect(output.subarray(output.length - trailer.length).equals(trailer)).toBe(true);
    expect(answer.headers['x-content-type-options']).toBe('nosniff');
  });

  // Our contract (docs/formats.md): a WebP's RIFF size must be the file's
  // length - 8, as libwebp requires, so a WebP cannot carry data after its
  // RIFF end: bytes appended to one make its RIFF size lie, which is corrupt.
  it('29: a WebP followed by a ZIP and HTML (a polyglot): 422 corrupt_image on both endpoints (the RIFF size no longer matches)', async () => {
    const trailer = Buffer.concat([Buffer.from('504b0304140000000800', 'hex'), latin1('<html><script>alert(1)</script></html>')]);
    const bytes = Buffer.concat([WEBP, trailer]);
    for (const path of ['/api/v1/protect', '/api/v1/verify']) {
      const answer = await row(() => post(bytes, path), 422, 'corrupt_image');
      expect(answer.json.error).toMatch(/RIFF header declares \d+ bytes but the file has/);
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
    }
    // The same WebP without the trailer is taken: the refusal is the trailer's.
    await row(() => post(WEBP, '/api/v1/protect'), 200, undefined, { protect: 1 });
  });
});

describe('the account and the server (rows 30-33)', () => {
  it('30: the monthly limit reached: 429 quota_exceeded with Retry-After, nothing counted', async () => {
    const own = await startTestServer({ paidPlanLimits: { protectPerMonth: 1 } });
    try {
      const k = await own.key('pro');
      const send = () => fetch(`${own.url}/api/v1/protect`, { method: 'POST', headers: { Authorization: `Bearer ${k}` }, body: form(JPEG) });
      expect((await send()).status).toBe(200);
      const refused = await send();
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(refused.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await refused.json()).toEqual({ code: 'quota_exceeded', error: expect.stringMatching(/.{10}/), requestId: expect.any(String) });
      const report = (await (await fetch(`${own.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${k}` } })).json()) as { protect: { used: number } };
      expect(report.protect.used).toBe(1);
      expect((await fetch(`${own.url}/healthz`)).status).toBe(200);
    } finally {
      await own.close();
    }
  });

  // Our contract: no idempotency keys in v1 (docs/errors.md). The header is
  // ignored: a retry is a new call and counts, it is never refused for it.
  it('31: an Idempotency-Key header makes a repeat count nothing; the same key with another image is 422 idempotency_key_reused', async () => {
    await row(() => post(JPEG, '/api/v1/protect', 'image/jpeg', { 'Idempotency-Key': 'same' }), 200, undefined, { protect: 1 });
    await row(() => post(JPEG, '/api/v1/protect', 'image/jpeg', { 'Idempotency-Key': 'same' }), 200, undefined, { protect: 0 });
    await row(() => post(PNG, '/api/v1/protect', 'image/png', { 'Idempotency-Key': 'same' }), 422, 'idempotency_key_reused');
    await row(() => post(PNG, '/api/v1/protect', 'image/png'), 200, undefined, { protect: 1 });
  });

  // Row 32 (the database unreachable or full: 503) needs a database to take
  // away: test/process/db-outage.test.ts here, and `npm run faults` for
  // PostgreSQL stopped under load and the embedded database out of space.
  // Row 33 (over capacity: 503 server_busy): test/http/admission.test.ts.
});

describe('paths the router refuses before any route', () => {
  it('a path whose "%" escapes do not decode, or with a part of over 1,024 characters: our JSON with the request id, never the framework\'s own body', async () => {
    const answer = async (path: string, headers: Record<string, string> = {}) => {
      const response = await fetch(`${t.url}${path}`, { headers: { Authorization: `Bearer ${key}`, ...headers } });
      return { status: response.status, body: (await response.json()) as Record<string, unknown>, id: response.headers.get('request-id'), nosniff: response.headers.get('x-content-type-options') };
    };
    const bad = await answer('/api/v1/records/%zz', { 'Request-Id': 'trace-bad-url-1' });
    expect(bad).toMatchObject({ status: 400, id: 'trace-bad-url-1', nosniff: 'nosniff' });
    expect(bad.body).toEqual({ error: expect.stringContaining('not a valid URL'), code: 'malformed_request', requestId: 'trace-bad-url-1' });
    // Long, but routed: the route's own answers.
    expect((await answer(`/api/v1/records/${'a'.repeat(101)}`)).body.code).toBe('invalid_sha256');
    expect((await answer(`/api/v1/scans/${'x'.repeat(150)}`)).body.code).toBe('scan_not_found');
    const long = await answer(`/api/v1/scans/${'x'.repeat(1100)}`);
    expect(long.status).toBe(404);
    expect(long.body).toMatchObject({ code: 'not_found', requestId: expect.any(String) });
    expect(long.id).toBe(long.body.requestId);
  });
});

function form(bytes: Uint8Array): FormData {
  const f = new FormData();
  f.append('image', new Blob([bytes]), 'a.bin');
  return f;
}



/** An uncompressed XMP iTXt chunk holding a packet of these descriptions. */
function xmpItxt(descriptions: string): Buffer {
  return chunk('iTXt', Buffer.concat([latin1('XML:com.adobe.xmp\0\0\0\0\0'), enc(xmpPacket(descriptions))]));
}

/** The PNG with an XMP packet of a description `fill` bytes long. */
function xmpPng(fill: number): Buffer {
  const [head, tail] = afterIhdr(PNG);
  return Buffer.concat([head, xmpItxt(`<rdf:Description xmlns:dc="http://purl.org/dc/elements/1.1/" dc:description="${'x'.repeat(fill)}"/>`), tail]);
}

function bigXmpPng(): Buffer {
  return xmpPng(9 * 1024 * 1024);
}

