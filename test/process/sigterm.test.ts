/**
 * SIGTERM under load: uploads in flight finish with 200, new connections are
 * refused at once, and the process exits 0 within seconds, its data
 * directory unlocked.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshDataDir } from '../support/server.js';
import { firstStartKey, killAll, sleep, startServe } from './support.js';

let dataDir: string;
let big: Buffer;

beforeAll(async () => {
  dataDir = freshDataDir();
  // Noise compresses badly: a 1500x1500 JPEG of it is about 3 MB.
  big = await sharp(randomBytes(1500 * 1500 * 3), { raw: { width: 1500, height: 1500, channels: 3 } }).jpeg({ quality: 100 }).toBuffer();
});
afterAll(async () => {
  await killAll();
  rmSync(dataDir, { recursive: true, force: true });
});

interface Upload {
  /** Resolves with the answer; rejects if the connection fails. */
  readonly done: Promise<{ status: number; body: string }>;
  settled: boolean;
}

/** A multipart upload of `bytes` written in `chunks` pieces, one every `everyMs` ms, on its own connection. */
function slowUpload(url: string, key: string, bytes: Buffer, chunks: number, everyMs: number): Upload {
  const boundary = `----optmark${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="big.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(
      `${url}/api/v1/protect`,
      {
        method: 'POST',
        agent: false,
        headers: {
          Authorization: `Bearer ${key}`,
          'Content-Type': `multipart/form-data; boundary=${boundary}`,
          'Content-Length': String(head.length + bytes.length + tail.length),
        },
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (part: Buffer) => parts.push(part));
        res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(parts).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    void (async () => {
      const size = Math.ceil(bytes.length / chunks);
      req.write(head);
      for (let offset = 0; offset < bytes.length; offset += size) {
        if (req.destroyed) return;
        req.write(bytes.subarray(offset, offset + size));
        await sleep(everyMs);
      }
      req.end(tail);
    })();
  });
  const upload: Upload = { settled: false, done: answer.finally(() => (upload.settled = true)) };
  upload.done.catch(() => {}); // looked at by the test; not an unhandled rejection if it fails first
  return upload;
}

/** Resolves with the error code of a new TCP connection, or 'connected'. */
function tryConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

it('SIGTERM while 4 slow 3 MB uploads are in flight: all finish with 200, new connections are refused, exit 0', async () => {
  expect(big.length).toBeGreaterThan(2_500_000);
  const server = await startServe({ OPTMARK_DATA_DIR: dataDir });
  // The template database is empty: this start creates the local account, whose key is the one we use.
  await server.waitFor(() => server.stderr.includes('first-start.txt'), 'first-start line', 5_000);
  const key = firstStartKey(dataDir);
  const port = Number(new URL(server.url).port);

  const uploads = Array.from({ length: 4 }, () => slowUpload(server.url, key, big, 12, 100));
  await sleep(350); // headers and the first chunks are in; about 0.9 s of body still to come

  const signalled = Date.now();
  server.proc.kill('SIGTERM');
  await server.waitFor(() => server.stdout.includes('stopping: finishing in-flight requests'), 'stop log line', 5_000);
  await sleep(50);
  expect(await tryConnect(port), 'a new connection after SIGTERM').toBe('ECONNREFUSED');
  // Refused while the uploads were still being sent, not after.
  expect(uploads.map((u) => u.settled)).toEqual([false, false, false, false]);

  const settled = await Promise.allSettled(uploads.map((u) => u.done));
  const failures = settled.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : []));
  expect(failures, `uploads that got no answer; server stdout:\n${server.stdout}`).toEqual([]);
  const answers = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  for (const answer of answers) {
    expect(answer.status, `${answer.body.slice(0, 300)}\nserver stdout:\n${server.stdout}`).toBe(200);
    const body = JSON.parse(answer.body) as { imageBase64: string; mimeType: string };
    expect(body.mimeType).toBe('image/jpeg');
    const marked = Buffer.from(body.imageBase64, 'base64');
    expect(marked.length).toBeGreaterThan(big.length);
    expect(marked.includes(Buffer.from('DMI-PROHIBITED-AIMLTRAINING'))).toBe(true);
  }
  expect(await tryConnect(port)).toBe('ECONNREFUSED');

  const exit = await Promise.race([server.exited, sleep(10_000).then(() => 'still running')]);
  const output = `stdout:\n${server.stdout}\nstderr:\n${server.stderr}`;
  expect(exit, output).toEqual({ code: 0, signal: null });
  expect(Date.now() - signalled, output).toBeLessThan(5_000);
  expect(existsSync(join(dataDir, 'optmark.lock'))).toBe(false);
  expect(existsSync(join(dataDir, 'admin.sock'))).toBe(false);
  // No error or fatal logged while stopping.
  expect(server.stdout.split('\n').filter((line) => /"level":(50|60)/.test(line))).toEqual([]);
}, 60_000);
