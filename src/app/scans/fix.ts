/**
 * A scan's fix (docs/scans.md "The fix"): the images its report found
 * without the opt-out, marked by the same protect as the API's (the opt-out
 * and the provenance tag, losslessly), each one protect unit of the month,
 * after a confirmation that names how many. The files come back with their
 * repository paths (the caller zips them), or, given a token that may write,
 * as one commit on a new branch pushed to the repository.
 *
 * The repository is fetched again at the scanned commit, and each file is
 * marked only if its bytes are still those the scan checked.
 */
import { randomUUID } from 'node:crypto';
import { API_PLANS, type Store } from '../ports.js';
import { FixTimeLimitError, InvalidOptionError, OptmarkError, RepositoryUnavailableError, SourceNotAllowedError, QuotaExceededError, ScanNotFinishedError, ScanNotFoundError } from '../../errors.js';
import { sha256Hex } from '../../core/bytes/digest.js';
import { MAX_SCAN_FILE_BYTES } from './classify.js';
import { ScanSourceError, type ScanSource, type ScanStore } from './ports.js';
import { checkSource, type SourcePorts } from './sources.js';
import type { FetchPort, Submitter } from './scans.js';

export interface Marked {
  readonly bytes: Uint8Array;
  readonly sha256: string;
  readonly value: string;
  readonly tagKid: string | undefined;
}

export interface FixDeps {
  readonly store: ScanStore;
  readonly accounts: Pick<Store, 'reserveForAccount' | 'commit' | 'refund'>;
  readonly fetch: FetchPort;
  readonly sources: SourcePorts;
  readonly allowedSources: readonly string[];
  readonly maxBytes: number;
  readonly maxFiles: number;
  readonly maxSeconds: number;
  readonly mark: (bytes: Uint8Array, path: string, signal: AbortSignal) => Promise<Marked>;
  readonly clock: { now(): Date };
}

export interface FixRequest {
  readonly scanId: string;
  /** The number of images the confirmation named: it must be the number the fix marks. */
  readonly confirm: number;
  /** A token for the fetch (a scan submitted with one needs one again: it was never kept), and for the push. */
  readonly token?: string | null;
  /** Push a branch instead of returning the files. */
  readonly push?: boolean;
}

export interface FixOutcome {
  readonly files: ReadonlyArray<{ readonly path: string; readonly original: string; readonly marked: Marked }>;
  readonly failed: ReadonlyArray<{ readonly path: string; readonly reason: string }>;
  readonly branch: string | null;
  readonly commit: string | null;
}

const MESSAGE = (n: number) => `Add the IPTC Data Mining opt-out to ${n} image${n === 1 ? '' : 's'}`;

/** The images a fix would mark: the report's images without the opt-out. */
export async function fixable(store: ScanStore, accountId: string, scanId: string): Promise<string[]> {
  const scan = await store.find(accountId, scanId);
  if (!scan) throw new ScanNotFoundError();
  return (await store.items(scanId)).filter((item) => item.status === 'notOptedOut').map((item) => item.path);
}

export async function fixScan(deps: FixDeps, who: Submitter, request: FixRequest): Promise<FixOutcome> {
  const { store, accounts, clock } = deps;
  const scan = await store.find(who.accountId, request.scanId);
  if (!scan) throw new ScanNotFoundError();
  if (scan.state !== 'done' && scan.state !== 'failed') throw new ScanNotFinishedError(scan.state);
  if (scan.commit === null) throw new ScanNotFinishedError(scan.state);
  const items = (await store.items(scan.id)).filter((item) => item.status === 'notOptedOut');
  if (items.length === 0) throw new InvalidOptionError('confirm', 'a scan with images to fix', 0, 'Every image this scan checked carries the opt-out already: there is nothing to fix');
  if (request.confirm !== items.length) {
    throw new InvalidOptionError('confirm', String(items.length), request.confirm, `This fix marks ${items.length} image${items.length === 1 ? '' : 's'}, each one protect call of the month: send "confirm": ${items.length} to go ahead`);
  }
  if (!API_PLANS.includes(who.plan)) throw new InvalidOptionError('plan', 'a plan with protection', who.plan);

  // Every unit first: a fix that cannot be paid for in full does not start.
  const now = clock.now();
  const period = `${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, '0')}`;
  const units: string[] = [];
  const giveBack = (ids: readonly string[]) => Promise.all(ids.map((id) => accounts.refund(id)));
  for (const _ of items) {
    const reservationId = randomUUID();
    const outcome = await accounts.reserveForAccount({ accountId: who.accountId, now, period, operation: 'protect', reservationId, plans: API_PLANS });
    if (outcome.kind !== 'reserved') {
      await giveBack(units);
      if (outcome.kind === 'exhausted') throw new QuotaExceededError('protect', outcome.limit, new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)));
      throw new InvalidOptionError('plan', 'a plan with protection', outcome.kind === 'forbidden' ? outcome.plan : 'none');
    }
    units.push(reservationId);
  }

  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error('timeout')), deps.maxSeconds * 1000);
  let source: ScanSource | undefined;
  const files: Array<FixOutcome['files'][number]> = [];
  const failed: Array<FixOutcome['failed'][number]> = [];
  let pushing = false;
  try {
    const checked = await checkSource(scan.repository, deps.allowedSources, deps.sources);
    source = await deps.fetch(
      { url: checked.url, ref: scan.ref, commit: scan.commit, token: request.token ?? null, pin: checked.pin },
      { maxBytes: deps.maxBytes, maxFiles: deps.maxFiles, signal: controller.signal },
    );
    const byPath = new Map(source.entries.map((e) => [e.path, e]));
    for (const item of items) {
      const entry = byPath.get(item.path);
      if (!entry || entry.kind !== 'file') {
        failed.push({ path: item.path, reason: 'not in the scanned commit any more' });
        continue;
      }
      const bytes = await source.read(entry, MAX_SCAN_FILE_BYTES);
      const original = sha256Hex(bytes);
      if (item.sha256 !== null && original !== item.sha256) {
        failed.push({ path: item.path, reason: 'the file is not the one the scan checked' });
        continue;
      }
      try {
        files.push({ path: item.path, original, marked: await deps.mark(bytes, item.path, controller.signal) });
      } catch (error) {
        if (!(error instanceof OptmarkError)) throw error;
        failed.push({ path: item.path, reason: error.message });
      }
    }
    let branch: string | null = null;
    let commit: string | null = null;
    if (request.push && files.length > 0) {
      if (!source.publish) throw new InvalidOptionError('push', 'a scan of a git repository', 'a folder');
      const stamp = clock.now().toISOString().slice(0, 10).replace(/-/g, '');
      branch = `optmark/opt-out-${stamp}-${scan.id.slice(4, 12)}`;
      pushing = true;
      commit = (await source.publish(files.map((f) => ({ path: f.path, bytes: f.marked.bytes })), { branch, message: MESSAGE(files.length) })).commit;
    }
    // The units of files marked stay counted; the others go back.
    await Promise.all(units.slice(0, files.length).map((id) => accounts.commit(id, null, clock.now())));
    await giveBack(units.slice(files.length));
    return { files, failed, branch, commit };
  } catch (error) {
    await giveBack(units).catch(() => {});
    // Past the time limit, whatever step was running ends with the signal's reason or its own words for it.
    if (controller.signal.aborted) throw new FixTimeLimitError(deps.maxSeconds, pushing);
    if (error instanceof ScanSourceError || error instanceof SourceNotAllowedError) throw new RepositoryUnavailableError(error.message);
    throw error;
  } finally {
    clearTimeout(timer);
    await source?.close().catch(() => {});
  }
}
