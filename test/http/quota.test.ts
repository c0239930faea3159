/**
 * Monthly limits: exact under concurrency on both back ends, failures never
 * count, and the month rolls over on the calendar (UTC), with an injected clock.
 */
import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { keyCredential } from '../../src/app/api-access.js';
import { generatedImages } from '../support/generated.js';
import { pngWithLongXmp } from '../support/build.js';
import { HeldUpload, multipartBody } from '../support/raw-http.js';
import { BACKENDS, postImage, startTestServer, type TestServer } from '../support/server.js';

/** These tests are about counting: admission (test/http/admission.test.ts) lets all 128 held uploads in. */
const ADMIT_ALL = { OPTMARK_MAX_IN_FLIGHT_PER_KEY: '128', OPTMARK_MAX_IN_FLIGHT: '256' };

const JPEG = (await generatedImages()).find((g) => g.name === 'baseline.jpg')!.bytes;
const CORRUPT = JPEG.subarray(0, JPEG.length - 40);

/** Run `total` calls with `concurrency` clients; return the statuses in call order. */
async function hammer(total: number, concurrency: number, call: (i: number) => Promise<Response>): Promise<number[]> {
  const statuses: number[] = new Array(total);
  let next = 0;
  const client = async () => {
    for (let i = next++; i < total; i = next++) {
      const response = await call(i);
      await response.arrayBuffer();
      statuses[i] = response.status;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, client));
  return statuses;
}

const count = (statuses: number[], status: number) => statuses.filter((s) => s === status).length;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe.each(BACKENDS)('quota on %s', (backend) => {
  it('150 protect calls, 128 of them holding their reservations at once, a limit of 100: exactly 100 succeed and the counter reads 100', async () => {
    server = await startTestServer({ backend, paidPlanLimits: { protectPerMonth: 100 }, env: ADMIT_ALL });
    const name = `race-${backend}`;
    const key = await server.key('lifetime', name);
    const used = async () => (await server!.server.admin.usage(name)).protect.used;
    // Uploads that stop after their first bytes: each is admitted and reserves
    // its unit, then waits, so that 128 reservations are open at once. A limit
    // check that looked only at finished calls would let all of them in.
    const body = multipartBody([{ name: 'image', filename: 'a.jpg', data: JPEG }]);
    const held = Array.from({ length: 128 }, () => new HeldUpload(server!.url, key, body));
    // Every one has been judged: 100 reserved (the counter counts them), 28 refused.
    await expect.poll(used, { timeout: 10_000 }).toBe(100);
    // The 28 refused are answered while every upload is still held (however long a loaded machine takes to say so); the 100 are not.
    const early: number[] = [];
    for (const upload of held) upload.answered.then((r) => early.push(r.status), () => {});
    await expect.poll(() => early.length, { timeout: 15_000 }).toBe(28);
    expect(count(early, 429)).toBe(28);
    const heldStatuses = (await Promise.all(held.map((upload) => upload.finish()))).map((r) => r.status);
    expect(count(heldStatuses, 200)).toBe(100);
    expect(count(heldStatuses, 429)).toBe(28);
    // The rest, 64 clients at a time, find the limit reached.
    const rest = await hammer(22, 64, () => postImage(server!.url, key, JPEG));
    expect(count(rest, 429)).toBe(22);
    const usage = await server.server.admin.usage(name);
    expect(usage.protect).toEqual({ used: 100, limit: 100, remaining: 0 });
    expect(usage.verify.used).toBe(0);
  });

  it('a refusal while calls still running hold the last units says so, in numbers; once they are done the refusal is the plain one', async () => {
    server = await startTestServer({ backend, paidPlanLimits: { protectPerMonth: 2 } });
    const key = await server.key('pro', `held-${backend}`);
    const body = multipartBody([{ name: 'image', filename: 'a.jpg', data: JPEG }]);
    expect((await postImage(server.url, key, JPEG)).status).toBe(200);
    const held = new HeldUpload(server.url, key, body);
    await expect.poll(async () => (await server!.server.admin.usage(`held-${backend}`)).protect.used, { timeout: 10_000 }).toBe(2);
    const refused = await postImage(server.url, key, JPEG);
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: string }).error).toMatch(/^The monthly protect limit of 2 calls is reached, 1 of them by calls still running \(a call that fails gives its unit back\); it resets at /);
    expect((await held.finish()).status).toBe(200);
    const plain = await postImage(server.url, key, JPEG);
    expect(((await plain.json()) as { error: string }).error).toMatch(/^The monthly protect limit of 2 calls is reached; it resets at /);
  });

  it('calls that fail under concurrency give their unit back: the counter equals the successes', async () => {
    server = await startTestServer({ backend, paidPlanLimits: { verifyPerMonth: 100 }, env: ADMIT_ALL });
    const key = await server.key('pro', `mixed-${backend}`);
    const statuses = await hammer(150, 64, (i) => postImage(server!.url, key, i % 3 === 0 ? CORRUPT : JPEG, { path: '/api/v1/verify' }));
    expect(statuses.every((s) => s === 200 || s === 422 || s === 429)).toBe(true);
    expect(count(statuses, 422) + count(statuses, 429)).toBeGreaterThanOrEqual(50);
    // The usage read counts units still reserved (in flight) with the settled ones, so this also says none is left reserved.
    const used = (await server.server.admin.usage(`mixed-${backend}`)).verify.used;
    expect(used).toBe(count(statuses, 200));
    expect(used).toBeLessThanOrEqual(100);
    if (backend === 'postgres') {
      // PostgreSQL also keeps each reservation as a row until it is settled (a 200's in a batch
      // written a few milliseconds after its answer): none is left.
      const client = new pg.Client({ connectionString: server.databaseUrl });
      await client.connect();
      try {
        const open = async () => (await client.query<{ n: number }>('select count(*)::int as n from reservations')).rows[0]!.n;
        await expect.poll(open, { timeout: 5000 }).toBe(0);
      } finally {
        await client.end();
      }
    }
  });
});

describe('the calendar month (UTC), with an injected clock', () => {
  it('rolls over at midnight on the 1st, also across a year', async () => {
    const clock = { time: new Date('2026-12-31T23:59:58.500Z'), now: () => clock.time };
    server = await startTestServer({ clock, paidPlanLimits: { protectPerMonth: 2 } });
    const key = await server.key('pro', 'calendar');

    expect((await postImage(server.url, key, JPEG)).status).toBe(200);
    expect((await postImage(server.url, key, JPEG)).status).toBe(200);
    const refused = await postImage(server.url, key, JPEG);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('2');
    expect(await refused.json()).toMatchObject({ code: 'quota_exceeded', error: expect.stringContaining('2027-01-01T00:00:00.000Z') });
    expect(refused.headers.get('ratelimit')).toBe('"protect";r=0;t=2');

    clock.time = new Date('2027-01-01T00:00:00.000Z');
    const renewed = await postImage(server.url, key, JPEG);
    expect(renewed.status).toBe(200);
    expect(renewed.headers.get('ratelimit-policy')).toBe(`"protect";q=2;w=${31 * 86400}`);
    const usage = (await (await fetch(`${server.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } })).json()) as Record<string, unknown>;
    expect(usage).toEqual({
      protect: { used: 1, limit: 2, remaining: 1 },
      verify: { used: 0, limit: 50000, remaining: 50000 },
      resetsAt: '2027-02-01T00:00:00.000Z',
    });
  });

  it('a limit of 0 refuses every call', async () => {
    server = await startTestServer({ paidPlanLimits: { verifyPerMonth: 0 } });
    const key = await server.key('pro');
    expect((await postImage(server.url, key, JPEG, { path: '/api/v1/verify' })).status).toBe(429);
  });

  it('PostgreSQL: gives back the units of calls whose server is gone (a crash) once it has not renewed its lease for the reservation TTL', async () => {
    const clock = { time: new Date('2026-06-10T12:00:00Z'), now: () => clock.time };
    const crashed = await startTestServer({ backend: 'postgres', clock, env: { OPTMARK_RESERVATION_TTL: '300' } });
    try {
      await crashed.key('pro', 'crashed');
      // Reserve as a request would, and never settle: what a killed process leaves (its lease, renewed at 12:00, then never again).
      const issued = await crashed.server.admin.issueKey('crashed');
      await crashed.server.access.open(keyCredential(issued.key), 'protect');
      expect((await crashed.server.admin.usage('crashed')).protect.used).toBe(1);
      await crashed.server.close();

      // Another server on the same database sweeps.
      const later = { time: new Date('2026-06-10T12:04:00Z'), now: () => later.time };
      server = await startTestServer({ backend: 'postgres', databaseUrl: crashed.databaseUrl, clock: later, env: { OPTMARK_RESERVATION_TTL: '300' } });
      expect(await server.server.access.sweep(300)).toBe(0);
      later.time = new Date('2026-06-10T12:05:01Z');
      expect(await server.server.access.sweep(300)).toBe(1);
      expect((await server.server.admin.usage('crashed')).protect.used).toBe(0);
    } finally {
      // The server on its database first, then the one that made it (which drops it, and removes its data directory).
      await server?.close();
      server = undefined;
      await crashed.close();
    }
  });

  it('embedded: counts what returned 200 across a restart, and nothing of calls that never finished', async () => {
    const first = await startTestServer();
    const dataDir = first.dataDir;
    await first.key('pro', 'restart');
    const issued = await first.server.admin.issueKey('restart');
    expect((await postImage(first.url, issued.key, JPEG)).status).toBe(200);
    // A call still running when the process goes away: reserved, never settled.
    await first.server.access.open(keyCredential(issued.key), 'protect');
    expect((await first.server.admin.usage('restart')).protect.used).toBe(2);
    await first.server.close();

    server = await startTestServer({ dataDir });
    expect((await server.server.admin.usage('restart')).protect.used).toBe(1);
    expect((await postImage(server.url, issued.key, JPEG)).status).toBe(200);
    expect((await server.server.admin.usage('restart')).protect.used).toBe(2);
    await server.close();
    server = undefined;
    rmSync(dataDir, { recursive: true, force: true });
  });
});

describe('PostgreSQL: a call that outlives the reservation TTL', () => {
  const BODY = multipartBody([{ name: 'image', filename: 'a.jpg', data: JPEG }]);
  const statuses: number[] = [];

  it('is never given back while its server lives: with a limit of 1, a second call is refused, and the count equals the 200s', async () => {
    const clock = { time: new Date('2026-06-10T12:00:00Z'), now: () => clock.time };
    server = await startTestServer({ backend: 'postgres', clock, env: { OPTMARK_PROTECT_LIMIT: '1', OPTMARK_RESERVATION_TTL: '300' } });
    const key = await server.key('pro', 'slow');
    // A call whose unit is reserved and which runs on (its upload held open)...
    const slow = new HeldUpload(server.url, key, BODY);
    await expect.poll(async () => (await server!.server.admin.usage('slow')).protect.used).toBe(1);
    // ... past the TTL, and the periodic sweep runs.
    clock.time = new Date('2026-06-10T12:10:00Z');
    expect(await server.server.access.sweep(300)).toBe(0);
    const second = await postImage(server.url, key, JPEG);
    statuses.push(second.status);
    expect(second.status).toBe(429);
    statuses.push((await slow.finish()).status);
    expect(statuses).toEqual([429, 200]);
    await expect.poll(async () => (await server!.server.admin.usage('slow')).protect.used).toBe(1);
  });

  it('swept by another server that judged its server gone, it is counted again when it returns 200', async () => {
    const first = await startTestServer({ backend: 'postgres', env: { OPTMARK_PROTECT_LIMIT: '10', OPTMARK_RESERVATION_TTL: '300' } });
    try {
      const key = await first.key('pro', 'judged');
      const call = new HeldUpload(first.url, key, BODY);
      await expect.poll(async () => (await first.server.admin.usage('judged')).protect.used).toBe(1);
      // A second server whose clock runs 400 s ahead (more than the TTL) finds the first one's lease
      // run out, and its sweep at start gives the unit back.
      const ahead = { now: () => new Date(Date.now() + 400_000) };
      server = await startTestServer({ backend: 'postgres', databaseUrl: first.databaseUrl, clock: ahead, env: { OPTMARK_RESERVATION_TTL: '300' } });
      expect((await first.server.admin.usage('judged')).protect.used).toBe(0);
      // Given back once: a second sweep finds nothing more to give.
      expect(await server.server.access.sweep(300)).toBe(0);
      // The call was still running: it returns 200, and its commit counts it again.
      expect((await call.finish()).status).toBe(200);
      await expect.poll(async () => (await first.server.admin.usage('judged')).protect.used, { timeout: 5000 }).toBe(1);
    } finally {
      await server?.close();
      server = undefined;
      await first.close();
    }
  });
});

describe("a call's work after its body: at most the request timeout", () => {
  it('a verify whose work outlasts it is answered 503 service_unavailable at that time, its unit given back', async () => {
    server = await startTestServer({ env: { OPTMARK_REQUEST_TIMEOUT: '1', OPTMARK_HEADERS_TIMEOUT: '1', OPTMARK_RESERVATION_TTL: '3' } });
    const key = await server.key('pro', 'late');
    // 8 MB of XMP markup: about a second or more of reading on the worker pool, several in parallel on two threads.
    const long = pngWithLongXmp(8_000_000, false);
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: 4 }, () => postImage(server!.url, key, long, { path: '/api/v1/verify' })));
    const statuses = answers.map((a) => a.status);
    const bodies = (await Promise.all(answers.map((a) => a.json()))) as Array<{ code?: string; error?: string }>;
    const late = bodies.filter((b) => b.code === 'service_unavailable');
    expect(late.length, JSON.stringify(statuses)).toBeGreaterThan(0);
    expect(late[0]!.error).toMatch(/could not be finished within 1 s/);
    expect(answers.find((a) => a.status === 503)!.headers.get('retry-after')).toBe('5');
    // Answered at the deadline, not when the work would have ended.
    expect(performance.now() - started).toBeLessThan(10_000);
    expect((await server.server.admin.usage('late')).verify.used).toBe(statuses.filter((s) => s === 200).length);
  });
});
