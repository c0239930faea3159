/**
 * Repeated image calls and browser batches (the API and the dashboard alike).
 *
 * Idempotency: two calls match when the account, the route, the
 * `Idempotency-Key` (at most 255 characters), the SHA-256 of the image and
 * the options are equal; the boundary, the part headers and the file name
 * do not matter. A repeat that arrives while the first runs waits for it and
 * gets the same answer; a repeat of a 200 is answered again from the image it
 * resends (protect signs with the first call's tag time and key, and Ed25519
 * is deterministic, so the bytes are the same) and counts nothing; a repeat
 * of a refusal gets the same refusal. The same key with another image or
 * other options is 422 `idempotency_key_reused`. Only outcomes are kept,
 * never images, for 24 hours.
 *
 * Batches: the server creates one (valid 24 hours) and takes at most 25
 * distinct idempotency tokens into it, so a file retried is not a new file;
 * a 26th distinct one is 409 `batch_full`.
 */
import { createHash, randomBytes } from 'node:crypto';
import { BatchFullError, BatchNotFoundError, IdempotencyKeyReusedError, InvalidOptionError, ServerBusyError } from '../errors.js';
import type { Clock } from './ports.js';

export const IDEMPOTENCY_HOURS = 24;
export const BATCH_HOURS = 24;
export const BATCH_LIMIT = 25;
const KEY = /^[\x21-\x7e]{1,255}$/;

/** What is kept of a call's answer: its status, and its body without any image. */
export interface StoredOutcome {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

export interface IdempotencyRow {
  readonly requestHash: string;
  readonly state: 'running' | 'done';
  readonly outcome: StoredOutcome | undefined;
  readonly createdAt: Date;
}

export interface RepeatStore {
  /** Insert a running row; false when a row exists (and has not expired). An expired row, or a running one older than `staleBefore`, is replaced. */
  claim(accountId: string, route: string, key: string, requestHash: string, now: Date, expiresAt: Date, staleBefore: Date): Promise<boolean>;
  find(accountId: string, route: string, key: string, now: Date): Promise<IdempotencyRow | undefined>;
  finish(accountId: string, route: string, key: string, outcome: StoredOutcome): Promise<void>;
  /** The first call did not finish (its process stops, or an error before any answer): the key is free again. */
  release(accountId: string, route: string, key: string): Promise<void>;
  createBatch(batch: { id: string; accountId: string; userId: string; createdAt: Date; expiresAt: Date }): Promise<void>;
  /** Add the token to the batch (of this account, unexpired) unless it holds `limit` distinct tokens already: 'added', 'known', 'full' or 'missing'. */
  admitToBatch(batchId: string, accountId: string, token: string, limit: number, now: Date): Promise<'added' | 'known' | 'full' | 'missing'>;
  sweep(now: Date): Promise<void>;
}

/** The outcome of looking a call up: run it (the key is claimed), answer from a finished first call, or (no key) just run. */
export type Repeat =
  | { readonly kind: 'first'; finish(outcome: StoredOutcome): Promise<void>; release(): Promise<void> }
  | { readonly kind: 'repeat'; readonly outcome: StoredOutcome }
  | { readonly kind: 'none' };

export interface Repeats {
  /** The options part of the request's fingerprint (value, layers, detail), with the image's SHA-256. */
  requestHash(imageSha256: string, options: Record<string, unknown>): string;
  /**
   * Look the call up. A repeat of a call still running waits (polling) until
   * it finishes or `waitMs` passes; then, if it is still running, it is
   * answered 503 server_busy (with Retry-After), which clients retry.
   */
  begin(accountId: string, route: string, key: string | undefined, requestHash: string, waitMs: number): Promise<Repeat>;
  /** Whether the call under this key returned 200 (its repeat is answered even when the month's allowance is used up: it counts nothing). */
  succeeded(accountId: string, route: string, key: string): Promise<boolean>;
  createBatch(accountId: string, userId: string): Promise<{ id: string; expiresAt: Date; limit: number }>;
  admitToBatch(batchId: string, accountId: string, token: string | undefined): Promise<void>;
}

export function checkIdempotencyKey(key: string | undefined): string | undefined {
  if (key === undefined) return undefined;
  if (!KEY.test(key)) throw new InvalidOptionError('Idempotency-Key', 'from 1 to 255 visible ASCII characters', key.length > 40 ? `${key.slice(0, 40)}…` : key);
  return key;
}

const POLL_MS = 100;

export function createRepeats(deps: { store: RepeatStore; clock: Clock; requestTimeoutMs: number }): Repeats {
  const { store, clock } = deps;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  return {
    requestHash(imageSha256, options) {
      const sorted = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : 1)));
      return createHash('sha256').update(imageSha256).update('\n').update(JSON.stringify(sorted)).digest('hex');
    },

    async begin(accountId, route, key, requestHash, waitMs) {
      if (key === undefined) return { kind: 'none' };
      const deadline = Date.now() + waitMs;
      for (;;) {
        const now = clock.now();
        const claimed = await store.claim(accountId, route, key, requestHash, now, new Date(now.getTime() + IDEMPOTENCY_HOURS * 3_600_000), new Date(now.getTime() - deps.requestTimeoutMs * 2));
        if (claimed) {
          return {
            kind: 'first',
            finish: (outcome) => store.finish(accountId, route, key, outcome),
            release: () => store.release(accountId, route, key),
          };
        }
        const row = await store.find(accountId, route, key, now);
        if (!row) continue; // it expired or was released between the two statements: claim again
        if (row.requestHash !== requestHash) throw new IdempotencyKeyReusedError();
        if (row.state === 'done' && row.outcome) return { kind: 'repeat', outcome: row.outcome };
        // Not a refusal of this call: a moment later it gets the first call's answer (server_busy is retried by clients).
        if (Date.now() >= deadline) throw new ServerBusyError(undefined, 'A call with this Idempotency-Key is still running; try again in a moment for its answer');
        await sleep(POLL_MS);
      }
    },

    async succeeded(accountId, route, key) {
      const row = await store.find(accountId, route, key, clock.now());
      return row?.state === 'done' && row.outcome?.status === 200;
    },

    async createBatch(accountId, userId) {
      const now = clock.now();
      const batch = { id: `bat_${randomBytes(12).toString('base64url')}`, accountId, userId, createdAt: now, expiresAt: new Date(now.getTime() + BATCH_HOURS * 3_600_000) };
      await store.createBatch(batch);
      return { id: batch.id, expiresAt: batch.expiresAt, limit: BATCH_LIMIT };
    },

    async admitToBatch(batchId, accountId, token) {
      if (token === undefined) throw new InvalidOptionError('Idempotency-Key', 'a token for each file of a batch', undefined);
      const answer = await store.admitToBatch(batchId, accountId, token, BATCH_LIMIT, clock.now());
      if (answer === 'missing') throw new BatchNotFoundError();
      if (answer === 'full') throw new BatchFullError(BATCH_LIMIT);
    },
  };
}
