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
import type { components, operations } from './api-types.js';

export type ProtectAnswer = components['schemas']['ProtectResult'];
type ProtectFields = operations['protect']['requestBody']['content']['multipart/form-data'];
/** A Data Mining code protect can write. */
export type ProtectValue = NonNullable<ProtectFields['value']>;
export type VerifyAnswer = components['schemas']['VerifyResult'];
export type VerifyDetails = NonNullable<VerifyAnswer['details']>;
export type Usage = components['schemas']['Usage'];
export type Jwks = components['schemas']['Jwks'];
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
  /** Whether the file's own opt-out value was kept, or the value asked for (or the default) written (the Optmark-Opt-Out header). */
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

export interface ProtectOptions extends CallOptions {
  /** The Data Mining code to write, over any opt-out the file carries (default: the file's own kept, else DMI-PROHIBITED-AIMLTRAINING). */
  readonly value?: ProtectValue;
  /** With DMI-PROHIBITED-SEECONSTRAINT, and only with it: the constraints it points to, written into plus:OtherConstraints (one line, at most 1,000 characters). */
  readonly otherConstraints?: string;
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
  /** Told about each retry before its wait. */
  readonly onRetry?: (retry: { readonly attempt: number; readonly delayMs: number; readonly error: OptmarkError }) => void;
  /** Another fetch (a proxy's, a test's). */
  readonly fetch?: typeof fetch;
  /** A number in [0, 1) for the jitter (default Math.random). */
  readonly random?: () => number;
}

export interface OptmarkClient {
  protect(image: ImageInput, options?: ProtectOptions): Promise<ProtectResult>;
  verify(image: ImageInput, options?: VerifyOptions): Promise<VerifyResult>;
  usage(options?: Pick<CallOptions, 'signal' | 'timeoutMs'>): Promise<Usage & Omit<AnswerInfo, 'replayed'>>;
  /** The deployment's public signing keys (no key needed). */
  jwks(options?: Pick<CallOptions, 'signal' | 'timeoutMs'>): Promise<Jwks>;
}

/**
 * The Idempotency-Key of an image call: the operation, the file's SHA-256
 * and the options (protect's value and constraints text as 16 hex digits of
 * their own SHA-256, when given).
 */
export async function idempotencyKey(
  operation: 'protect' | 'verify',
  bytes: Uint8Array,
  options: { detail?: boolean; value?: string; otherConstraints?: string } = {},
): Promise<string> {
  const hexOf = async (data: Uint8Array) => Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', data as Uint8Array<ArrayBuffer>)), (b) => b.toString(16).padStart(2, '0')).join('');
  const hex = await hexOf(bytes);
  let suffix = '';
  if (operation === 'verify' && options.detail) suffix = '-detail';
  if (operation === 'protect' && (options.value !== undefined || options.otherConstraints !== undefined)) {
    suffix = `-${(await hexOf(new TextEncoder().encode(JSON.stringify([options.value ?? null, options.otherConstraints ?? null])))).slice(0, 16)}`;
  }
  return `optmark-v1-${operation}-${hex}${suffix}`;
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

  /** One try: the answer, or an OptmarkError. */
  async function once(path: string, init: RequestInit, call: Pick<CallOptions, 'signal' | 'timeoutMs'>): Promise<Response> {
    call.signal?.throwIfAborted();
    const timeout = AbortSignal.timeout(call.timeoutMs ?? options.timeoutMs ?? 120_000);
    const signal = call.signal ? AbortSignal.any([call.signal, timeout]) : timeout;
    let response: Response;
    try {
      response = await doFetch(`${base}${path}`, { ...init, signal });
    } catch (error) {
      if (call.signal?.aborted) throw call.signal.reason;
      if (timeout.aborted) throw new OptmarkError(`No answer from ${base} within ${call.timeoutMs ?? options.timeoutMs ?? 120_000} ms`, 0, 'timeout', undefined, undefined, { cause: error });
      throw new OptmarkError(`Cannot reach ${base}: ${(error as Error).message}`, 0, 'network_error', undefined, undefined, { cause: error });
    }
    if (response.ok) return response;
    throw await errorOf(response);
  }

  /** Tries until an answer, a final error, or the tries run out. */
  async function call(path: string, init: () => RequestInit, options2: Pick<CallOptions, 'signal' | 'timeoutMs'>): Promise<Response> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await once(path, init(), options2);
      } catch (error) {
        if (!(error instanceof OptmarkError) || !retryable(error, maxRetryAfter) || attempt >= maxTries) throw error;
        const jitter = random() * Math.min(backoff.max, backoff.base * 2 ** (attempt - 1));
        const delayMs = Math.round((error.retryAfter ?? 0) * 1000 + jitter);
        options.onRetry?.({ attempt, delayMs, error });
        await sleep(delayMs, options2.signal);
      }
    }
  }

  async function imageCall(operation: 'protect' | 'verify', image: ImageInput, callOptions: VerifyOptions & ProtectOptions): Promise<Response> {
    const bytes = await bytesOf(image);
    const key = callOptions.idempotencyKey ?? (await idempotencyKey(operation, bytes, callOptions));
    const name = callOptions.filename ?? (typeof File !== 'undefined' && image instanceof File ? image.name : 'image');
    const blob = new Blob([bytes as Uint8Array<ArrayBuffer>], { type: 'application/octet-stream' });
    const query = operation === 'verify' && callOptions.detail ? '?detail=full' : '';
    return call(
      `/api/v1/${operation}${query}`,
      () => {
        const form = new FormData();
        if (operation === 'protect' && callOptions.value !== undefined) form.append('value', callOptions.value);
        if (operation === 'protect' && callOptions.otherConstraints !== undefined) form.append('otherConstraints', callOptions.otherConstraints);
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
    async jwks(callOptions = {}) {
      return (await json(await call('/.well-known/jwks.json', () => ({}), callOptions))) as Jwks;
    },
  };
}

function retryable(error: OptmarkError, maxRetryAfter: number): boolean {
  return RETRYABLE_CODES.includes(error.code) && (error.retryAfter === undefined || error.retryAfter <= maxRetryAfter);
}

async function bytesOf(image: ImageInput): Promise<Uint8Array> {
  if (image instanceof Blob) return new Uint8Array(await image.arrayBuffer());
  if (image instanceof ArrayBuffer) return new Uint8Array(image);
  return new Uint8Array(image.buffer as ArrayBuffer, image.byteOffset, image.byteLength);
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
