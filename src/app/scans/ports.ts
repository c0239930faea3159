/**
 * What a repository scan needs from the outside: a source of files (a
 * fetched git tree or, for the command line, a folder), the check, and the
 * store of scans and their reports.
 */

/** The source could not be read, or went past a limit: the message is for people and holds no secret. */
export class ScanSourceError extends Error {}

/** One path of the scanned tree, as the source lists it (nothing read yet). */
export interface SourceEntry {
  /**
   * Relative to the tree's root, "/"-separated. A git path whose bytes are
   * not UTF-8 (an old Latin-1 name) has each byte of 0x80 and above written
   * as \xNN: shown as what it is, and two such names never become one.
   */
  readonly path: string;
  /** The path's own bytes, when `path` is not them in UTF-8 (a git source writes the file back by them). */
  readonly pathBytes?: Uint8Array;
  /** A symbolic link is never followed; a submodule is never fetched. */
  readonly kind: 'file' | 'symlink' | 'submodule';
  /** Bytes of the file (0 for a link or a submodule). */
  readonly size: number;
  /** The source's handle for reading it (a git object id, a file path). */
  readonly handle: string;
  /** git's file mode (100644, 100755, 120000, 160000), for a git source. */
  readonly mode?: string;
}

/** A tree to scan: its listing and its files' bytes. */
export interface ScanSource {
  /** The commit scanned, when the source is a git repository. */
  readonly commit: string | null;
  /** Milliseconds the fetch took (0 for a folder). */
  readonly fetchMs: number;
  readonly entries: readonly SourceEntry[];
  /** The file's first `limit` bytes (all of it when it has fewer). */
  read(entry: SourceEntry, limit: number): Promise<Uint8Array>;
  /**
   * A git source only: commit `changes` on top of the scanned commit and push
   * it to the repository as a new branch (with the token given to the fetch).
   */
  publish?(changes: ReadonlyArray<{ readonly path: string; readonly bytes: Uint8Array }>, options: { readonly branch: string; readonly message: string }): Promise<{ readonly commit: string }>;
  /** Remove what the source made (the fetched repository). */
  close(): Promise<void>;
}

export type ItemStatus = 'optedOut' | 'notOptedOut' | 'failed' | 'skipped';

/** One image of a report. */
export interface ScanItem {
  readonly path: string;
  readonly status: ItemStatus;
  /** Why an image failed or was skipped, in words; null otherwise. */
  readonly reason: string | null;
  /** A stable code for that reason (the error's code, or a skip's: symlink, lfs_pointer, too_large, too_deep, too_many_pixels). */
  readonly code: string | null;
  readonly bytes: number;
  /** Of the bytes checked; null when not read. */
  readonly sha256: string | null;
  readonly format: string | null;
  /** Every opt-out signal found (the dashboard's and the CLI's full list). */
  readonly signals: readonly string[];
  /** The plus:DataMining value, when there is one. */
  readonly value: string | null;
  readonly provenance: { readonly present: boolean; readonly valid: boolean; readonly verifiable: boolean } | null;
  readonly fingerprint: { readonly present: boolean; readonly confidence: number } | null;
}

/** The counts of a scan (DESIGN §6 "Scan definitions"): images = optedOut + notOptedOut + failed + skipped. */
export interface ScanSummary {
  readonly images: number;
  readonly optedOut: number;
  readonly notOptedOut: number;
  readonly failed: number;
  readonly skipped: number;
  /** Files that are not candidate images (counted only). */
  readonly otherFiles: number;
}

export const EMPTY_SUMMARY: ScanSummary = { images: 0, optedOut: 0, notOptedOut: 0, failed: 0, skipped: 0, otherFiles: 0 };

export function addToSummary(summary: ScanSummary, status: ItemStatus | 'other'): ScanSummary {
  if (status === 'other') return { ...summary, otherFiles: summary.otherFiles + 1 };
  return { ...summary, images: summary.images + 1, [status]: summary[status] + 1 };
}

export const SCAN_STATES = ['queued', 'running', 'done', 'failed', 'cancelled'] as const;
export type ScanState = (typeof SCAN_STATES)[number];
export const FINISHED_STATES: readonly ScanState[] = ['done', 'failed', 'cancelled'];

export interface Scan {
  readonly id: string;
  readonly accountId: string;
  readonly userId: string;
  /** The repository's URL as given (never with credentials: those are refused). */
  readonly repository: string;
  readonly ref: string | null;
  /** Whether it was submitted with a read token (held in the accepting server's memory only). */
  readonly withToken: boolean;
  /** The server that accepted it (a scan with a token runs only there). */
  readonly instanceId: string;
  readonly commit: string | null;
  readonly state: ScanState;
  /** Why it failed or was cancelled, in words. */
  readonly reason: string | null;
  /** Counts toward its user's scans of the day and the service-wide ceiling. */
  readonly counted: boolean;
  readonly createdAt: Date;
  readonly startedAt: Date | null;
  readonly finishedAt: Date | null;
  /** The report is removed after this (the plan's retention). */
  readonly expiresAt: Date;
  /** Candidate images found in the tree; null until it is listed. */
  readonly total: number | null;
  /** Files of the tree dealt with so far (progress: processed of total). */
  readonly processed: number;
  readonly summary: ScanSummary;
  readonly fetchMs: number | null;
}

/** What accepting a scan writes; the rest of a Scan starts empty. */
export type NewScan = Pick<Scan, 'id' | 'accountId' | 'userId' | 'repository' | 'ref' | 'withToken' | 'instanceId' | 'createdAt' | 'expiresAt'>;

/** Why a new scan was not accepted, decided in one transaction with the insert. */
export type AcceptOutcome =
  | { readonly kind: 'accepted'; readonly scan: Scan }
  | { readonly kind: 'user-limit'; readonly limit: number }
  | { readonly kind: 'paused' }
  | { readonly kind: 'ceiling'; readonly ceiling: number };

export interface ScanStore {
  /**
   * Insert the scan if its user has started fewer than `perUserLimit` counted
   * scans since `dayStart` and, all users together, fewer than the service's
   * ceiling, and scans are not paused: checked and inserted atomically, so
   * that concurrent submissions on any number of servers cannot pass a limit.
   */
  accept(scan: NewScan, perUserLimit: number, dayStart: Date): Promise<AcceptOutcome>;
  find(accountId: string, id: string): Promise<Scan | undefined>;
  findById(id: string): Promise<Scan | undefined>;
  list(accountId: string, limit: number): Promise<Scan[]>;
  /** Take the scan to run: it is queued or running with no live runner. Returns it, or undefined (ended, or another runner has it). */
  claim(id: string, runner: string, now: Date, leaseUntil: Date): Promise<Scan | undefined>;
  /** Renew the lease; false when the scan was cancelled meanwhile (or another runner took it). */
  renew(id: string, runner: string, leaseUntil: Date): Promise<boolean>;
  setListed(id: string, commit: string | null, total: number, otherFiles: number, fetchMs: number): Promise<void>;
  /** Add checked images to the report and their counts to the summary, in one transaction. */
  addItems(id: string, items: readonly ScanItem[], progress?: { readonly processed: number; readonly otherFiles: number }): Promise<void>;
  /** Paths already in the report (a resumed scan skips them). */
  donePaths(id: string): Promise<Set<string>>;
  finish(id: string, state: 'done' | 'failed' | 'cancelled', reason: string | null, now: Date, options?: { uncount?: boolean }): Promise<boolean>;
  items(id: string): Promise<ScanItem[]>;
  /** Let go of every claim on unfinished scans (the embedded database at start: no other server can hold one). */
  releaseClaims(): Promise<void>;
  /** Scans to run again after a restart: unfinished, without a token, whose runner's lease is over. */
  orphans(now: Date): Promise<Scan[]>;
  /** Unfinished scans with a token accepted by a server other than these (gone: its memory held the token). */
  strandedTokenScans(liveInstances: readonly string[]): Promise<Scan[]>;
  /** Remove reports past their retention; returns how many scans went. */
  sweep(now: Date): Promise<number>;
  /** Counted scans since `dayStart`, all accounts together. */
  countToday(dayStart: Date): Promise<number>;
  /** Counted scans of one user since `dayStart` (their scans of the day, as `accept` counts them). */
  countUserToday(userId: string, dayStart: Date): Promise<number>;
  setCeiling(perDay: number): Promise<void>;
  setPaused(paused: boolean): Promise<void>;
}
