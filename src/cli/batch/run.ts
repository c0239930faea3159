/**
 * The machinery of a batch run, shared by protect and verify: bounded
 * concurrency over the files, Ctrl-C (the first finishes the files in
 * progress and stops; the second stops at once), the calling of a server
 * (--server, --key-file, OPTMARK_URL, OPTMARK_API_KEY) and the summary.
 */
import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { loadClientSettings } from '../../config.js';
import type { OptmarkClient } from '../../client/index.js';
import { describeFailure, printJson } from '../files.js';
import type { Inputs } from './inputs.js';
import type { Row } from './report.js';
import { UsageError } from '../usage-error.js';

export interface Stop {
  /** Why no new file is started: Ctrl-C, or a refusal that every further call would get (the monthly limit, a server that cannot be reached). */
  reason: 'interrupted' | 'quota' | 'unreachable' | undefined;
  readonly abort: AbortController;
}

/** Why a run stopped, as a code: what each file not done carries with --json and in the report. */
export function stopCode(stop: Stop): string {
  return stop.reason === 'quota' ? 'quota_exceeded' : stop.reason === 'unreachable' ? 'network_error' : 'interrupted';
}

/**
 * Files in a row that end in network_error before a run stops as it does at
 * the monthly limit. Each has had the client's five tries already (seconds
 * of backoff), so three in a row are a server down or an address wrong, not
 * a connection dropped once; without this, each further file took its five
 * tries too and failed the same way.
 */
export const UNREACHABLE_AFTER = 3;

/** Watches for a server that cannot be reached: `answered` for each file that got an answer, `unreachable` for each network_error. */
export function reachability(stop: Stop) {
  let inARow = 0;
  let last: string | undefined;
  return {
    answered(): void {
      inARow = 0;
    },
    /** Counts a network_error; true once the run stops for it (this file is then not done, but left for the next run). */
    unreachable(message: string): boolean {
      last = message;
      if (++inARow >= UNREACHABLE_AFTER) stop.reason ??= 'unreachable';
      return stop.reason === 'unreachable';
    },
    /** The line that ends a run stopped for it. */
    said(notDone: number, what: string): string {
      return `stopped: the server cannot be reached (${UNREACHABLE_AFTER} files in a row: ${last ?? 'network_error'}); ${notDone} file(s) not ${what}: run the same command again once it answers.`;
    },
  };
}

/** A file the run stopped before doing, as --json prints it. */
export function notDoneLine(file: string, code: string): string {
  return JSON.stringify({ file, outcome: 'not-done', code });
}

/**
 * The line that ends a stopped run: on standard error, or with --json the
 * failure object on standard output (after the files' objects), so a
 * program reading only the objects learns why the run ended.
 */
export function sayStopped(json: boolean | undefined, error: string, code: string, notDone: number): void {
  if (json) process.stdout.write(`${JSON.stringify({ error, code, notDone })}\n`);
  else process.stderr.write(`optmark: ${error}\n`);
}

/** Run `work` over `items`, at most `concurrency` at once, in order of start; stops starting when `stop.reason` is set. */
export async function runPool<T>(items: readonly T[], concurrency: number, stop: Stop, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (stop.reason === undefined && next < items.length) {
      const index = next++;
      await work(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

/** Ctrl-C while `run` runs: the first sets stop.reason, the second aborts what is in flight. */
export async function withInterrupt<T>(stop: Stop, say: (line: string) => void, run: () => Promise<T>): Promise<T> {
  let count = 0;
  const onSignal = () => {
    count++;
    if (count === 1) {
      stop.reason = 'interrupted';
      say('optmark: stopping: the files in progress are finished, no new one is started (Ctrl-C again to stop at once)');
    } else {
      stop.abort.abort(new Error('interrupted'));
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    return await run();
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

export function concurrencyOption(value: string | undefined, remote: boolean): number {
  if (value === undefined) return remote ? 4 : availableParallelism();
  if (!/^\d{1,3}$/.test(value) || Number(value) < 1 || Number(value) > 256) throw new UsageError(`--concurrency takes a whole number from 1 to 256, got ${JSON.stringify(value)}`);
  return Number(value);
}

export interface RemoteOptions {
  readonly server?: string;
  readonly key?: string;
  readonly 'key-file'?: string;
}

/** The server to call and its key, or undefined to work locally. */
export async function remoteTarget(values: RemoteOptions): Promise<{ url: string; key: string } | undefined> {
  const settings = loadClientSettings();
  const url = values.server ?? settings.url;
  if (values.server !== undefined && !/^https?:\/\/[^\s/]+(\/\S*)?$/.test(values.server)) throw new UsageError(`--server takes an http:// or https:// URL, got ${JSON.stringify(values.server)}`);
  if (values.key !== undefined && values['key-file'] !== undefined) throw new UsageError('give the key once: --key-file FILE or --key KEY');
  if (url === undefined) {
    if (values.key !== undefined || values['key-file'] !== undefined) throw new UsageError('--key and --key-file go with --server URL (or OPTMARK_URL)');
    return undefined;
  }
  let key: string | undefined;
  if (values['key-file'] !== undefined) {
    const from = values['key-file'];
    try {
      key = (from === '-' ? await readStdin() : await readFile(from, 'utf8')).trim();
    } catch (error) {
      throw new UsageError(`cannot read the key file ${from}: ${(error as Error).message}`);
    }
  } else if (values.key !== undefined) {
    process.stderr.write('optmark: warning: --key shows the key in the process list and your shell history; prefer OPTMARK_API_KEY or --key-file FILE (- for standard input)\n');
    key = values.key.trim();
  } else {
    key = settings.apiKey;
  }
  if (!key) throw new UsageError('calling a server needs an API key: OPTMARK_API_KEY, --key-file FILE (- for standard input) or --key KEY');
  return { url: url.replace(/\/+$/, ''), key };
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The client of a remote batch: a 429 for calls in flight is left to the batch's ServerGate (batch/server-gate.ts), which waits for one of its calls. */
export async function createRemote(target: { url: string; key: string }): Promise<OptmarkClient> {
  const { createClient } = await import('../../client/index.js');
  return createClient({ baseUrl: target.url, apiKey: target.key, retryCallsInFlight: false });
}

/** "3 marked, 1 failed" from the counts that are not zero (and the first always). */
export function countsText(counts: ReadonlyArray<readonly [string, number]>): string {
  return counts
    .filter(([, n], i) => i === 0 || n > 0)
    .map(([what, n]) => `${n} ${what}`)
    .join(', ');
}

/** A file's failure: ours, the image's, or the server's (an optmark/client error, with its request id). */
export function failureOf(error: unknown): { error: string; code: string; requestId?: string } {
  const e = error as { name?: string; code?: unknown; message?: string; requestId?: string; status?: unknown };
  if (e?.name === 'OptmarkError' && typeof e.code === 'string' && typeof e.status === 'number') {
    return { error: e.message ?? String(error), code: e.code, ...(e.requestId ? { requestId: e.requestId } : {}) };
  }
  return describeFailure(error);
}

/**
 * The folders that could not be read, said as failed files are (a line on
 * standard error, or with --json an object on standard output) before the
 * files are done; their rows for the report.
 */
export function reportUnreadableFolders(inputs: Inputs, json: boolean | undefined): Row[] {
  return inputs.unreadable.map(({ path, error, code }) => {
    if (json) printJson({ file: path, outcome: 'failed', error, code });
    else process.stderr.write(`${path}: ${error}\n`);
    return { file: path, outcome: 'failed', code, error };
  });
}
