/**
 * Repository scans as a service runs them (docs/scans.md): submitted by a
 * person (dashboard) or a key (API), counted against the user's scans of the
 * UTC day and the service-wide ceiling when accepted, run from the durable
 * job queue with bounded concurrency per server, each image checked drawing
 * one unit of the account's monthly image-check limit.
 *
 * A scan with a read token runs only on the server that accepted it: the
 * token lives in that process's memory, never in the database or the queue.
 * If that server stops first, the scan ends failed and uncounted.
 */
import { randomUUID } from 'node:crypto';
import { API_PLANS, type JobPort, type Plan, type Store } from '../ports.js';
import { InvalidOptionError, PlanNotAllowedError, QuotaExceededError, ScanLimitReachedError, ScanNotCancellableError, ScanNotFoundError, ScansPausedError, ServerBusyError, ServiceUnavailableError, SourceNotAllowedError } from '../../errors.js';
import type { VerifyDetails, VerifyResult } from '../verify-image.js';
import { FINISHED_STATES, ScanSourceError, type Scan, type ScanItem, type ScanSource, type ScanStore } from './ports.js';
import { runScan, type Unit } from './run.js';
import { checkSource, type CheckedSource, type SourcePorts } from './sources.js';
import { createScanControl, type ControlActor, type ScanControl, type ScanStatus } from './control.js';
import type { AuditEntry } from '../people/ports.js';
import { fixable, fixScan, type FixOutcome, type FixRequest, type Marked } from './fix.js';

export interface ScanLimits {
  readonly sources: readonly string[];
  readonly maxBytes: number;
  readonly maxFiles: number;
  readonly maxSeconds: number;
  /** Scans this server runs at once. */
  readonly concurrency: number;
  /** Images one scan checks at once. */
  readonly checkConcurrency: number;
}

export interface FetchPort {
  (request: { url: string; ref: string | null; commit: string | null; token: string | null; pin: CheckedSource['pin'] }, limits: { maxBytes: number; maxFiles: number; signal: AbortSignal }): Promise<ScanSource>;
}

export interface ScanDeps {
  readonly store: ScanStore;
  readonly accounts: Pick<Store, 'accountLimits' | 'reserveForAccount' | 'commit' | 'refund' | 'serviceSettings'>;
  readonly jobs: JobPort;
  readonly fetch: FetchPort;
  readonly sources: SourcePorts;
  readonly check: (bytes: Uint8Array, signal: AbortSignal) => Promise<{ result: VerifyResult; details: VerifyDetails }>;
  readonly limits: ScanLimits;
  readonly clock: { now(): Date };
  /** This server's id (a scan with a token runs only on the server that accepted it). */
  readonly instanceId: string;
  /** Servers alive now (their ids), for scans with a token whose server is gone. */
  readonly liveInstances: () => Promise<string[]>;
  /** Whether only this process uses the database (the embedded one): then every unfinished scan at start was interrupted. */
  readonly soleServer: boolean;
  readonly onError: (error: unknown, what: string) => void;
  readonly audit: (entry: AuditEntry) => Promise<void>;
  /** The API's protect (the opt-out and the provenance tag), for a scan's fix. */
  readonly mark: (bytes: Uint8Array, path: string, signal: AbortSignal) => Promise<Marked>;
}

export interface Submitter {
  readonly accountId: string;
  readonly userId: string;
  readonly plan: Plan;
}

export interface ScanInput {
  readonly repository: string;
  readonly ref?: string | null;
  readonly token?: string | null;
}

export const SCAN_QUEUE = 'repository-scan';
/** A running scan renews its claim this often; a claim not renewed for LEASE_MS is taken to be of a server gone. */
const RENEW_MS = 15_000;
const LEASE_MS = 60_000;
/** How often servers look for scans to resume and tokens stranded. */
const RECOVER_MS = 30_000;
const INTERRUPTED = 'interrupted; submit it again with the token';
const NOT_QUEUED = 'the service could not queue it; it was not counted: submit it again';

/** The start of the UTC day of `now`, and the seconds until the next one. */
export function utcDay(now: Date): { start: Date; secondsLeft: number } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  return { start, secondsLeft: Math.max(1, Math.ceil((start.getTime() + 86_400_000 - now.getTime()) / 1000)) };
}

/** A branch or tag name git accepts (and nothing that reads as an option). */
const REF = /^(?!-)(?!.*\.\.)(?!.*\/\/)(?!.*@\{)[A-Za-z0-9._/+-]{1,255}(?<![./])$/;

function checkInput(input: ScanInput): { repository: string; ref: string | null; token: string | null } {
  if (typeof input.repository !== 'string' || input.repository.length === 0 || input.repository.length > 2048 || /[\x00-\x1f\x7f]/.test(input.repository)) {
    throw new InvalidOptionError('repository', 'a repository URL of at most 2048 characters, without control characters', String(input.repository ?? '').replace(/[\x00-\x1f\x7f]/g, '?'));
  }
  const ref = input.ref ?? null;
  if (ref !== null && (typeof ref !== 'string' || !REF.test(ref))) throw new InvalidOptionError('ref', 'a branch or tag name', String(ref));
  const token = input.token ?? null;
  if (token !== null && (typeof token !== 'string' || token.length === 0 || token.length > 1024 || /[\s\x00-\x1f\x7f]/.test(token))) {
    // The value is never echoed.
    throw new InvalidOptionError('token', 'a token of 1 to 1024 visible characters, no spaces', '(not shown)');
  }
  return { repository: input.repository.trim(), ref, token };
}

export interface Scans {
  submit(who: Submitter, input: ScanInput): Promise<Scan>;
  get(accountId: string, id: string): Promise<Scan>;
  report(accountId: string, id: string): Promise<{ scan: Scan; items: ScanItem[] }>;
  list(accountId: string, limit?: number): Promise<Scan[]>;
  cancel(accountId: string, id: string): Promise<Scan>;
  /** The paths a fix would mark (the images without the opt-out). */
  fixable(accountId: string, id: string): Promise<string[]>;
  /** Mark them (after the confirmation of how many), as files or a pushed branch. */
  fix(who: Submitter, request: FixRequest): Promise<FixOutcome>;
  /** A person's scans of the UTC day against their daily limit, and when the day ends. */
  today(accountId: string, userId: string): Promise<{ used: number; limit: number; resetsAt: Date }>;
  /** Operators: today's count, the ceiling, whether paused; pause, resume, set the ceiling (audited). */
  readonly control: ScanControl;
  status(): Promise<ScanStatus>;
  pause(by?: ControlActor): Promise<ScanStatus>;
  resume(by?: ControlActor): Promise<ScanStatus>;
  setCeiling(perDay: number, by?: ControlActor): Promise<ScanStatus>;
  /** Start working on the queue and recovering interrupted scans. */
  start(): Promise<void>;
  /** Stop running scans (they resume on a later start; those with a token end failed), then stop. */
  stop(): Promise<void>;
  /** Remove reports past their retention. */
  sweep(): Promise<number>;
}

export function createScans(deps: ScanDeps): Scans {
  const { store, accounts, clock, limits } = deps;
  const control = createScanControl({ store, settings: accounts, audit: deps.audit, clock });
  /** Tokens of scans accepted here, until they end. */
  const tokens = new Map<string, string>();
  /** Scans running here, to stop them. */
  const running = new Map<string, AbortController>();
  /** Accounts with a fix running on this server (app/scans/fix.ts). */
  const fixing = new Set<string>();
  let recovering: NodeJS.Timeout | undefined;
  let stopping = false;
  /** Places for running scans (inSlot). */
  let localSlots = limits.concurrency;
  const localWaiting: Array<() => void> = [];

  const find = async (accountId: string, id: string) => {
    const scan = await store.find(accountId, id);
    if (!scan) throw new ScanNotFoundError();
    return scan;
  };

  /** A job for the scan on the durable queue (a duplicate is harmless: the claim lets one run). */
  const enqueue = (id: string) => deps.jobs.send(SCAN_QUEUE, { scanId: id }, { expireInSeconds: limits.maxSeconds + 120, retryLimit: 1 });

  async function execute(id: string): Promise<void> {
    // A second job of a scan this server runs already (recover() may queue one again): the one running goes on.
    if (running.has(id)) return;
    if (stopping) {
      // This job is taken from the queue, and would be marked done without the scan having run: queued again, for another server.
      if (!tokens.has(id)) await enqueue(id).catch((error: unknown) => deps.onError(error, 'could not queue again a scan taken while stopping'));
      return;
    }
    // Held from before the claim, so that a second job arriving meanwhile sees it.
    const controller = new AbortController();
    running.set(id, controller);
    let scan: Scan | undefined;
    try {
      const now = clock.now();
      scan = await store.claim(id, deps.instanceId, now, new Date(now.getTime() + LEASE_MS));
      if (scan?.withToken && !tokens.has(id)) {
        await store.finish(id, 'failed', INTERRUPTED, clock.now(), { uncount: true });
        scan = undefined;
      }
    } finally {
      if (!scan) running.delete(id);
    }
    if (!scan) return;
    const token = scan.withToken ? tokens.get(id) : undefined;
    const timer = setTimeout(() => controller.abort(new Error('timeout')), limits.maxSeconds * 1000);
    const renewer = setInterval(() => {
      store.renew(id, deps.instanceId, new Date(clock.now().getTime() + LEASE_MS)).then(
        (held) => held || controller.abort(new Error('cancelled')),
        (error: unknown) => deps.onError(error, 'could not renew a scan\'s claim'),
      );
    }, RENEW_MS);
    let source: ScanSource | undefined;
    try {
      const checked = await checkSource(scan.repository, limits.sources, deps.sources);
      source = await deps.fetch({ url: checked.url, ref: scan.ref, commit: scan.commit, token: token ?? null, pin: checked.pin }, { maxBytes: limits.maxBytes, maxFiles: limits.maxFiles, signal: controller.signal });
      await store.setListed(id, source.commit, source.entries.length, 0, source.fetchMs);
      const done = await store.donePaths(id);
      const outcome = await runScan({
        source,
        check: deps.check,
        concurrency: limits.checkConcurrency,
        done,
        signal: controller.signal,
        reserve: () => reserveUnit(scan),
        save: (items, progress) => store.addItems(id, items, progress),
      });
      if (outcome.quotaExhausted) {
        await store.finish(id, 'failed', `the account's monthly image-check limit of ${outcome.quotaExhausted.limit} ran out; the images checked before are in the report`, clock.now());
      } else {
        await store.finish(id, 'done', null, clock.now());
      }
    } catch (error) {
      const reason = controller.signal.aborted ? (controller.signal.reason as Error).message : undefined;
      if (reason === 'cancelled' || reason === 'stopping') {
        // Cancelled: its row says so already. Stopping: it resumes on a later start (one with a token cannot).
        if (reason === 'stopping' && scan.withToken) await store.finish(id, 'failed', INTERRUPTED, clock.now(), { uncount: true }).catch(() => {});
      } else if (reason === 'timeout') {
        await store.finish(id, 'failed', `the scan took longer than its limit of ${limits.maxSeconds} s; the images checked before are in the report`, clock.now());
      } else if (error instanceof SourceNotAllowedError || error instanceof ScanSourceError) {
        await store.finish(id, 'failed', error.message, clock.now());
      } else {
        deps.onError(error, 'a repository scan failed');
        await store.finish(id, 'failed', 'the scan failed unexpectedly; the images checked before are in the report', clock.now()).catch(() => {});
      }
    } finally {
      clearTimeout(timer);
      clearInterval(renewer);
      running.delete(id);
      if (!stopping || !scan.withToken) tokens.delete(id);
      await source?.close().catch((error: unknown) => deps.onError(error, 'could not remove a scan\'s fetched repository'));
    }
  }

  async function reserveUnit(scan: Scan): Promise<Unit> {
    const reservationId = randomUUID();
    const now = clock.now();
    const period = `${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, '0')}`;
    const outcome = await accounts.reserveForAccount({ accountId: scan.accountId, now, period, operation: 'verify', reservationId, plans: API_PLANS });
    if (outcome.kind === 'exhausted') {
      throw new QuotaExceededError('verify', outcome.limit, new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)));
    }
    if (outcome.kind !== 'reserved') throw new SourceNotAllowedError(outcome.kind === 'gone' ? 'the account is gone' : 'the account\'s plan has no image checks');
    return {
      keep: () => accounts.commit(reservationId, null, clock.now()),
      giveBack: () => accounts.refund(reservationId),
    };
  }

  /** One of this server's `concurrency` places for a running scan, shared by the queue's jobs and the scans with a token. */
  async function inSlot(id: string): Promise<void> {
    if (localSlots === 0) await new Promise<void>((resolve) => localWaiting.push(resolve));
    else localSlots -= 1;
    try {
      await execute(id);
    } finally {
      const next = localWaiting.shift();
      if (next) next();
      else localSlots += 1;
    }
  }

  async function recover(atStart: boolean): Promise<void> {
    const live = deps.soleServer ? [] : await deps.liveInstances();
    const stranded = await store.strandedTokenScans(deps.soleServer ? [] : [deps.instanceId, ...live]);
    for (const scan of stranded) {
      if (deps.soleServer && tokens.has(scan.id)) continue;
      await store.finish(scan.id, 'failed', INTERRUPTED, clock.now(), { uncount: true });
    }
    // Scans whose runner is gone are queued again (the claim makes a duplicate job harmless).
    if (deps.soleServer && atStart) await store.releaseClaims();
    for (const scan of await store.orphans(clock.now())) {
      if (scan.state !== 'running' && !atStart) continue;
      if (running.has(scan.id)) continue;
      await enqueue(scan.id);
    }
  }

  return {
    async submit(who, input) {
      const { repository, ref, token } = checkInput(input);
      if (!API_PLANS.includes(who.plan)) throw new PlanNotAllowedError(who.plan);
      await checkSource(repository, limits.sources, deps.sources);
      const accountLimits = await accounts.accountLimits(who.accountId);
      const now = clock.now();
      const day = utcDay(now);
      const outcome = await store.accept(
        {
          id: `scn_${randomUUID().replace(/-/g, '')}`,
          accountId: who.accountId,
          userId: who.userId,
          repository,
          ref,
          withToken: token !== null,
          instanceId: deps.instanceId,
          createdAt: now,
          expiresAt: new Date(now.getTime() + accountLimits.reportRetentionDays * 86_400_000),
        },
        accountLimits.scansPerUserPerDay,
        day.start,
      );
      if (outcome.kind === 'user-limit') throw new ScanLimitReachedError(outcome.limit, day.secondsLeft);
      if (outcome.kind === 'paused') throw new ScansPausedError('paused', 3600);
      if (outcome.kind === 'ceiling') throw new ScansPausedError('ceiling', day.secondsLeft);
      const { scan } = outcome;
      if (token !== null) {
        tokens.set(scan.id, token);
        inSlot(scan.id).catch((error: unknown) => deps.onError(error, 'a repository scan failed'));
      } else {
        try {
          await enqueue(scan.id);
        } catch (error) {
          // Not queued, so nothing would run it before the next start: it ends now, uncounted, and the caller may try again.
          deps.onError(error, 'could not queue a repository scan');
          await store.finish(scan.id, 'failed', NOT_QUEUED, clock.now(), { uncount: true }).catch(() => {});
          throw new ServiceUnavailableError('The scan could not be queued; it was not counted: try again shortly', 30, { cause: error });
        }
      }
      return scan;
    },

    get: find,

    async report(accountId, id) {
      const scan = await find(accountId, id);
      return { scan, items: await store.items(id) };
    },

    list: (accountId, limit = 50) => store.list(accountId, limit),

    fixable: (accountId, id) => fixable(store, accountId, id),
    async fix(who, request) {
      // Each fix fetches the whole repository again: at most `concurrency` on this server, and one per account.
      if (fixing.has(who.accountId)) throw new ServerBusyError('fixes', 'A fix of this account is running already: try again once it has ended');
      if (fixing.size >= limits.concurrency) throw new ServerBusyError('fixes', `This server runs ${limits.concurrency} fix${limits.concurrency === 1 ? '' : 'es'} at once, its limit: try again in a moment`);
      fixing.add(who.accountId);
      try {
        return await fixScan(
          { store, accounts, fetch: deps.fetch, sources: deps.sources, allowedSources: limits.sources, maxBytes: limits.maxBytes, maxFiles: limits.maxFiles, maxSeconds: limits.maxSeconds, mark: deps.mark, clock },
          who,
          request,
        );
      } finally {
        fixing.delete(who.accountId);
      }
    },

    async cancel(accountId, id) {
      const scan = await find(accountId, id);
      if (FINISHED_STATES.includes(scan.state)) throw new ScanNotCancellableError(scan.state);
      const ended = await store.finish(id, 'cancelled', 'cancelled by a person of the account', clock.now());
      running.get(id)?.abort(new Error('cancelled'));
      tokens.delete(id);
      if (!ended) {
        const now = await find(accountId, id);
        throw new ScanNotCancellableError(now.state);
      }
      return find(accountId, id);
    },

    async today(accountId, userId) {
      const day = utcDay(clock.now());
      const [used, accountLimits] = await Promise.all([store.countUserToday(userId, day.start), accounts.accountLimits(accountId)]);
      return { used, limit: accountLimits.scansPerUserPerDay, resetsAt: new Date(day.start.getTime() + 86_400_000) };
    },

    control,
    status: () => control.status(),
    pause: (by) => control.pause(by),
    resume: (by) => control.resume(by),
    setCeiling: (perDay, by) => control.setCeiling(perDay, by),

    async start() {
      // The database may be away at this moment (the server already listens): what fails here is tried
      // again every RECOVER_MS, and the server serves meanwhile.
      let working = false;
      let recovered = false;
      const attempt = async () => {
        if (!working) {
          await deps.jobs.work(SCAN_QUEUE, limits.concurrency, async (data) => {
            if (typeof data.scanId === 'string') await inSlot(data.scanId);
          });
          working = true;
        }
        await recover(!recovered);
        recovered = true;
      };
      await attempt().catch((error: unknown) => deps.onError(error, 'could not start working on repository scans; trying again'));
      recovering = setInterval(() => {
        if (!stopping) attempt().catch((error: unknown) => deps.onError(error, 'could not look for interrupted scans'));
      }, RECOVER_MS);
      recovering.unref();
    },

    async stop() {
      stopping = true;
      clearInterval(recovering);
      for (const controller of running.values()) controller.abort(new Error('stopping'));
      while (running.size > 0) await new Promise((resolve) => setTimeout(resolve, 20));
    },

    sweep: () => store.sweep(clock.now()),
  };
}
