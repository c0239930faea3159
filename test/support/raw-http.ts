/**
 * HTTP below fetch: bytes written to a TCP socket as given (smuggling
 * vectors, broken multipart, slow and silent clients), and the answer parsed
 * by hand.
 */
import { connect, type Socket } from 'node:net';

export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

export interface Exchange {
  /** Everything the server sent before it closed the connection or `waitMs` passed. */
  readonly text: string;
  readonly closed: boolean;
  readonly ms: number;
}

export interface ExchangeOptions {
  /** The local address to connect from (any 127.x.y.z works on Linux loopback): a client of its own. */
  readonly localAddress?: string;
  /** Stop as soon as what arrived satisfies this, without waiting for the server to close. */
  readonly until?: (text: string) => boolean;
}

/**
 * Open a connection to `url`'s host, write `chunks` (pausing `gapMs` between
 * them), then wait for the server to close, `options.until` to hold, or
 * `waitMs` to pass.
 */
export function rawExchange(url: string, chunks: ReadonlyArray<string | Uint8Array> | string, waitMs: number, gapMs = 0, options: ExchangeOptions = {}): Promise<Exchange> {
  const { hostname, port } = new URL(url);
  const pieces = typeof chunks === 'string' ? [chunks] : chunks;
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let text = '';
    let done = false;
    const socket = connect({ port: Number(port), host: hostname, localAddress: options.localAddress }, () => void writeAll());
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closed, ms: performance.now() - started });
    };
    const timer = setTimeout(() => finish(false), waitMs);
    async function writeAll() {
      for (const piece of pieces) {
        if (done || socket.destroyed) return;
        socket.write(piece);
        if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
      }
    }
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      text += chunk;
      if (options.until?.(text)) finish(false);
    });
    socket.on('close', () => finish(true));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      // The server may close while we are still writing: that is an answer, not a test failure.
      if (error.code === 'ECONNRESET' || error.code === 'EPIPE') finish(true);
      else if (!done) {
        done = true;
        clearTimeout(timer);
        reject(error);
      }
    });
  });
}

export interface Paced {
  /** Everything the server sent before it closed the connection (or we gave up). */
  readonly text: string;
  /** The server closed it (false: `giveUpMs` passed first and we closed it). */
  readonly closedByServer: boolean;
  /** From connected to closed. */
  readonly ms: number;
  /** Bytes written. */
  readonly sent: number;
}

/**
 * A slow client: once connected, writes `bytes` on a schedule, `due(ms)`
 * being how many should be out `ms` after connecting (checked every
 * `tickMs`, so a late timer sends what is due at once, as a steady link
 * would). Stops writing once the server answers, then waits for it to close,
 * or `giveUpMs` after connecting closes it itself.
 */
export function pacedExchange(url: string, bytes: Uint8Array, due: (ms: number) => number, options: { tickMs: number; giveUpMs: number; onConnected?: () => void }): Promise<Paced> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    let text = '';
    let sent = 0;
    let connectedAt = 0;
    let pace: NodeJS.Timeout | undefined;
    const socket = connect(Number(port), hostname);
    const giveUp = setTimeout(() => finish(false), options.giveUpMs);
    function finish(closedByServer: boolean) {
      clearInterval(pace);
      clearTimeout(giveUp);
      socket.destroy();
      resolve({ text, closedByServer, ms: performance.now() - connectedAt, sent });
    }
    const tick = () => {
      const target = Math.min(bytes.length, due(performance.now() - connectedAt));
      if (text === '' && target > sent && !socket.destroyed) {
        socket.write(bytes.subarray(sent, target));
        sent = target;
      }
      if (sent === bytes.length || text !== '') clearInterval(pace);
    };
    socket.once('connect', () => {
      connectedAt = performance.now();
      options.onConnected?.();
      tick();
      pace = setInterval(tick, options.tickMs);
    });
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.once('close', () => finish(true));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNRESET' || error.code === 'EPIPE') return; // 'close' follows, with what arrived
      clearInterval(pace);
      clearTimeout(giveUp);
      reject(error);
    });
  });
}

/** The first response in `text` (status line, headers, body by Content-Length). */
export function parseResponse(text: string): RawResponse {
  const split = text.indexOf('\r\n\r\n');
  if (split < 0) throw new Error(`no complete response in ${JSON.stringify(text.slice(0, 200))}`);
  const [statusLine = '', ...lines] = text.slice(0, split).split('\r\n');
  const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
  const length = Number(headers['content-length'] ?? text.length);
  return { status: Number(statusLine.split(' ')[1]), headers, body: text.slice(split + 4, split + 4 + length) };
}

export interface Part {
  readonly name: string;
  readonly filename?: string;
  readonly type?: string;
  readonly data: string | Uint8Array;
  /** Replaces the generated Content-Disposition line. */
  readonly disposition?: string;
}

/** A multipart/form-data body; `close: false` leaves off the closing boundary. */
export function multipartBody(parts: readonly Part[], boundary = 'optmark-boundary', close = true): Buffer {
  const pieces: Buffer[] = [];
  for (const part of parts) {
    const disposition = part.disposition ?? `form-data; name="${part.name}"${part.filename !== undefined ? `; filename="${part.filename}"` : ''}`;
    const type = part.type ? `Content-Type: ${part.type}\r\n` : '';
    pieces.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${type}\r\n`, 'latin1'));
    pieces.push(typeof part.data === 'string' ? Buffer.from(part.data, 'latin1') : Buffer.from(part.data));
    pieces.push(Buffer.from('\r\n'));
  }
  if (close) pieces.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(pieces);
}

/** A whole HTTP/1.1 POST as bytes: request line, headers (Content-Length unless given), body. */
export function rawPost(path: string, headers: Record<string, string>, body: Uint8Array): Buffer {
  const all = { Host: 'localhost', Connection: 'close', ...headers };
  if (!Object.keys(all).some((h) => /^(content-length|transfer-encoding)$/i.test(h))) Object.assign(all, { 'Content-Length': String(body.length) });
  const head = `POST ${path} HTTP/1.1\r\n${Object.entries(all)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\r\n')}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

/**
 * An upload that sends its headers and the first 100 bytes of `body` (a
 * multipart body with the default boundary), then waits to be finished or
 * aborted.
 */
export class HeldUpload {
  private readonly socket: Socket;
  private text = '';
  readonly answered: Promise<RawResponse>;

  constructor(
    url: string,
    key: string,
    private readonly body: Uint8Array,
    path = '/api/v1/protect',
  ) {
    const { port } = new URL(url);
    this.socket = connect(Number(port), '127.0.0.1');
    this.socket.setEncoding('latin1');
    this.socket.write(
      `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: multipart/form-data; boundary=optmark-boundary\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
    );
    this.socket.write(body.subarray(0, 100));
    this.answered = new Promise((resolve, reject) => {
      this.socket.on('data', (chunk: string) => (this.text += chunk));
      this.socket.on('close', () => (this.text ? resolve(parseResponse(this.text)) : reject(new Error('closed without an answer'))));
      this.socket.on('error', () => {});
    });
    this.answered.catch(() => {});
  }

  /** Send the rest of the body; resolves with the answer. */
  finish(): Promise<RawResponse> {
    this.socket.write(this.body.subarray(100));
    return this.answered;
  }

  /** Send `more` bytes of the rest of the body, then drop the connection. */
  abort(more = 0): void {
    if (more > 0) this.socket.write(this.body.subarray(100, 100 + more));
    this.socket.destroy();
  }
}
