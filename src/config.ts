/**
 * The only reader of process.env. Parses and checks every setting once, at
 * start, and returns a frozen, typed object; a bad value stops the start with
 * a message naming the variable.
 */
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { DEFAULT_MAX_IMAGE_PIXELS } from './app/image-size.js';
import { DEFAULT_LIMIT_SEEDS, type LimitSeeds } from './app/ports.js';

export interface Config {
  /** TCP port of the HTTP server (PORT, default 8080; 0 picks a free one). */
  readonly port: number;
  /** Interface to listen on (HOST, default 127.0.0.1). */
  readonly host: string;
  /** Embedded database, lock file, admin socket (OPTMARK_DATA_DIR, default ./data). */
  readonly dataDir: string;
  /** A postgres:// URL switches from the embedded database to PostgreSQL (DATABASE_URL). */
  readonly databaseUrl: string | undefined;
  /**
   * What a new database's limits table starts with for the Pro and Lifetime
   * plans: monthly protect calls per account (OPTMARK_PROTECT_LIMIT, default
   * 10000) and monthly verify calls (OPTMARK_VERIFY_LIMIT, default 50000).
   * Read only when the table is created; afterwards the database decides.
   */
  readonly limitSeeds: LimitSeeds;
  /** Which of those variables this environment sets (compared with the database at start). */
  readonly limitSettingsGiven: readonly ('OPTMARK_PROTECT_LIMIT' | 'OPTMARK_VERIFY_LIMIT' | 'OPTMARK_SCAN_CEILING' | 'OPTMARK_VAULT_BYTES')[];
  /** Largest accepted image, in bytes (OPTMARK_MAX_UPLOAD_BYTES, default 25 MB = 26214400). */
  readonly maxUploadBytes: number;
  /** pino level (OPTMARK_LOG_LEVEL, default info; 'silent' turns logging off). */
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Seconds a client may take to send its headers (OPTMARK_HEADERS_TIMEOUT, default 10). */
  readonly headersTimeoutSeconds: number;
  /** Seconds a whole request may take to arrive, upload included, and its processing after it (OPTMARK_REQUEST_TIMEOUT, default 120). */
  readonly requestTimeoutSeconds: number;
  /**
   * Seconds a server on PostgreSQL may go without renewing its lease before
   * another gives back the units its calls reserved (a crash)
   * (OPTMARK_RESERVATION_TTL, default 300); more than twice the request
   * timeout, the longest a call can last.
   */
  readonly reservationTtlSeconds: number;
  /** The deployment's public address, the issuer in provenance tags (OPTMARK_BASE_URL; default http://HOST:PORT). */
  readonly baseUrl: string | undefined;
  /**
   * Image calls in flight at once, all keys together; more get 503
   * server_busy (OPTMARK_MAX_IN_FLIGHT, default 32). While an account waits
   * for one, each other account holds at most a quarter of them.
   */
  readonly maxInFlight: number;
  /** Image calls in flight at once with one API key; more get 429 too_many_requests (OPTMARK_MAX_IN_FLIGHT_PER_KEY, default 8). */
  readonly maxInFlightPerKey: number;
  /** An upload that delivers less than 64 KiB in this many seconds gets 408 (OPTMARK_UPLOAD_STALL_SECONDS, default 20). */
  readonly uploadStallSeconds: number;
  /**
   * Bytes per second an upload must average over its whole body, judged from
   * 10 s into it; slower gets 408 (OPTMARK_MIN_UPLOAD_RATE, default 32768 =
   * 32 KiB/s; 0 turns it off).
   */
  readonly minUploadRate: number;
  /**
   * Requests with an invalid API key one client address may make per minute;
   * past that, its requests with a key get 429 too_many_requests until the
   * minute ends (OPTMARK_AUTH_FAILURES_PER_MINUTE, default 100; 0 turns it off).
   */
  readonly authFailuresPerMinute: number;
  /**
   * Addresses or CIDR ranges of reverse proxies whose X-Forwarded-For names
   * the client (OPTMARK_TRUST_PROXY, comma-separated; default none: the
   * client is the TCP peer).
   */
  readonly trustProxy: readonly string[] | undefined;
  /** Largest image, in pixels, the pixel decoder takes (OPTMARK_MAX_PIXELS, default 100000000). */
  readonly maxPixels: number;
  /**
   * Largest image, in pixels (declared width x height), protect and verify
   * take at all; larger gets 422 image_dimensions_too_large before any other
   * work (OPTMARK_MAX_IMAGE_PIXELS, default 268402689 = 16383 x 16383).
   */
  readonly maxImagePixels: number;
  /**
   * CPU-seconds of work per account per minute that calls may cost when they
   * fail after their upload was processed or are given up by their client;
   * past it the account's calls get 429 too_many_failed_calls until the minute
   * ends (OPTMARK_FAILED_WORK_SECONDS, default 30; 0 turns it off; per process).
   */
  readonly failedWorkSeconds: number;
  /** Pixel decodes run at once (OPTMARK_DECODE_CONCURRENCY, default: the number of CPUs). */
  readonly decodeConcurrency: number;
  /** Decodes that may wait for a turn; past that, 503 server_busy (OPTMARK_DECODE_QUEUE, default 8). */
  readonly decodeQueue: number;
  /** The fingerprint secrets file (OPTMARK_FINGERPRINT_KEYS; default DATA_DIR/fingerprint-keys.json). Share it between servers. */
  readonly fingerprintKeysPath: string;
  /** Worker threads that run fingerprint detection (OPTMARK_FINGERPRINT_THREADS, default: the number of CPUs). */
  readonly fingerprintThreads: number;
  /** Detections that may wait for a thread; past that, 503 server_busy (OPTMARK_FINGERPRINT_QUEUE, default 32). */
  readonly fingerprintQueue: number;
  /** An SMTP server for invitations and password resets (OPTMARK_SMTP_URL, smtp:// or smtps://; default none: links are shown instead of mailed). */
  readonly smtpUrl: string | undefined;
  /**
   * Whether visitors may sign up for a Free account themselves
   * (OPTMARK_SIGNUP=open; default off: operators open accounts). Each sign-up
   * is confirmed by a link mailed to its address, so it needs OPTMARK_SMTP_URL.
   */
  readonly signup: boolean;
  /** The From of those mails (OPTMARK_MAIL_FROM, default "optmark <no-reply@HOST>"). */
  readonly mailFrom: string;
  /**
   * Seconds before a reset or sign-up link's mail that the SMTP server did not
   * take is tried again; the waits then double, 6 tries in all
   * (OPTMARK_MAIL_RETRY_SECONDS, default 30: the last try about half an hour on).
   */
  readonly mailRetrySeconds: number;
  /** The Ed25519 key ring file (OPTMARK_SIGNING_KEYS; default DATA_DIR/signing-keys.json). Share it between servers. */
  readonly signingKeysPath: string;
  /** Repository scans (docs/scans.md). */
  readonly scans: ScanSettings;
  /**
   * Worker processes of `optmark serve` behind its one port (OPTMARK_WORKERS;
   * default the number of CPUs with DATABASE_URL, 1 on the embedded
   * database, which has one owner process and so refuses more).
   */
  readonly workers: number;
  /** The Private Vault's key file (OPTMARK_VAULT_KEYS; default DATA_DIR/vault-keys.json). Share it between servers; losing it loses the vault. */
  readonly vaultKeysPath: string;
  /** Where the vault's sealed files are kept without a bucket: DATA_DIR/vault. */
  readonly vaultDir: string;
  /** An S3-compatible bucket for the vault instead of vaultDir, for several servers (OPTMARK_VAULT_S3_URL; docs/vault.md). */
  readonly vaultS3Url: string | undefined;
}

/** Where and how much a repository scan may fetch and check. */
export interface ScanSettings {
  /**
   * URL prefixes a scanned repository must start with (OPTMARK_SCAN_SOURCES,
   * comma-separated; default the public forges https://github.com/,
   * https://gitlab.com/, https://codeberg.org/). file:// only where listed.
   */
  readonly sources: readonly string[];
  /** Bytes a scan may fetch and hold (OPTMARK_SCAN_MAX_BYTES, default 1 GiB). */
  readonly maxBytes: number;
  /** Files a scanned tree may have (OPTMARK_SCAN_MAX_FILES, default 100000). */
  readonly maxFiles: number;
  /** Seconds a scan may take, fetch included (OPTMARK_SCAN_MAX_SECONDS, default 600). */
  readonly maxSeconds: number;
  /** Scans one server runs at once (OPTMARK_SCAN_CONCURRENCY, default 1). */
  readonly concurrency: number;
}

export const DEFAULT_SCAN_SOURCES: readonly string[] = Object.freeze(['https://github.com/', 'https://gitlab.com/', 'https://codeberg.org/']);

/** The allowed-source list: each an http(s)://, git:// or file:// URL prefix, normalised to end with "/". */
export function scanSources(env: Env): readonly string[] {
  const raw = env.OPTMARK_SCAN_SOURCES?.trim();
  if (!raw) return DEFAULT_SCAN_SOURCES;
  return Object.freeze(
    raw.split(',').map((entry) => {
      const text = entry.trim();
      let url: URL;
      try {
        url = new URL(text);
      } catch {
        throw new ConfigError(`OPTMARK_SCAN_SOURCES must be a comma-separated list of URL prefixes, got ${JSON.stringify(text)}`);
      }
      if (!['https:', 'http:', 'git:', 'file:'].includes(url.protocol) || url.username || url.password || url.search || url.hash) {
        throw new ConfigError(`OPTMARK_SCAN_SOURCES: each prefix must be an https://, http://, git:// or file:// URL without credentials, query or fragment, got ${JSON.stringify(text)}`);
      }
      if (url.protocol === 'file:' && (url.host !== '' || url.pathname === '/')) {
        throw new ConfigError(`OPTMARK_SCAN_SOURCES: a file:// prefix must name a directory other than the root (file:///srv/repositories/), got ${JSON.stringify(text)}`);
      }
      const href = url.href;
      return href.endsWith('/') ? href : `${href}/`;
    }),
  );
}

export class ConfigError extends Error {}

/** OPTMARK_WORKERS, checked against the database: several workers need PostgreSQL. */
function workerCount(env: Env, databaseUrl: string | undefined): number {
  const workers = integer(env, 'OPTMARK_WORKERS', databaseUrl ? availableParallelism() : 1, 1, 256);
  if (workers > 1 && !databaseUrl) {
    throw new ConfigError(
      `OPTMARK_WORKERS=${workers} needs PostgreSQL (DATABASE_URL): the embedded database belongs to one process, so it serves with one worker. Unset OPTMARK_WORKERS, or set DATABASE_URL (docs/operations.md#workers)`,
    );
  }
  return workers;
}

type Env = Readonly<Record<string, string | undefined>>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got ${JSON.stringify(raw)}`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

/** A comma-separated list of IP addresses and CIDR ranges (proxy-addr's syntax, without its named ranges). */
function addressList(env: Env, name: string): string[] | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  const list = raw.split(',').map((entry) => {
    const text = entry.trim();
    const [address = '', prefix, ...rest] = text.split('/');
    const family = isIP(address);
    const bits = family === 4 ? 32 : 128;
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits);
    if (family === 0 || rest.length > 0 || !prefixOk) {
      throw new ConfigError(`${name} must be a comma-separated list of IP addresses or CIDR ranges (such as 10.0.0.0/8), got ${JSON.stringify(text)}`);
    }
    return text;
  });
  return Object.freeze(list) as string[];
}

/**
 * What `optmark protect|verify --server` needs to call a deployment:
 * OPTMARK_URL (its address) and OPTMARK_API_KEY; the command's --server and
 * --key-file come first. Read apart from loadConfig: calling a server needs
 * none of the server's settings.
 */
export interface ClientSettings {
  readonly url: string | undefined;
  readonly apiKey: string | undefined;
}

export function loadClientSettings(env: Env = process.env): ClientSettings {
  const url = env.OPTMARK_URL?.trim().replace(/\/+$/, '') || undefined;
  if (url !== undefined && !/^https?:\/\/[^\s/]+(\/\S*)?$/.test(url)) throw new ConfigError('OPTMARK_URL must be an http:// or https:// URL');
  return Object.freeze({ url, apiKey: env.OPTMARK_API_KEY?.trim() || undefined });
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export function loadConfig(env: Env = process.env): Config {
  const databaseUrl = env.DATABASE_URL?.trim() || undefined;
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must be a postgres:// or postgresql:// URL');
  }
  const logLevel = (env.OPTMARK_LOG_LEVEL?.trim() || 'info') as Config['logLevel'];
  const baseUrl = env.OPTMARK_BASE_URL?.trim().replace(/\/+$/, '') || undefined;
  if (baseUrl !== undefined && !/^https?:\/\/[^\s/]+(\/\S*)?$/.test(baseUrl)) throw new ConfigError('OPTMARK_BASE_URL must be an http:// or https:// URL');
  const dataDir = resolve(env.OPTMARK_DATA_DIR?.trim() || './data');
  const smtpUrl = env.OPTMARK_SMTP_URL?.trim() || undefined;
  if (smtpUrl !== undefined && !/^smtps?:\/\/\S+$/.test(smtpUrl)) throw new ConfigError('OPTMARK_SMTP_URL must be an smtp:// or smtps:// URL');
  const signupSetting = env.OPTMARK_SIGNUP?.trim() || 'off';
  if (signupSetting !== 'open' && signupSetting !== 'off') throw new ConfigError(`OPTMARK_SIGNUP must be open or off, got ${JSON.stringify(signupSetting)}`);
  if (signupSetting === 'open' && smtpUrl === undefined) {
    throw new ConfigError('OPTMARK_SIGNUP=open needs OPTMARK_SMTP_URL: a sign-up is confirmed by a link mailed to the address it gives');
  }
  const vaultS3Url = env.OPTMARK_VAULT_S3_URL?.trim() || undefined;
  if (vaultS3Url !== undefined && !/^(s3:\/\/[^\s/]+|https?:\/\/[^\s/]+\/[^\s/?]+)(\/[^\s?]*)?(\?\S*)?$/.test(vaultS3Url)) {
    throw new ConfigError('OPTMARK_VAULT_S3_URL must be s3://BUCKET[/PREFIX] or http(s)://[KEY:SECRET@]HOST[:PORT]/BUCKET[/PREFIX]');
  }
  if (!LEVELS.includes(logLevel)) throw new ConfigError(`OPTMARK_LOG_LEVEL must be one of ${LEVELS.join(', ')}`);
  const headersTimeoutSeconds = integer(env, 'OPTMARK_HEADERS_TIMEOUT', 10, 1, 600);
  const requestTimeoutSeconds = integer(env, 'OPTMARK_REQUEST_TIMEOUT', 120, 1, 3600);
  // Node's server never applies a request timeout shorter than the headers
  // timeout (a slow body was seen to run on past it): refuse the pair.
  if (headersTimeoutSeconds > requestTimeoutSeconds) {
    throw new ConfigError(`OPTMARK_HEADERS_TIMEOUT (${headersTimeoutSeconds}) must not be longer than OPTMARK_REQUEST_TIMEOUT (${requestTimeoutSeconds})`);
  }
  // A call takes at most the request timeout to arrive and as long again to be
  // processed (http/call-work.ts): a lease shorter than that would let a slow
  // server's reservations be taken for a crash's.
  const reservationTtlSeconds = integer(env, 'OPTMARK_RESERVATION_TTL', 300, 1, 86_400);
  if (reservationTtlSeconds <= 2 * requestTimeoutSeconds) {
    throw new ConfigError(
      `OPTMARK_RESERVATION_TTL (${reservationTtlSeconds}) must be more than twice OPTMARK_REQUEST_TIMEOUT (${requestTimeoutSeconds}): a call may take that long, its upload and then its processing`,
    );
  }
  return Object.freeze({
    port: integer(env, 'PORT', 8080, 0, 65535),
    host: env.HOST?.trim() || '127.0.0.1',
    dataDir,
    databaseUrl,
    limitSeeds: Object.freeze({
      ...DEFAULT_LIMIT_SEEDS,
      protectPerMonth: integer(env, 'OPTMARK_PROTECT_LIMIT', DEFAULT_LIMIT_SEEDS.protectPerMonth, 0, 1_000_000_000),
      verifyPerMonth: integer(env, 'OPTMARK_VERIFY_LIMIT', DEFAULT_LIMIT_SEEDS.verifyPerMonth, 0, 1_000_000_000),
      scanCeiling: integer(env, 'OPTMARK_SCAN_CEILING', DEFAULT_LIMIT_SEEDS.scanCeiling, 0, 1_000_000_000),
      vaultBytes: integer(env, 'OPTMARK_VAULT_BYTES', DEFAULT_LIMIT_SEEDS.vaultBytes, 0, Number.MAX_SAFE_INTEGER),
    }),
    limitSettingsGiven: Object.freeze((['OPTMARK_PROTECT_LIMIT', 'OPTMARK_VERIFY_LIMIT', 'OPTMARK_SCAN_CEILING', 'OPTMARK_VAULT_BYTES'] as const).filter((name) => (env[name] ?? '').trim() !== '')),
    maxUploadBytes: integer(env, 'OPTMARK_MAX_UPLOAD_BYTES', 26_214_400, 1, 512 * 1024 * 1024),
    logLevel,
    headersTimeoutSeconds,
    requestTimeoutSeconds,
    reservationTtlSeconds,
    maxInFlight: integer(env, 'OPTMARK_MAX_IN_FLIGHT', 32, 1, 100_000),
    maxInFlightPerKey: integer(env, 'OPTMARK_MAX_IN_FLIGHT_PER_KEY', 8, 1, 100_000),
    uploadStallSeconds: integer(env, 'OPTMARK_UPLOAD_STALL_SECONDS', 20, 1, 3600),
    minUploadRate: integer(env, 'OPTMARK_MIN_UPLOAD_RATE', 32 * 1024, 0, 1024 * 1024 * 1024),
    authFailuresPerMinute: integer(env, 'OPTMARK_AUTH_FAILURES_PER_MINUTE', 100, 0, 1_000_000),
    failedWorkSeconds: integer(env, 'OPTMARK_FAILED_WORK_SECONDS', 30, 0, 3600),
    trustProxy: addressList(env, 'OPTMARK_TRUST_PROXY'),
    maxPixels: integer(env, 'OPTMARK_MAX_PIXELS', 100_000_000, 1, 0x3fff * 0x3fff),
    // The default is explained in app/image-size.ts. The upper bound is what
    // a number holds exactly; a PNG may declare up to 2^62 pixels.
    maxImagePixels: integer(env, 'OPTMARK_MAX_IMAGE_PIXELS', DEFAULT_MAX_IMAGE_PIXELS, 1, Number.MAX_SAFE_INTEGER),
    decodeConcurrency: integer(env, 'OPTMARK_DECODE_CONCURRENCY', availableParallelism(), 1, 256),
    decodeQueue: integer(env, 'OPTMARK_DECODE_QUEUE', 8, 0, 10_000),
    baseUrl,
    fingerprintKeysPath: resolve(env.OPTMARK_FINGERPRINT_KEYS?.trim() || join(dataDir, 'fingerprint-keys.json')),
    fingerprintThreads: integer(env, 'OPTMARK_FINGERPRINT_THREADS', availableParallelism(), 1, 256),
    fingerprintQueue: integer(env, 'OPTMARK_FINGERPRINT_QUEUE', 32, 0, 100_000),
    signingKeysPath: resolve(env.OPTMARK_SIGNING_KEYS?.trim() || join(dataDir, 'signing-keys.json')),
    vaultKeysPath: resolve(env.OPTMARK_VAULT_KEYS?.trim() || join(dataDir, 'vault-keys.json')),
    vaultDir: join(dataDir, 'vault'),
    vaultS3Url,
    smtpUrl,
    signup: signupSetting === 'open',
    workers: workerCount(env, databaseUrl),
    scans: Object.freeze({
      sources: scanSources(env),
      maxBytes: integer(env, 'OPTMARK_SCAN_MAX_BYTES', 1024 ** 3, 1024, Number.MAX_SAFE_INTEGER),
      maxFiles: integer(env, 'OPTMARK_SCAN_MAX_FILES', 100_000, 1, 10_000_000),
      maxSeconds: integer(env, 'OPTMARK_SCAN_MAX_SECONDS', 600, 1, 86_400),
      concurrency: integer(env, 'OPTMARK_SCAN_CONCURRENCY', 1, 1, 64),
    }),
    mailFrom: env.OPTMARK_MAIL_FROM?.trim() || `optmark <no-reply@${baseUrl ? new URL(baseUrl).hostname : 'localhost'}>`,
    mailRetrySeconds: integer(env, 'OPTMARK_MAIL_RETRY_SECONDS', 30, 1, 3600),
  });
}

/**
 * The glibc allocator settings `optmark serve` runs with
 * (docs/operations.md#memory-allocator): blocks under 64 MB from the heap,
 * up to 256 MB of freed memory kept for reuse.
 */
export const SERVE_MALLOC_TUNABLES: Readonly<Record<string, string>> = {
  'glibc.malloc.mmap_threshold': '67108864',
  'glibc.malloc.trim_threshold': '268435456',
};

/**
 * GLIBC_TUNABLES with the server's allocator settings added where the
 * environment does not set them already (a value of the operator's own
 * wins), or undefined when there is nothing to add. glibc reads the
 * variable when the process starts, so the server re-executes itself once
 * with it (src/cli/allocator.ts).
 */
export function servingTunables(env: Env = process.env): string | undefined {
  const given = (env.GLIBC_TUNABLES ?? '').split(':').filter((entry) => entry !== '');
  const named = new Set(given.map((entry) => entry.split('=')[0]));
  const missing = Object.entries(SERVE_MALLOC_TUNABLES).filter(([name]) => !named.has(name));
  if (missing.length === 0) return undefined;
  return [...given, ...missing.map(([name, value]) => `${name}=${value}`)].join(':');
}
