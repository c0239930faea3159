/**
 * clientGone over real HTTP: the signal is aborted when the client closes its
 * connection before the answer, and never for a call that was answered.
 */
import { connect } from 'node:net';
import Fastify from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { clientGone } from '../../src/http/client-gone.js';

const app = Fastify();
const signals: AbortSignal[] = [];
let release: () => void = () => {};
let port = 0;

beforeAll(async () => {
  app.get('/slow', async (_request, reply) => {
    const signal = clientGone(reply);
    signals.push(signal);
    // Answers when the test releases it, or gives up when the client is gone.
    await new Promise<void>((resolve) => {
      release = resolve;
      signal.addEventListener('abort', () => resolve(), { once: true });
    });
    return { answered: true };
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as { port: number }).port;
});
afterAll(async () => app.close());

it('a client that closes its connection before the answer aborts the signal', async () => {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
  await expect.poll(() => signals.length).toBe(1);
  expect(signals[0]!.aborted).toBe(false);
  socket.destroy();
  await expect.poll(() => signals[0]!.aborted, { timeout: 2000 }).toBe(true);
});

it('a call that is answered is never aborted, also after its connection closes', async () => {
  const answer = fetch(`http://127.0.0.1:${port}/slow`, { headers: { Connection: 'close' } });
  await expect.poll(() => signals.length).toBe(2);
  release();
  expect(await (await answer).json()).toEqual({ answered: true });
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(signals[1]!.aborted).toBe(false);
});
