/**
 * The HTTP application: fastify with its plugins, hooks and routes, built
 * from the use cases. No listen() here (see server.ts), so tests and the
 * server share exactly this.
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { ApiAccess } from '../app/api-access.js';
import { createAuthFailures, type AuthFailures } from '../app/auth-failures.js';
import type { Fingerprinting } from '../app/fingerprint.js';
import type { MetadataWorkers } from '../app/off-loop.js';
import type { Provenance } from '../app/provenance.js';
import type { Records } from '../app/records/records.js';
import type { Vault } from '../app/vault/vault.js';
import type { Config } from '../config.js';
import { ImageTooLargeError, RequestError, ServiceUnavailableError, type ErrorCode } from '../errors.js';
import { trackConnections } from './connections.js';
import { installErrorHandling, sendError, STATUS } from './error-handler.js';
import { holdContinue } from './expect-continue.js';
import { openApiDocument } from './openapi.js';
import { trackRunningHandlers } from './running-handlers.js';
import { webPlugin, type WebPluginOptions } from './web/plugin.js';
import type { Access } from './web/guard.js';
import { healthRoutes } from './routes/health.js';
import { answerOtherMethods } from './routes/other-methods.js';
import { imageRoutes } from './routes/images.js';
import { recordApiRoutes } from './routes/records.js';
import { scanApiRoutes } from './routes/scans.js';
import type { Scans } from '../app/scans/scans.js';
import { acceptMultipartBodies, refuseStrayMultipart } from './upload.js';

const VERSION = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
/** Multipart framing around the file: boundary lines and part headers. */
const MULTIPART_OVERHEAD = 64 * 1024;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** The request headers, in bytes, at most (past it: 431 header_too_large, docs/errors.md). */
const MAX_HEADER_BYTES = 16 * 1024;

export interface RouteEntry {
  readonly method: string;
  readonly url: string;
  readonly access: Access | undefined;
  readonly csrf: 'session' | 'pre-session' | undefined;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered, with its `config.access` and `config.csrf`. */
    routeTable: readonly RouteEntry[];
  }
}

export interface HttpDeps {
  readonly config: Pick<
    Config,
    | 'maxUploadBytes'
    | 'maxImagePixels'
    | 'logLevel'
    | 'requestTimeoutSeconds'
    | 'headersTimeoutSeconds'
    | 'uploadStallSeconds'
    | 'minUploadRate'
    | 'baseUrl'
    | 'trustProxy'
    | 'authFailuresPerMinute'
  >;
  readonly access: ApiAccess;
  /**
   * Invalid API keys per client address (request.ip), shared by the API and
   * the dashboard's sign-in; default: one of config.authFailuresPerMinute.
   */
  readonly authFailures?: AuthFailures;
  /** The people's side: sessions, people, accounts and the rest of the pages' use cases. */
  readonly web: Omit<WebPluginOptions, 'access' | 'provenance' | 'fingerprint' | 'upload' | 'maxImagePixels' | 'clock' | 'requestTimeoutMs' | 'secure' | 'workers' | 'callSeconds' | 'records' | 'scans' | 'vault'>;
  /** The Private Vault: the dashboard's markings kept, when an account turns it on (docs/vault.md). */
  readonly vault: Vault;
  /** Dated service records: made by the dashboard's marking, looked up by the API and the public lookup (docs/records.md). */
  readonly records: Records;
  /** Repository scans (docs/scans.md); without them, no scan routes (a test's app). */
  readonly scans?: Scans;
  /** Signs tags on protect and checks them on verify. */
  readonly provenance: Provenance;
  /** The in-pixel fingerprint check of every verify. */
  readonly fingerprint: Fingerprinting;
  /** Where a file whose XMP is too long for the event loop is read and written (app/off-loop.ts); without them, here. */
  readonly workers?: MetadataWorkers;
  /** The public signing keys, published at /.well-known/jwks.json. */
  readonly jwks: () => unknown;
  readonly ping: () => Promise<void>;
  readonly clock: () => Date;
  /** Logger options or instance; defaults to pino at config.logLevel. */
  readonly logger?: FastifyServerOptions['logger'];
}

/** http://HOST:PORT where the server listens (the default of OPTMARK_BASE_URL). */
function listeningAt(app: FastifyInstance): string {
  const address = app.server.address();
  if (address === null || typeof address === 'string') return 'http://127.0.0.1';
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

/** An answer written on the socket itself, where no request object exists to answer with; the connection then closes. */
function answerOnSocket(socket: Socket, code: ErrorCode, message: string, headers = ''): void {
  const requestId = randomUUID();
  const body = JSON.stringify({ error: message, code, requestId });
  socket.end(
    `HTTP/1.1 ${STATUS[code]} ${code.replace(/_/g, ' ')}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `${headers}Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** Errors from Node's HTTP parser, before a request exists: answered with JSON and the connection closed. */
function clientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const code: ErrorCode =
    error.code === 'HPE_HEADER_OVERFLOW' ? 'header_too_large' : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'request_timeout' : 'malformed_request';
  const message =
    code === 'header_too_large' ? 'The request headers are too large' : code === 'request_timeout' ? 'The request took too long to arrive' : 'The request is not valid HTTP';
  answerOnSocket(socket, code, message);
}

/**
 * CONNECT (a tunnel through a proxy): Node hands it to a 'connect' listener
 * and, with none, drops the connection without a word. This is no proxy: 405.
 */
function refuseTunnel(_request: IncomingMessage, socket: Socket): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  answerOnSocket(socket, 'method_not_allowed', 'CONNECT is not allowed here: this server is not a proxy', 'Allow: GET, HEAD, POST\r\n');
}

/** The longest path parameter routed (an id, a SHA-256): longer is 404, answered before the route. */
const MAX_PATH_PARAMETER = 1024;

/** What every log line leaves out, whoever gives the logger. */
const LOGGED = {
  // Keys travel in Authorization, dashboard sessions in Cookie. Neither
  // fastify nor our code logs request headers; should anything log them
  // (at debug or trace level), they are redacted wherever they appear.
  redact: {
    paths: ['authorization', 'cookie'].flatMap((h) => [`req.headers.${h}`, `headers.${h}`, `*.${h}`, `*.headers.${h}`]),
    censor: '[redacted]',
  },
  // Log paths without their query string: a one-time link carries its token
  // there (/link?token=…, /sign-up/confirm?token=…), and a client may put a
  // key in one by mistake.
  serializers: {
    req: (req: { method: string; url: string; socket?: { remoteAddress?: string } }) => ({
      method: req.method,
      url: req.url.split('?')[0],
      remoteAddress: req.socket?.remoteAddress,
    }),
  },
};

export async function buildHttpApp(deps: HttpDeps): Promise<FastifyInstance> {
  const { config, clock } = deps;
  const app = Fastify({
    // A logger given (the tests give a level and a stream) leaves out what every line does.
    logger: deps.logger === false ? false : { level: config.logLevel, ...(typeof deps.logger === 'object' ? deps.logger : {}), ...LOGGED },
    genReqId: (req) => {
      const given = req.headers['request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    requestTimeout: config.requestTimeoutSeconds * 1000,
    keepAliveTimeout: 5000,
    forceCloseConnections: 'idle',
    // Our own 503 while stopping (below), in the error shape of every other answer.
    return503OnClosing: false,
    clientErrorHandler: clientError,
    // A path whose escapes do not decode, or a path parameter past its length: Fastify answers these
    // before any hook runs, in a shape of its own; here, in ours, with the request's id.
    routerOptions: { maxParamLength: MAX_PATH_PARAMETER },
    frameworkErrors: (error, request, reply) => {
      reply.header('Request-Id', request.id);
      reply.header('X-Content-Type-Options', 'nosniff');
      const refusal =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? new RequestError('not_found', `There is nothing at this path (a part of it is over ${MAX_PATH_PARAMETER} characters)`)
          : new RequestError('malformed_request', 'The path is not a valid URL: a "%" must begin an escape such as %20');
      sendError(request, reply, refusal, clock);
    },
    // Node checks the headers and request timeouts only every
    // connectionsCheckingInterval (30 s by default): check every second.
    // The header block's limit (431 header_too_large past it) is Node's
    // default today, 16 KiB, set here so that it is our documented limit and
    // not whatever a future Node or a --max-http-header-size flag makes it.
    // A request of HTTP/1.1 without Host is refused below, in JSON like every refusal (Node's own answer is a bare 400).
    http: { headersTimeout: config.headersTimeoutSeconds * 1000, connectionsCheckingInterval: 1000, maxHeaderSize: MAX_HEADER_BYTES, requireHostHeader: false },
    bodyLimit: 1024 * 1024,
    // request.ip is the TCP peer, unless it is one of the configured reverse
    // proxies: then the client X-Forwarded-For names (the auth-failure limit
    // counts per request.ip).
    trustProxy: config.trustProxy ? [...config.trustProxy] : false,
  });

  installErrorHandling(app, { clock });

  // Every route with who may call it (docs/permissions.md; the authorisation tests read this).
  const routeTable: RouteEntry[] = [];
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routeTable.push({ method, url: route.url, access: route.config?.access, csrf: route.config?.csrf });
  });
  app.decorate('routeTable', routeTable);

  // Only multipart bodies are let through, unread (the image routes stream
  // them: upload.ts); any other content type is refused (415) without being read.
  app.removeAllContentTypeParsers();
  acceptMultipartBodies(app);
  refuseStrayMultipart(app);

  // "100 Continue" only once a body is wanted (expect-continue.ts).
  holdContinue(app);
  app.server.on('connect', refuseTunnel);
  // Connections left silent, or half sent, must not hold the stop open (connections.ts).
  const connections = trackConnections(app.server);
  let stopping = false;
  app.addHook('preClose', async () => {
    stopping = true;
    connections.stop({ headersMs: config.headersTimeoutSeconds * 1000, limitMs: config.requestTimeoutSeconds * 1000 });
  });
  // A call whose client went away still runs; close() waits for it, so the
  // shutdown does not close the database or the worker pool under it.
  const running = trackRunningHandlers(app);
  app.addHook('onClose', async () => {
    const left = await running.idle(config.requestTimeoutSeconds * 1000);
    if (left > 0) app.log.warn({ running: left }, `stopping with ${left} call(s) still running after the request timeout`);
  });

  // Behind a proxy the server does not trust, every client has the proxy's
  // address, and the invalid-key limit (counted per address) locks them all
  // out for one client's guesses: said once, at the first request that shows it.
  let proxyNoted = config.authFailuresPerMinute === 0;
  app.addHook('onRequest', async (request, reply) => {
    // A request that arrives on a connection this server has already closed its side of (a 408 sent to a
    // connection idle past the headers timeout, which a browser had just picked to send on): no answer can
    // reach its client, who sends it again on a new connection. Its work must not run: it would count for
    // nobody, and an Idempotency-Key would keep its failure as the outcome the retry gets.
    if (request.raw.socket?.writableEnded) {
      reply.hijack();
      request.raw.socket.destroy();
      return;
    }
    if (!proxyNoted && request.headers['x-forwarded-for'] !== undefined && request.ip === request.socket.remoteAddress) {
      proxyNoted = true;
      request.log.warn(
        { peer: request.socket.remoteAddress },
        config.trustProxy
          ? 'a request carries X-Forwarded-For from an address OPTMARK_TRUST_PROXY does not list: if it is your proxy, add it, or every client behind it shares its address, and one client\'s invalid API keys lock out every client behind it (docs/operations.md#timeouts-and-limits)'
          : 'a request carries X-Forwarded-For and OPTMARK_TRUST_PROXY is not set: behind a proxy every client has its address, so one client\'s invalid API keys lock out every client behind it; set OPTMARK_TRUST_PROXY to the proxy\'s address (docs/operations.md#timeouts-and-limits)',
      );
    }
    reply.header('Request-Id', request.id);
    // A browser must never guess a type (an upload may be a polyglot).
    reply.header('X-Content-Type-Options', 'nosniff');
    if (stopping) {
      reply.header('Connection', 'close');
      return sendError(request, reply, new ServiceUnavailableError('The server is stopping; try again in a moment', 1), clock);
    }
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      return sendError(request, reply, new RequestError('malformed_request', 'The request has no Host header, which HTTP/1.1 requires'), clock);
    }
    // No path or query of this service holds a NUL (the database cannot store one: it would fail as a 500).
    if (request.url.includes('%00') || request.url.includes('\u0000')) {
      return sendError(request, reply, new RequestError('malformed_request', 'The address holds a NUL character (%00), which no path or query of this service takes'), clock);
    }
    // Refuse an upload whose declared size is over the limit before reading it (other bodies: their parser's limit, 413 body_too_large).
    const length = Number(request.headers['content-length']);
    if (request.routeOptions.config?.upload && Number.isFinite(length) && length > config.maxUploadBytes + MULTIPART_OVERHEAD) {
      return sendError(request, reply, new ImageTooLargeError(config.maxUploadBytes), clock);
    }
  });

  // Built on the first request, once the port is known: its server is this deployment's address.
  let document: ReturnType<typeof openApiDocument> | undefined;
  app.get('/api/v1/openapi.json', { config: { access: 'public' } }, async () => {
    document ??= openApiDocument({ maxUploadBytes: config.maxUploadBytes, version: VERSION, baseUrl: config.baseUrl ?? listeningAt(app) });
    return document;
  });
  await app.register(healthRoutes, { ping: deps.ping });
  app.get('/.well-known/jwks.json', { config: { access: 'public' } }, async (_request, reply) => {
    reply.header('Cache-Control', 'public, max-age=300');
    return deps.jwks();
  });
  answerOtherMethods(app, [
    ['/api/v1/openapi.json', 'GET'],
    ['/.well-known/jwks.json', 'GET'],
    ['/healthz', 'GET'],
    ['/readyz', 'GET'],
  ]);
  const upload = { maxUploadBytes: config.maxUploadBytes, stallSeconds: config.uploadStallSeconds, minBytesPerSecond: config.minUploadRate };
  const { access, provenance, fingerprint, workers } = deps;
  const authFailures = deps.authFailures ?? createAuthFailures({ limit: config.authFailuresPerMinute, clock: { now: clock } });
  const { maxImagePixels } = config;
  const callSeconds = config.requestTimeoutSeconds;
  // What the API's image calls and the dashboard's share.
  const calls = { access, provenance, fingerprint, workers, callSeconds, upload, maxImagePixels, clock, requestTimeoutMs: config.requestTimeoutSeconds * 1000 };
  await app.register(imageRoutes, { ...calls, authFailures, repeats: deps.web.repeats });
  await app.register(recordApiRoutes, { access, authFailures, records: deps.records });
  if (deps.scans) await app.register(scanApiRoutes, { access, authFailures, scans: deps.scans });
  // Cookies are Secure when the deployment's address is https, or a trusted proxy says the request came over https.
  const httpsBase = config.baseUrl?.startsWith('https:') ?? false;
  await app.register(webPlugin, {
    ...deps.web,
    ...calls,
    records: deps.records,
    scans: deps.scans,
    vault: deps.vault,
    secure: (request) => httpsBase || (config.trustProxy !== undefined && request.protocol === 'https'),
  });
  return app;
}

