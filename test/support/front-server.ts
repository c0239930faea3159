/**
 * An HTTP server in front of a real one, for the answers of a moment a real
 * server gives only under load (429 too_many_requests, 503 server_busy with
 * Retry-After) and for slow answers: its script answers a request itself,
 * or (after a wait, if it likes) lets it through unchanged.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Answer {
  readonly status: number;
  readonly headers?: Record<string, string>;
  readonly body: string;
}

/** A server in front of `target`: `script` answers a request itself, or returns undefined to pass it on. */
export async function frontServer(
  target: string,
  script: (request: IncomingMessage, n: number) => Answer | undefined | Promise<Answer | undefined>,
) {
  let n = 0;
  const server: Server = createServer(async (request: IncomingMessage, response: ServerResponse) => {
    const answer = await script(request, ++n);
    if (answer) {
      request.resume();
      response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers }).end(answer.body);
      return;
    }
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', async () => {
      const headers = Object.fromEntries(Object.entries(request.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k))) as Record<string, string>;
      const upstream = await fetch(`${target}${request.url}`, { method: request.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined }).catch(() => undefined);
      if (!upstream) return void response.destroy();
      response.writeHead(upstream.status, Object.fromEntries([...upstream.headers].filter(([k]) => !['content-length', 'transfer-encoding', 'content-encoding', 'connection', 'keep-alive'].includes(k))));
      response.end(Buffer.from(await upstream.arrayBuffer()));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get requests() {
      return n;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

