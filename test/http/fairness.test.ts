/**
 * Fairness between accounts. One account may use every place in flight
 * while no one else needs one; once another account needs a place, the
 * first holds at most a quarter of them: its newest upload beyond that
 * share gives its place to the other account (503 server_busy, Retry-After,
 * connection closed, nothing counted), and its new calls get 429 for as
 * long as the other keeps needing places. And an upload must average a
 * minimum rate (32 KiB/s by default) over its whole body once 10 s have
 * passed, so that a trickle cannot hold a place for the whole request
 * timeout.
 */
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { corpusFile } from '../support/corpus.js';
import { HeldUpload, multipartBody, pacedExchange, parseResponse, rawPost } from '../support/raw-http.js';
import { postImage, startTestServer, type TestServer } from '../support/server.js';

const JPEG = corpusFile('exiftool/XMP.jpg').bytes;
const BODY = multipartBody([{ name: 'image', filename: 'a.jpg', data: JPEG }]);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const used = async (t: TestServer, name: string) => (await t.server.admin.usage(name)).protect.used;

describe('one account holding every place with slow uploads (8 places in all, a share of 2)', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ env: { OPTMARK_MAX_IN_FLIGHT: '8', OPTMARK_MAX_IN_FLIGHT_PER_KEY: '8' } });
  });
  afterAll(async () => t?.close());

  it('another account is served at once; the newest slow upload gives up its place; the first account gets 429 past its share while the other keeps coming, and all places again once it stops', async () => {
    const hog = await t.key('pro', 'hog');
    const other = await t.key('pro', 'other');
    // 8 uploads that send their headers and first bytes, then wait: every place is the hog's.
    const held = Array.from({ length: 8 }, () => new HeldUpload(t.url, hog, BODY));
    await expect.poll(() => used(t, 'hog'), { timeout: 5000 }).toBe(8);

    // The other account is served, not refused.
    const served = await postImage(t.url, other, JPEG);
    expect(served.status).toBe(200);
    // The hog's newest upload (whichever the server admitted last) was answered 503 server_busy, its unit
    // given back and its connection closed; the others wait on.
    const [index, bumped] = await Promise.race(held.map((upload, i) => upload.answered.then((answer) => [i, answer] as const)));
    expect(bumped.status).toBe(503);
    expect(bumped.headers['retry-after']).toBe('1');
    expect(bumped.headers.connection).toBe('close');
    expect(JSON.parse(bumped.body)).toMatchObject({ code: 'server_busy' });
    expect(await used(t, 'hog')).toBe(7);

    // Within the second after the other account needed a place, the hog (7 held, share 2) gets 429 for a new call.
    const refused = await postImage(t.url, hog, JPEG);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ code: 'too_many_requests', error: expect.stringMatching(/This account already has 2 calls in progress while other accounts wait/) });

    // The held uploads finish and are counted.
    const finished = await Promise.all(held.filter((_, i) => i !== index).map((upload) => upload.finish()));
    expect(finished.map((r) => r.status)).toEqual(Array.from({ length: 7 }, () => 200));
    expect(await used(t, 'hog')).toBe(7);
    expect(await used(t, 'other')).toBe(1);

    // A second after the last need, nothing is kept idle: the hog may take every place again.
    await sleep(1100);
    const again = Array.from({ length: 8 }, () => new HeldUpload(t.url, hog, BODY));
    await expect.poll(() => used(t, 'hog'), { timeout: 5000 }).toBe(15);
    expect((await Promise.all(again.map((upload) => upload.finish()))).map((r) => r.status)).toEqual(Array.from({ length: 8 }, () => 200));
  });

  it('with no account holding more than its share, nothing is given away: a newcomer gets 503 server_busy', async () => {
    const accounts = [await t.key('pro'), await t.key('pro'), await t.key('pro'), await t.key('pro')];
    const held = accounts.flatMap((key) => [new HeldUpload(t.url, key, BODY), new HeldUpload(t.url, key, BODY)]);
    await sleep(300);
    const late = await postImage(t.url, await t.key('pro'), JPEG);
    expect(late.status).toBe(503);
    expect(await late.json()).toMatchObject({ code: 'server_busy' });
    expect((await Promise.all(held.map((upload) => upload.finish()))).map((r) => r.status)).toEqual(Array.from({ length: 8 }, () => 200));
  });
});

describe('the minimum average upload rate (OPTMARK_MIN_UPLOAD_RATE, 32 KiB/s by default)', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(async () => t?.close());

  it('an upload averaging 8 KiB/s gets 408 once 10 s have passed; one averaging 48 KiB/s over 12 s is served', async () => {
    const key = await t.key('pro', 'rates');
    // A PNG of noise, which does not compress: about 580 KB of body.
    const noise = Buffer.alloc(440 * 440 * 3);
    for (let i = 0; i < noise.length; i++) noise[i] = (i * 2654435761) >>> 24;
    const png = await sharp(noise, { raw: { width: 440, height: 440, channels: 3 } }).png({ compressionLevel: 0 }).toBuffer();
    const request = (bytes: Uint8Array) =>
      rawPost('/api/v1/protect', { Authorization: `Bearer ${key}`, 'Content-Type': 'multipart/form-data; boundary=optmark-boundary' }, multipartBody([{ name: 'image', filename: 'noise.png', data: bytes }]));
    const slowBody = request(png);
    const steadyBody = request(png);
    expect(steadyBody.length).toBeGreaterThan(48 * 1024 * 11);
    const perSecond = (rate: number) => (ms: number) => Math.floor((rate * ms) / 1000) + 1024;
    const [slow, steady] = await Promise.all([
      pacedExchange(t.url, slowBody, perSecond(8 * 1024), { tickMs: 100, giveUpMs: 30_000 }),
      pacedExchange(t.url, steadyBody, perSecond(Math.ceil(steadyBody.length / 12)), { tickMs: 100, giveUpMs: 30_000 }),
    ]);
    const slowAnswer = parseResponse(slow.text);
    expect(slowAnswer.status).toBe(408);
    expect(JSON.parse(slowAnswer.body)).toMatchObject({ code: 'request_timeout', error: expect.stringMatching(/too slow: \d+ bytes in 1[01] s, under the minimum average of 32768 bytes a second/) });
    expect(slow.closedByServer).toBe(true);
    expect(slow.ms).toBeGreaterThan(9_500);
    expect(slow.ms).toBeLessThan(14_000);
    expect(slow.sent).toBeLessThan(slowBody.length);
    expect(parseResponse(steady.text).status).toBe(200);
    expect(steady.sent).toBe(steadyBody.length);
    expect(await used(t, 'rates')).toBe(1);
  });
});
