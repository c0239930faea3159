/**
 * A worker thread of `optmark protect` run here: it takes whole files (read,
 * check, mark, write: mark-one.ts) so that every core hashes, and reading
 * and writing overlap with marking. It signs with the deployment's key
 * ring, which the main thread opens (and creates, if need be) before giving
 * it a file: the thread opens it with its first file, having started up
 * meanwhile. Each file is read into one buffer kept from file to file (and
 * an output already there, into another), and its marked copy written from
 * that buffer and the new metadata (writev): no buffer the size of a file
 * is allocated for it.
 */
import { parentPort } from 'node:worker_threads';
import { loadConfig } from '../../config.js';
import type { TagSigner } from '../../core/metadata.js';
import { describeExpected } from '../files.js';
import { signingProvenance } from '../keys-for-cli.js';
import { keptFileAccess, SYNC_IO } from './kept-files.js';
import { markParts } from './mark-here.js';
import { markOne, type MarkOutcome, type MarkTask } from './mark-one.js';

export interface WorkerRequest {
  readonly id: number;
  readonly task: MarkTask;
  /** Compute the marked file's SHA-256 (for --json and --report). */
  readonly sha256: boolean;
}

export type WorkerReply = { readonly id: number; readonly ok: true; readonly outcome: MarkOutcome } | { readonly id: number; readonly ok: false; readonly error: string; readonly code: string | undefined };

const config = loadConfig();
let signer: TagSigner | undefined;

// Bytes read and written on this thread, which has nothing else to do meanwhile.
const SYNC_ACCESS = keptFileAccess(SYNC_IO);

parentPort!.on('message', async ({ id, task, sha256 }: WorkerRequest) => {
  try {
    signer ??= signingProvenance(config).signer;
    const marking = { signer, maxImagePixels: config.maxImagePixels };
    const outcome = await markOne(task, SYNC_ACCESS, async (bytes) => markParts(task, bytes, marking, sha256));
    parentPort!.postMessage({ id, ok: true, outcome } satisfies WorkerReply);
  } catch (error) {
    const expected = describeExpected(error);
    parentPort!.postMessage({ id, ok: false, error: expected?.error ?? String((error as Error)?.stack ?? error), code: expected?.code } satisfies WorkerReply);
  }
});
