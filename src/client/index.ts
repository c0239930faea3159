/**
 * optmark/client: a typed client of the HTTP API, for Node.js 20.19 and later
 * and for browsers (fetch, FormData, Blob and Web Crypto only; no Node.js
 * module). Its types come from the OpenAPI document (api-types.ts, generated
 * at build time).
 *
 *   const client = createClient({ baseUrl: 'https://optmark.example', apiKey });
 *   const marked = await client.protect(file);        // file: a File, a Blob or bytes
 *   await saveResult(marked, 'out');                  // optmark/client/node: saved as marked.filename
 *
 * Every failure is an OptmarkError with `status`, `code`, `requestId` and
 * `retryAfter`. Calls are retried as the service's rule says: only
 * `server_busy`, `service_unavailable`, `too_many_requests` and network
 * errors, when Retry-After is at most 60 seconds, at most 5 tries, with
 * exponential backoff and full jitter added to Retry-After. Every image call
 * carries an Idempotency-Key derived from the file's SHA-256 and the
 * options, so a retry, or the same file sent again within 24 hours, is
 * answered again and counts once.
 */
import type { components } from './api-types.js';

export type ProtectAnswer = components['schemas']['ProtectResult'];
export type VerifyAnswer = components['schemas']['VerifyResult'];
export type VerifyDetails = NonNullable<VerifyAnswer['details']>;
export type Usage = components['schemas']['Usage'];
export type Jwks = components['schemas']['Jwks'];
/** The dated service records of the key's account for one SHA-256 (docs/records.md). */
export type Records = components['schemas']['Records'];
/** A repository scan (docs/scans.md): its status, progress and, once ended, its summary. */
export type Scan = components['schemas']['Scan'];
export type ScanReport = components['schemas']['ScanReport'];
export type ScanItem = components['schemas']['ScanItem'];
export type ScanSummary = components['schemas']['ScanSummary'];
/** What POST /api/v1/scans takes. */
export interface ScanInput {
  readonly repository: string;
  readonly ref?: string;
  /** A read token for a private repository: used for this scan's fetch only, never stored. */
  readonly token?: string;
}
/** A fix pushed as a branch. */
export interface FixPushed {
  readonly branch: string | null;
  readonly commit: string | null;
  readonly marked: ReadonlyArray<{ readonly path: string; readonly sha256: string }>;
  readonly failed: ReadonlyArray<{ readonly path: string; readonly reason: string }>;
}
/** The server's error codes, and the client's own: the network failed, a try timed out, an answer that is not the API's. */
export type ErrorCode = components['schemas']['Error']['code'] | 'network_error' | 'timeout' | 'unexpected_response';

/** The codes worth another try (with Retry-After at most `maxRetryAfterSeconds`). */
export const RETRYABLE_CODES: readonly ErrorCode[] = ['server_busy', 'service_unavailable', 'too_many_requests', 'network_error'];

/** What the RateLimit header says of an operation's monthly allowance. */
export interface Allowance {
  readonly operation: string;
  readonly remaining: number;
  /** Seconds until the allowance resets (the next UTC month). */
  readonly resetsIn: number;
}

/** What every answer carries besides its body. */
export interface AnswerInfo {
  readonly requestId: string;
  /** The answer repeats an earlier call with the same Idempotency-Key: it counted nothing. */
  readonly replayed: boolean;
  /** The monthly allowance after this call, when the server said it. */
  readonly allowance: Allowance | undefined;
}

export interface ProtectResult extends ProtectAnswer, AnswerInfo {
  /** The marked image (imageBase64 decoded). */
  readonly bytes: Uint8Array;
  /** Whether the file's own opt-out value was kept or the default written (the Optmark-Opt-Out header). */
  readonly optOut: { readonly action: 'kept' | 'written'; readonly value: string };
  /** The upload carried a C2PA manifest that no longer validates in the marked copy. */
  readonly c2paInvalidated: boolean;
}

export interface VerifyResult extends VerifyAnswer, AnswerInfo {}

/** A failed call. `status` is 0 when no HTTP answer came (network error, timeout). */
export class OptmarkError extends Error {
  override readonly name = 'OptmarkError';
  constructor(
    message: string,
    readonly status: number,
    readonly code: ErrorCode,
    readonly requestId: string | undefined,
    /** Seconds the server asked to wait (Retry-After), if it did. */
    readonly retryAfter: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** When the monthly allowance comes back, for quota_exceeded (from Retry-After). */
  get resetsAt(): Date | undefined {
    return this.code === 'quota_exceeded' && this.retryAfter !== undefined ? new Date(Math.floor(this.at / 1000) * 1000 + this.retryAfter * 1000) : undefined;
  }

  private readonly at = Date.now();
}

/**
 * The server's 429 too_many_requests for calls in flight: the key has
 * OPTMARK_MAX_IN_FLIGHT_PER_KEY calls in progress, or its account its share
 * while other accounts wait ("This API key already has 8 calls in progress;
 * wait for one to finish"). The other too_many_requests (too many invalid
 * keys from this address) says nothing of calls in progress.
 */
export function isCallsInFlight(error: unknown): error is OptmarkError {
  return error instanceof OptmarkError && error.code === 'too_many_requests' && /calls in progress/.test(error.message);
}

/** Bytes of an image: a File (its name names the marked copy), a Blob, or the bytes themselves. */
export type ImageInput = Blob | ArrayBuffer | ArrayBufferView;

export interface CallOptions {
  /** Cancels the call, retries and waits included; the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** Milliseconds one try may take (default: the client's). */
  readonly timeoutMs?: number;
  /** The file name sent with the image (default: a File's own name, else "image"); the marked copy's `filename` is made from it. */
  readonly filename?: string;
  /** Replaces the derived Idempotency-Key. */
  readonly idempotencyKey?: string;
}

export interface VerifyOptions extends CallOptions {
  /** Ask for `details`: every signal in every vocabulary, each plus:DataMining value, TDMRep, C2PA, warnings. */
  readonly detail?: boolean;
}

export interface ClientOptions {
  /** The deployment's address, e.g. https://optmark.example (no trailing /api/v1). */
  readonly baseUrl: string;
  readonly apiKey: string;
  /** At most this many tries of a retryable failure (default 5). */
  readonly maxTries?: number;
  /** A Retry-After longer than this many seconds is not waited for: the error surfaces (default 60). */
  readonly maxRetryAfterSeconds?: number;
  /** Backoff: the first wait's upper bound and the cap, in milliseconds (defaults 500 and 30000). */
  readonly backoffMs?: { readonly base: number; readonly max: number };
  /** Milliseconds one try may take (default 120000, the server's own request timeout). */
  readonly timeoutMs?: number;
  /**
   * Whether a 429 too_many_requests for the key's (or account's) calls in
   * flight is tried again as the other retryable failures are, spending a
   * try (default true). A caller that bounds its own calls at once (the
   * command line does) passes false, to wait for one of its calls to finish
   * instead (isCallsInFlight tells that answer).
   */
  readonly retryCallsInFlight?: boolean;
  /** Told about each retry before its wait. */
  readonly onRetry?: (retry: { readonly attempt: number; readonly delayMs: number; readonly error: OptmarkError }) => void;
  /** Another fetch (a proxy's, a test's). */
  readonly fetch?: typeof fetch;
  /** A number in [0, 1) for the jitter (default Math.random). */
  readonly random?: () => number;
}

export interface OptmarkClient {
  protect(image: ImageInput, options?: CallOptions): Promise<ProtectResult>;
  verify(image: ImageInput, options?: VerifyOptions): Promise<VerifyResult>;
  usage(options?: Pick<CallOptions, 'signal' | 'timeoutMs'>): Promise<Usage & Omit<AnswerInfo, 'replayed'>>;
  /** The deployment's public signing keys (no key needed). */
  jwks(options?: Pick<CallOptions, 'signal' | 'timeoutMs'>): Promise<Jwks>;
  /**
   * The account's dated service records of the file whose original or marked
   * SHA-256 this is (made by the dashboard's marking; protect makes none).
   * Free of charge. None is an OptmarkError `record_not_found` (404).
   */
  records(sha256: string, options?: Pick<CallOptions, 'signal' | 'timeoutMs'>): Promise<Records & Pick<AnswerInfo, 'requestId'>>;
  /**
   * Repository scans (docs/scans.md). Starting one or a fix is not retried
   * after a network error or a timeout (the server may have accepted it: a
   * scan counts toward the day's scans, a fix spends protect units); reads
   * are retried as the image calls are. `scans_paused` and
   * `scan_limit_reached` are never retried: their `retryAfter` says when
   * they end.
   */
  readonly scans: ScanCalls;
}

type Timing = Pick<CallOptions, 'signal' | 'timeoutMs'>;

export interface ScanCalls {
  create(input: ScanInput, options?: Timing): Promise<{ id: string; status: Scan['status']; links: Scan['links'] }>;
  list(options?: Timing): Promise<Scan[]>;
  get(id: string, options?: Timing): Promise<Scan>;
  /** Poll until the scan has ended (done, failed or cancelled); `onProgress` sees each state. */
  wait(id: string, options?: Timing & { readonly intervalMs?: number; readonly onProgress?: (scan: Scan) => void }): Promise<Scan>;
  report(id: string, options?: Timing): Promise<ScanReport>;
  /** The report as CSV text. */
  reportCsv(id: string, options?: Timing): Promise<string>;
  cancel(id: string, options?: Timing): Promise<Scan>;
  /** Mark the images without the opt-out: `confirm` is their number (each one protect unit). The zip of the marked files. */
  fix(id: string, fix: { readonly confirm: number; readonly token?: string }, options?: Timing): Promise<Blob>;
  /** The same, pushed as one commit on a new branch with a token that may write. */
  fixAndPush(id: string, fix: { readonly confirm: number; readonly token: string }, options?: Timing): Promise<FixPushed>;
}

/** The Idempotency-Key of an image call: the operation, the file's SHA-256 and the options. */
export async function idempotencyKey(operation: 'protect' | 'verify', bytes: Uint8Array, options: { detail?: boolean } = {}): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
  const hex = Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
  return `optmark-v1-${operation}-${hex}${operation === 'verify' && options.detail ? '-detail' : ''}`;
}

/** A File of the marked image, named by the answer's `filename` and typed by its `mimeType` (never the input's). */
export function resultFile(result: Pick<ProtectResult, 'bytes' | 'filename' | 'mimeType'>): File {
  return new File([result.bytes as Uint8Array<ArrayBuffer>], safeFilename(result.filename), { type: result.mimeType });
}

/** The answer's file name as one path segment: no directory, no leading dot, no control character. */
export function safeFilename(name: string): string {
  const last = name.split(/[\\/]/).pop() ?? '';
  // eslint-disable-next-line no-control-regex
  const clean = last.replace(/[\u0000-\u001f\u007f]/g, '').replace(/^\.+/, '');
  return clean || 'image';
}

export function createClient(options: ClientOptions): OptmarkClient {
  const base = options.baseUrl.replace(/\/+$/, '');
  const doFetch = options.fetch ?? ((input: string | URL | Request, init?: RequestInit) => fetch(input, init));
  const maxTries = options.maxTries ?? 5;
  const maxRetryAfter = options.maxRetryAfterSeconds ?? 60;
  const backoff = options.backoffMs ?? { base: 500, max: 30_000 };
  const random = options.random ?? Math.random;
  const auth = { Authorization: `Bearer ${options.apiKey}` };

  /**
   * One try: the whole answer (its body read within the try, so that a
   * cancellation or the timeout while it arrives is that, not a body that
   * "is not JSON"), or an OptmarkError.
   */
  async function once(path: string, init: RequestInit, call: Pick<CallOptions, 'signal' | 'timeoutMs'>): Promise<Response> {
    call.signal?.throwIfAborted();
    const timeoutMs = call.timeoutMs ?? options.timeoutMs ?? 120_000;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = call.signal ? AbortSignal.any([call.signal, timeout]) : timeout;
    try {
      const response = await doFetch(`${base}${path}`, { ...init, signal });
      if (!response.ok) throw await errorOf(response);
      return whole(response, await response.arrayBuffer());
    } catch (error) {
      if (call.signal?.aborted) throw call.signal.reason;
      if (timeout.aborted) throw new OptmarkError(`No whole answer from ${base} within ${timeoutMs} ms`, 0, 'timeout', undefined, undefined, { cause: error });
      if (error instanceof OptmarkError) throw error;
      throw new OptmarkError(`Cannot reach ${base}: ${(error as Error).message}${causeOf(error)}`, 0, 'network_error', undefined, undefined, { cause: error });
    }
  }

  /** Tries until an answer, a final error, or the tries run out. `unsafe`: a call the server may have acted on without answering is not tried again after a network error or a timeout. */
  async function call(path: string, init: () => RequestInit, options2: Pick<CallOptions, 'signal' | 'timeoutMs'>, unsafe = false): Promise<Response> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await once(path, init(), options2);
      } catch (error) {
        if (!(error instanceof OptmarkError) || !retryable(error, maxRetryAfter) || attempt >= maxTries) throw error;
        if (options.retryCallsInFlight === false && isCallsInFlight(error)) throw error;
        if (unsafe && (error.code === 'network_error' || error.code === 'timeout')) throw error;
        const jitter = random() * Math.min(backoff.max, backoff.base * 2 ** (attempt - 1));
        const delayMs = Math.round((error.retryAfter ?? 0) * 1000 + jitter);
        options.onRetry?.({ attempt, delayMs, error });
        await sleep(delayMs, options2.signal);
      }
    }
  }

  async function imageCall(operation: 'protect' | 'verify', image: ImageInput, callOptions: VerifyOptions): Promise<Response> {
    const bytes = await bytesOf(image);
    const key = callOptions.idempotencyKey ?? (await idempotencyKey(operation, bytes, callOptions));
    const name = callOptions.filename ?? (typeof File !== 'undefined' && image instanceof File ? image.name : 'image');
    const blob = new Blob([bytes as Uint8Array<ArrayBuffer>], { type: 'application/octet-stream' });
    const query = operation === 'verify' && callOptions.detail ? '?detail=full' : '';
    return call(
      `/api/v1/${operation}${query}`,
      () => {
        const form = new FormData();
        form.append('image', blob, name);
        return { method: 'POST', headers: { ...auth, 'Idempotency-Key': key }, body: form };
      },
      callOptions,
    );
  }

  return {
    async protect(image, callOptions = {}) {
      const response = await imageCall('protect', image, callOptions);
      const body = (await json(response)) as ProtectAnswer;
      const [action, value] = (response.headers.get('optmark-opt-out') ?? 'written ').split(' ') as ['kept' | 'written', string];
      return {
        ...body,
        ...info(response, 'protect'),
        bytes: fromBase64(body.imageBase64),
        optOut: { action, value },
        c2paInvalidated: response.headers.get('optmark-c2pa-manifest') === 'invalidated',
      };
    },
    async verify(image, callOptions = {}) {
      const response = await imageCall('verify', image, callOptions);
      return { ...((await json(response)) as VerifyAnswer), ...info(response, 'verify') };
    },
    async usage(callOptions = {}) {
      const response = await call('/api/v1/usage', () => ({ headers: auth }), callOptions);
      const { replayed: _, ...rest } = info(response, 'protect');
      return { ...((await json(response)) as Usage), ...rest };
    },
    async records(sha256, callOptions = {}) {
      const response = await call(`/api/v1/records/${encodeURIComponent(sha256)}`, () => ({ headers: auth }), callOptions);
      return { ...((await json(response)) as Records), requestId: response.headers.get('request-id') ?? '' };
    },
    async jwks(callOptions = {}) {
      return (await json(await call('/.well-known/jwks.json', () => ({}), callOptions))) as Jwks;
    },
    scans: {
      async create(input, callOptions = {}) {
        const body = JSON.stringify({ repository: input.repository, ...(input.ref !== undefined ? { ref: input.ref } : {}), ...(input.token !== undefined ? { token: input.token } : {}) });
        const response = await call('/api/v1/scans', () => ({ method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body }), callOptions, true);
        return (await json(response)) as { id: string; status: Scan['status']; links: Scan['links'] };
      },
      async list(callOptions = {}) {
        return ((await json(await call('/api/v1/scans', () => ({ headers: auth }), callOptions))) as { scans: Scan[] }).scans;
      },
      async get(id, callOptions = {}) {
        return (await json(await call(`/api/v1/scans/${encodeURIComponent(id)}`, () => ({ headers: auth }), callOptions))) as Scan;
      },
      async wait(id, callOptions = {}) {
        for (;;) {
          const scan = await this.get(id, callOptions);
          callOptions.onProgress?.(scan);
          if (scan.status === 'done' || scan.status === 'failed' || scan.status === 'cancelled') return scan;
          await sleep(callOptions.intervalMs ?? 1000, callOptions.signal);
        }
      },
      async report(id, callOptions = {}) {
        return (await json(await call(`/api/v1/scans/${encodeURIComponent(id)}/report`, () => ({ headers: auth }), callOptions))) as ScanReport;
      },
      async reportCsv(id, callOptions = {}) {
        return (await call(`/api/v1/scans/${encodeURIComponent(id)}/report`, () => ({ headers: { ...auth, Accept: 'text/csv' } }), callOptions)).text();
      },
      async cancel(id, callOptions = {}) {
        return (await json(await call(`/api/v1/scans/${encodeURIComponent(id)}`, () => ({ method: 'DELETE', headers: auth }), callOptions))) as Scan;
      },
      async fix(id, fix, callOptions = {}) {
        const body = JSON.stringify({ confirm: fix.confirm, ...(fix.token !== undefined ? { token: fix.token } : {}) });
        return (await call(`/api/v1/scans/${encodeURIComponent(id)}/fix`, () => ({ method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body }), callOptions, true)).blob();
      },
      async fixAndPush(id, fix, callOptions = {}) {
        const body = JSON.stringify({ confirm: fix.confirm, push: true, token: fix.token });
        return (await json(await call(`/api/v1/scans/${encodeURIComponent(id)}/fix`, () => ({ method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body }), callOptions, true))) as FixPushed;
      },
    },
  };
}

/**
 * Why fetch failed, as " (ECONNREFUSED)": its own message is only "fetch
 * failed", and the reason (a refused connection, a name not found, a
 * certificate) is in its cause.
 */
function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  if (typeof cause?.code === 'string') return ` (${cause.code})`;
  if (typeof cause?.message === 'string' && cause.message !== '') return ` (${cause.message})`;
  return '';
}

function retryable(error: OptmarkError, maxRetryAfter: number): boolean {
  return RETRYABLE_CODES.includes(error.code) && (error.retryAfter === undefined || error.retryAfter <= maxRetryAfter);
}

async function bytesOf(image: ImageInput): Promise<Uint8Array> {
  if (image instanceof Blob) return new Uint8Array(await image.arrayBuffer());
  if (image instanceof ArrayBuffer) return new Uint8Array(image);
  return new Uint8Array(image.buffer as ArrayBuffer, image.byteOffset, image.byteLength);
}

/** An answer whose body has arrived: a Response over those bytes, with the original's status, headers and URL. */
function whole(response: Response, body: ArrayBuffer): Response {
  const copy = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  Object.defineProperty(copy, 'url', { value: response.url });
  return copy;
}

async function json(response: Response): Promise<unknown> {
  try {
    return await response.json();
  } catch (error) {
    throw new OptmarkError(`The answer of ${response.url} is not JSON`, response.status, 'unexpected_response', response.headers.get('request-id') ?? undefined, undefined, { cause: error });
  }
}

async function errorOf(response: Response): Promise<OptmarkError> {
  const requestId = response.headers.get('request-id') ?? undefined;
  const retryAfter = seconds(response.headers.get('retry-after'));
  let body: { error?: unknown; code?: unknown; requestId?: unknown } | undefined;
  try {
    body = (await response.json()) as typeof body;
  } catch {
    body = undefined;
  }
  if (body && typeof body.code === 'string' && typeof body.error === 'string') {
    return new OptmarkError(describe(body.error, body.code, retryAfter), response.status, body.code as ErrorCode, typeof body.requestId === 'string' ? body.requestId : requestId, retryAfter);
  }
  // Not the API's answer (a proxy's page): a gateway that failed is a network error, anything else is not to be retried.
  const code: ErrorCode = [502, 503, 504].includes(response.status) ? 'network_error' : 'unexpected_response';
  return new OptmarkError(`HTTP ${response.status} from ${response.url}, not an answer of the optmark API`, response.status, code, requestId, retryAfter);
}

/** The server's message, and for the monthly limit when it ends. */
function describe(message: string, code: string, retryAfter: number | undefined): string {
  if (code !== 'quota_exceeded' || retryAfter === undefined || /resets at/.test(message)) return message;
  return `${message}; it resets at ${new Date(Math.floor(Date.now() / 1000) * 1000 + retryAfter * 1000).toISOString()}`;
}

function seconds(header: string | null): number | undefined {
  if (header === null) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim());
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

function info(response: Response, operation: string): AnswerInfo {
  return {
    requestId: response.headers.get('request-id') ?? '',
    replayed: response.headers.get('idempotent-replayed') === 'true',
    allowance: allowance(response.headers.get('ratelimit'), operation),
  };
}

/** The `"operation";r=N;t=N` item of a RateLimit field. */
function allowance(header: string | null, operation: string): Allowance | undefined {
  for (const item of (header ?? '').split(',')) {
    const match = /^\s*"([a-z]+)"\s*;\s*r=(\d+)\s*;\s*t=(\d+)\s*$/.exec(item);
    if (match && match[1] === operation) return { operation, remaining: Number(match[2]), resetsIn: Number(match[3]) };
  }
  return undefined;
}

function fromBase64(text: string): Uint8Array {
  const native = (Uint8Array as unknown as { fromBase64?: (s: string) => Uint8Array }).fromBase64;
  if (native) return native(text);
  const buffer = (globalThis as { Buffer?: { from(s: string, e: string): Uint8Array } }).Buffer;
  if (buffer) return new Uint8Array(buffer.from(text, 'base64'));
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', abort, { once: true });
  });
}
