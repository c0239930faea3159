/**
 * Idempotency-Key on the API's two image calls, on both back ends: a repeat
 * gets the first answer again (protect: the same bytes; the file name it
 * suggests made from the name sent) and counts nothing, even at the month's
 * limit, where it still holds a place in flight; a repeat of a refusal is the same refusal; a first call
 * whose client went away leaves the key free; the same key with another
 * image is 422; keys are per account and per route; two at once count once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { afterIhdr, chunk, enc, latin1, xmpPacket } from '../support/build.js';
import { generatedImages } from '../support/generated.js';
import { multipartBody, rawExchange, rawPost } from '../support/raw-http.js';
import { BACKENDS, startTestServer, type TestServer } from '../support/server.js';

const generated = await generatedImages();
const JPEG = generated.find((g) => g.name === 'baseline.jpg')!.bytes;
const OTHER = generated.find((g) => g.name.endsWith('.png'))!.bytes;

/** A PNG whose XMP (6 MB of character references) takes protect a few hundred milliseconds: a call still at work when its client leaves. */
function slowPng(): Buffer {
  const [head, tail] = afterIhdr(generated.find((g) => g.name === 'rgb8.png')!.bytes);
  const packet = xmpPacket(`<rdf:Description xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:source>${'&#60;&#97;&#62;'.repeat(333_334)}</dc:source></rdf:Description>`);
  return Buffer.concat([head, chunk('iTXt', Buffer.concat([latin1('XML:com.adobe.xmp\0\0\0\0\0'), enc(packet)])), tail]);
}

async function call(t: TestServer, key: string, bytes: Uint8Array, path: string, idempotencyKey?: string, filename = 'photo.jpg') {
  const form = new FormData();
  form.append('image', new Blob([bytes], { type: 'application/octet-stream' }), filename);
  const response = await fetch(`${t.url}${path}`, { method: 'POST', headers: { Authorization: `Bearer ${key}`, ...(idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {}) }, body: form });
  return {
    status: response.status,
    replayed: response.headers.get('idempotent-replayed'),
    remaining: response.headers.get('ratelimit'),
    json: (await response.json()) as Record<string, unknown>,
  };
}

describe.each(BACKENDS)('Idempotency-Key on %s', (backend) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ backend, paidPlanLimits: { protectPerMonth: 2 } });
  });
  afterAll(() => t?.close());

  it('a repeated protect gets the same bytes and counts once, also after the month\'s allowance is used up', async () => {
    const key = await t.key('pro', `repeat-${backend}`);
    const first = await call(t, key, JPEG, '/api/v1/protect', 'order-1');
    expect(first.status).toBe(200);
    expect(first.replayed).toBeNull();
    // A second, slower in coming, whose tag would say a later second: the same bytes all the same.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const again = await call(t, key, JPEG, '/api/v1/protect', 'order-1');
    expect(again.status).toBe(200);
    expect(again.replayed).toBe('true');
    expect(again.json).toEqual(first.json);
    // The first answer says what is left of the month; a replayed one says nothing of it.
    expect(first.remaining).not.toBeNull();
    expect(again.remaining).toBeNull();
    expect((await t.server.admin.usage(`repeat-${backend}`)).protect.used).toBe(1);
    // The allowance used up by another call: the repeat is still answered, and counts nothing.
    expect((await call(t, key, OTHER, '/api/v1/protect', 'order-2')).status).toBe(200);
    expect((await call(t, key, OTHER, '/api/v1/protect')).status).toBe(429);
    // Sent under another file name: the first answer all the same, with the name it suggests made from the name sent.
    const late = await call(t, key, JPEG, '/api/v1/protect', 'order-1', 'renamed.jpg');
    expect(late.status).toBe(200);
    expect(late.json).toEqual({ ...first.json, filename: 'renamed-optout.jpg' });
    expect((await t.server.admin.usage(`repeat-${backend}`)).protect.used).toBe(2);
    // A new key at the limit is refused as usual.
    expect((await call(t, key, JPEG, '/api/v1/protect', 'order-3')).status).toBe(429);
  });

  it('the same key with another image is 422 idempotency_key_reused; keys are per route and per account; a malformed key is 400', async () => {
    const key = await t.key('pro', `reuse-${backend}`);
    expect((await call(t, key, JPEG, '/api/v1/verify', 'k')).status).toBe(200);
    const reused = await call(t, key, OTHER, '/api/v1/verify', 'k');
    expect(reused.status).toBe(422);
    expect(reused.json.code).toBe('idempotency_key_reused');
    // The same key on protect, and on another account: first calls of their own.
    expect((await call(t, key, OTHER, '/api/v1/protect', 'k')).replayed).toBeNull();
    const other = await t.key('pro', `reuse-other-${backend}`);
    expect((await call(t, other, OTHER, '/api/v1/verify', 'k')).status).toBe(200);
    const bad = await call(t, key, JPEG, '/api/v1/verify', 'x'.repeat(256));
    expect(bad.status).toBe(400);
    expect(bad.json.code).toBe('invalid_option');
    expect((await t.server.admin.usage(`reuse-${backend}`)).verify.used).toBe(1);
    // Without a valid API key, the key is what is refused: 401 before the Idempotency-Key is looked at.
    for (const who of ['', `omk_${'x'.repeat(40)}`]) {
      const refused = await call(t, who, JPEG, '/api/v1/verify', 'x'.repeat(256));
      expect([refused.status, refused.json.code]).toEqual([401, 'invalid_api_key']);
    }
  });

  it('a refusal repeated is the same refusal; two calls with one key at once count once', async () => {
    const key = await t.key('pro', `once-${backend}`);
    const broken = JPEG.subarray(0, 300);
    const refused = await call(t, key, broken, '/api/v1/verify', 'broken');
    expect(refused.status).toBe(422);
    const again = await call(t, key, broken, '/api/v1/verify', 'broken');
    expect(again.status).toBe(422);
    expect(again.replayed).toBe('true');
    expect(again.json.code).toBe(refused.json.code);
    expect(again.json.error).toBe(refused.json.error);

    const both = await Promise.all([call(t, key, JPEG, '/api/v1/verify', 'twice'), call(t, key, JPEG, '/api/v1/verify', 'twice')]);
    expect(both.map((b) => b.status)).toEqual([200, 200]);
    expect(both[0]!.json).toEqual(both[1]!.json);
    expect((await t.server.admin.usage(`once-${backend}`)).verify.used).toBe(1);
  });

  it('a first call whose client went away before its answer leaves the key free: the retry runs as a new call, counted once', async () => {
    const key = await t.key('pro', `gone-${backend}`);
    const body = multipartBody([{ name: 'image', filename: 'slow.png', type: 'image/png', data: slowPng() }]);
    const headers = { Authorization: `Bearer ${key}`, 'Content-Type': 'multipart/form-data; boundary=optmark-boundary', 'Idempotency-Key': 'left' };
    // The upload sent whole, then the connection closed while protect reads the long XMP.
    const left = await rawExchange(t.url, [rawPost('/api/v1/protect', headers, body)], 250);
    expect(left.text).toBe('');
    const retry = await call(t, key, slowPng(), '/api/v1/protect', 'left');
    expect(retry.status).toBe(200);
    expect(retry.replayed).toBeNull();
    expect((await t.server.admin.usage(`gone-${backend}`)).protect.used).toBe(1);
    // Now answered: a repeat is a replay.
    expect((await call(t, key, slowPng(), '/api/v1/protect', 'left')).replayed).toBe('true');
  });

  it('a repeat whose connection closed while it waited for the first call, which its client left, leaves the key free too', async () => {
    const key = await t.key('pro', `gone-waiting-${backend}`);
    const body = multipartBody([{ name: 'image', filename: 'slow.png', type: 'image/png', data: slowPng() }]);
    const headers = { Authorization: `Bearer ${key}`, 'Content-Type': 'multipart/form-data; boundary=optmark-boundary', 'Idempotency-Key': 'waited' };
    // The first call's client leaves while protect reads the long XMP; the repeat, sent meanwhile, waits for it
    // and leaves too. When the first lets the key go, the repeat takes it up on a connection already closed.
    const first = rawExchange(t.url, [rawPost('/api/v1/protect', headers, body)], 250);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const repeat = rawExchange(t.url, [rawPost('/api/v1/protect', headers, body)], 100);
    expect((await first).text).toBe('');
    expect((await repeat).text).toBe('');
    const retry = await call(t, key, slowPng(), '/api/v1/protect', 'waited');
    expect(retry.json).toMatchObject({ sha256: expect.any(String) });
    expect(retry.status).toBe(200);
    expect(retry.replayed).toBeNull();
    expect((await t.server.admin.usage(`gone-waiting-${backend}`)).protect.used).toBe(1);
  });
});

// The admission of repeats is the same code on both back ends: one is enough here.
describe('repeats at the limit, on pglite', () => {
  it("repeats at the month's limit still hold places in flight: past the key's cap they are 429 too_many_requests, not free work", async () => {
    const capped = await startTestServer({ env: { OPTMARK_MAX_IN_FLIGHT_PER_KEY: '1' }, paidPlanLimits: { protectPerMonth: 1 } });
    try {
      const key = await capped.key('pro', 'capped');
      const slow = slowPng();
      expect((await call(capped, key, slow, '/api/v1/protect', 'once')).status).toBe(200);
      expect((await call(capped, key, OTHER, '/api/v1/protect')).status).toBe(429);
      // Three repeats at once of a call that returned 200, each a few hundred milliseconds of work: one place.
      const repeats = await Promise.all([1, 2, 3].map(() => call(capped, key, slow, '/api/v1/protect', 'once')));
      const statuses = repeats.map((r) => r.status).sort();
      expect(statuses[0]).toBe(200);
      expect(repeats.filter((r) => r.status === 429).map((r) => r.json.code)).toContain('too_many_requests');
      expect((await capped.server.admin.usage('capped')).protect.used).toBe(1);
    } finally {
      await capped.close();
    }
  });
});
