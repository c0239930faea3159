/**
 * One scan over a source: every file listed, candidates read, each image
 * checked with the verify core (the same the API runs), `concurrency`
 * images at once. The report is handed out in batches as it grows, so a
 * scan interrupted keeps what it checked; a resumed scan passes the paths
 * already reported in `done` and they are not read again.
 */
import { OptmarkError, QuotaExceededError, ServerBusyError, ServiceUnavailableError } from '../../errors.js';
import type { VerifyDetails, VerifyResult } from '../verify-image.js';
import { classifyHead, classifyListed, HEAD_BYTES, MAX_SCAN_FILE_BYTES, hasImageName, skipped } from './classify.js';
import type { ScanItem, ScanSource, SourceEntry } from './ports.js';

/** A unit of the monthly image-check limit, held while its image is checked. */
export interface Unit {
  /** The image was checked (opted out or not): the unit stays counted. */
  keep(): Promise<void>;
  /** It failed or was skipped: the unit is given back. */
  giveBack(): Promise<void>;
}

export interface RunOptions {
  readonly source: ScanSource;
  readonly check: (bytes: Uint8Array, signal: AbortSignal) => Promise<{ result: VerifyResult; details: VerifyDetails }>;
  /** A unit for the next image; throws QuotaExceededError when the month's limit is used. None for the command line. */
  readonly reserve?: () => Promise<Unit>;
  readonly concurrency: number;
  /** Paths already in the report (a resumed scan). */
  readonly done?: ReadonlySet<string>;
  /** Save a batch of the report; `processed` files of the listing are behind us, `otherFiles` of them not candidates. Units are kept only after their items are saved. */
  readonly save: (items: readonly ScanItem[], progress: { readonly processed: number; readonly otherFiles: number }) => Promise<void>;
  readonly signal: AbortSignal;
  /** Items per saved batch (default 50). */
  readonly batch?: number;
}

export interface RunOutcome {
  /** The month's image-check limit ran out: the scan stops here. */
  readonly quotaExhausted: QuotaExceededError | undefined;
  readonly otherFiles: number;
}

const BUSY_RETRY_MS = 200;

/** A checked image's report line. */
export function itemOf(entry: SourceEntry, bytes: number, result: VerifyResult, details: VerifyDetails): ScanItem {
  return {
    path: entry.path,
    status: result.optedOut ? 'optedOut' : 'notOptedOut',
    reason: null,
    code: null,
    bytes,
    sha256: result.sha256,
    format: details.format,
    signals: details.signals.map(String),
    value: details.dataMining[0]?.value ?? null,
    provenance: result.provenance,
    fingerprint: { present: result.fingerprint.present, confidence: result.fingerprint.confidence },
  };
}

function failedItem(entry: SourceEntry, error: unknown): ScanItem {
  const known = error instanceof OptmarkError;
  if (known && error.code === 'image_dimensions_too_large') return skipped(entry, 'too_many_pixels', error.message);
  return {
    path: entry.path,
    status: 'failed',
    reason: known ? error.message : 'the check failed unexpectedly',
    code: known ? error.code : 'internal_error',
    bytes: entry.size,
    sha256: null,
    format: null,
    signals: [],
    value: null,
    provenance: null,
    fingerprint: null,
  };
}

export async function runScan(options: RunOptions): Promise<RunOutcome> {
  const { source, signal } = options;
  const done = options.done ?? new Set<string>();
  const batchSize = options.batch ?? 50;
  let pendingItems: ScanItem[] = [];
  let pendingUnits: Array<{ unit: Unit; kept: boolean }> = [];
  let processed = 0;
  let otherFiles = 0;
  let quotaExhausted: QuotaExceededError | undefined;
  let saving = Promise.resolve();
  /** Set once a save has failed: no later batch is saved, and the units of every batch not saved go back. */
  let saveFailed: { readonly error: unknown } | undefined;

  const flush = () => {
    const items = pendingItems;
    const units = pendingUnits;
    const progress = { processed, otherFiles };
    pendingItems = [];
    pendingUnits = [];
    const work = async () => {
      if (!saveFailed) {
        try {
          await options.save(items, progress);
        } catch (error) {
          saveFailed = { error };
        }
      }
      if (saveFailed) {
        // Not in the report, so not charged.
        await Promise.allSettled(units.map(({ unit }) => unit.giveBack()));
        throw saveFailed.error;
      }
      await Promise.all(units.map(({ unit, kept }) => (kept ? unit.keep() : unit.giveBack())));
    };
    // Each batch after the one before, whatever became of it.
    saving = saving.then(work, work);
    return saving;
  };
  const add = async (item: ScanItem | null, unit?: { unit: Unit; kept: boolean }) => {
    processed += 1;
    if (item) pendingItems.push(item);
    if (unit) pendingUnits.push(unit);
    if (pendingItems.length >= batchSize) await flush();
  };
  /** A file classified as another kind of file or a skipped image is recorded as such; true when it was (nothing more to do for it). */
  const settled = async (decision: { kind: 'other' } | { kind: 'skip'; item: ScanItem } | { kind: 'read' | 'check' }): Promise<boolean> => {
    if (decision.kind === 'other') {
      otherFiles += 1;
      await add(null);
      return true;
    }
    if (decision.kind === 'skip') {
      await add(decision.item);
      return true;
    }
    return false;
  };

  const inFlight = new Set<Promise<void>>();
  const checkOne = async (entry: SourceEntry, bytes: Uint8Array, unit: Unit | undefined) => {
    let item: ScanItem;
    for (;;) {
      try {
        const { result, details } = await options.check(bytes, signal);
        item = itemOf(entry, bytes.length, result, details);
      } catch (error) {
        // The server's decoders are shared with API calls: wait for a turn rather than fail the image.
        if ((error instanceof ServerBusyError || error instanceof ServiceUnavailableError) && !signal.aborted) {
          await new Promise((resolve) => setTimeout(resolve, BUSY_RETRY_MS));
          continue;
        }
        if (signal.aborted) {
          await unit?.giveBack().catch(() => {});
          throw signal.reason;
        }
        item = failedItem(entry, error);
      }
      break;
    }
    const kept = item.status === 'optedOut' || item.status === 'notOptedOut';
    // A unit not used goes back at once (for the next image); one used is kept once its line is saved.
    if (unit && !kept) await unit.giveBack();
    await add(item, unit && kept ? { unit, kept } : undefined);
  };

  try {
    for (const entry of source.entries) {
      signal.throwIfAborted();
      if (quotaExhausted) break;
      if (done.has(entry.path)) {
        processed += 1;
        continue;
      }
      if (await settled(classifyListed(entry))) continue;
      // A file named as an image is read whole at once (when it may be checked); others, their first bytes.
      const whole = hasImageName(entry.path) && entry.size <= MAX_SCAN_FILE_BYTES;
      let bytes = await source.read(entry, whole ? MAX_SCAN_FILE_BYTES : HEAD_BYTES);
      if (await settled(classifyHead(entry, bytes))) continue;
      if (!whole) bytes = await source.read(entry, MAX_SCAN_FILE_BYTES);
      let unit: Unit | undefined;
      if (options.reserve) {
        try {
          unit = await options.reserve();
        } catch (error) {
          if (!(error instanceof QuotaExceededError)) throw error;
          // Images in flight may give their units back (a broken file): once they are done, once more.
          await Promise.all(inFlight);
          try {
            unit = await options.reserve();
          } catch (again) {
            if (!(again instanceof QuotaExceededError)) throw again;
            quotaExhausted = again;
            break;
          }
        }
      }
      try {
        while (inFlight.size >= options.concurrency) await Promise.race(inFlight);
      } catch (error) {
        // An image in flight failed the scan (a save that failed): this one's unit, reserved meanwhile, goes back.
        await unit?.giveBack().catch(() => {});
        throw error;
      }
      const task = checkOne(entry, bytes, unit).finally(() => inFlight.delete(task));
      // Its failure (the scan cancelled or out of time, a save that failed) is met at the next wait for
      // the images in flight, or by the signal's check: never as an unhandled rejection, which would stop
      // the process while the loop is still reading files.
      task.catch(() => {});
      inFlight.add(task);
    }
    await Promise.all(inFlight);
  } catch (error) {
    // What was checked is kept; units of images not finished are given back.
    await Promise.allSettled(inFlight);
    await flush().catch(() => {});
    throw error;
  }
  await flush();
  return { quotaExhausted, otherFiles };
}
