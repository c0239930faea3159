/**
 * The composition root: configuration, database, use cases, HTTP app,
 * admin socket; and an orderly stop (no new connections, in-flight requests
 * finish, then the database closes and the data directory is unlocked).
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { createAdmin, type Admin } from '../app/admin.js';
import type { Access } from '../app/access/access.js';
import { accessService } from './access-service.js';
import { createThumbnailQueue } from '../app/records/thumbnails.js';
import { firstStart, type FirstStart } from '../app/first-start.js';
import { firstStartText, removeFirstStartFilesFor, writeFirstStartFile } from './first-start-file.js';
import { createPeople, type People } from '../app/people/users.js';
import { SqlPeopleStore } from '../adapters/db/people-store.js';
import { createPasswordHasher } from '../adapters/password-hasher.js';
import { createAdmission } from '../app/admission.js';
import { createFailedWork } from '../app/failed-work.js';
import { createApiAccess, type ApiAccess } from '../app/api-access.js';
import { createSessions } from '../app/people/sessions.js';
import { createSignInLimits } from '../app/people/sign-in-limits.js';
import { createInviteLimits } from '../app/people/invite-limits.js';
import { createRepeats } from '../app/repeats.js';
import { SqlRepeatStore } from '../adapters/db/repeat-store.js';
import { createMailer } from '../adapters/mailer.js';
import { SqlBrakeStore } from '../adapters/db/brake-store.js';
import { SqlSignupStore } from '../adapters/db/signup-store.js';
import { createSignUps } from '../app/people/signup.js';
import { ignoredLimitSettings } from '../app/limit-settings.js';
import { systemClock, type Clock, type JobPort } from '../app/ports.js';
import type { Config } from '../config.js';
import { openDatabase, type DatabaseHandle } from '../adapters/db/open.js';
import { EmbeddedStore } from '../adapters/db/embedded-store.js';
import { SqlStore } from '../adapters/db/sql-store.js';
import { createProvenance } from '../app/provenance.js';
import { SigningKeys } from '../adapters/signing-keys.js';
import { FingerprintKeys } from '../adapters/fingerprint-keys.js';
import { checkDeploymentPaths } from '../adapters/private-paths.js';
import { createWorkerPool } from '../adapters/worker-pool.js';
import { createPixelDecoder } from '../adapters/pixels.js';
import { createFingerprinting } from '../app/fingerprint.js';
import { createRecords, THUMBNAIL_SIDE, type Records } from '../app/records/records.js';
import { SqlRecordStore } from '../adapters/db/record-store.js';
import { createCertificateMaker } from '../adapters/certificate-pdf.js';
import { buildHttpApp } from '../http/build-app.js';
import { lookup } from 'node:dns/promises';
import { mkdirSync, rmSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { createScans, type Scans } from '../app/scans/scans.js';
import { SqlScanStore } from '../adapters/db/scan-store.js';
import { fetchRepository } from '../adapters/git/repository.js';
import { openJobQueue, type JobQueue } from '../adapters/jobs/queue.js';
import { createLinkMails, type LinkMails } from '../app/people/link-mails.js';
import { inspectWithFingerprint } from '../app/verify-image.js';
import { protectOffLoop } from '../app/protect-image.js';
import { VaultKeys } from '../adapters/vault-keys.js';
import { openBlobStore } from '../adapters/storage/open.js';
import { SqlVaultStore } from '../adapters/db/vault-store.js';
import { createVault, type Vault } from '../app/vault/vault.js';
import type { BlobStore } from '../app/vault/ports.js';
import { startAdminSocket, type AdminSocket } from './admin-socket.js';

/** How often ended sessions, expired idempotency rows and batches are removed. */
const HOUSEKEEPING_INTERVAL_MS = 5 * 60_000;
/** How often reservations left by a crash are looked for. */
const SWEEP_INTERVAL_MS = 60_000;
/**
 * How often a server on PostgreSQL renews its lease on its reservations: a
 * quarter of the reservation TTL (so that three renewals in a row may fail,
 * the database away for a moment, before others judge it gone), between 1
 * and 30 s.
 */
const heartbeatMs = (ttlSeconds: number) => Math.min(30_000, Math.max(1000, (ttlSeconds * 1000) / 4));
/**
 * How long each step of the stop after the HTTP server (pending writes, the
 * database, the workers) may take before it is given up on and reported:
 * more than the embedded database's own watchdog (5 s), so that a stuck
 * statement is failed by it first. Without a bound, a database thread that
 * never answers (a disk gone read-only) left SIGTERM without effect.
 */
const CLOSE_STEP_TIMEOUT_MS = 7_000;
/** How often the vault's database and storage are made to agree again (also at every start). */
const VAULT_CHECK_INTERVAL_MS = 6 * 3_600_000;

export interface RunningServer {
  readonly app: FastifyInstance;
  readonly url: string;
  readonly access: ApiAccess;
  readonly admin: Admin;
  readonly people: People;
  /** API access requests, their decisions, and keys as people handle them. */
  readonly apiKeys: Access;
  /** Dated service records (docs/records.md). */
  readonly records: Records;
  /** Repository scans (docs/scans.md). */
  readonly scans: Scans;
  /** The Private Vault (docs/vault.md). */
  readonly vault: Vault;
  readonly vaultKeys: VaultKeys;
  /** Where the vault's sealed files are (a directory, or an S3-compatible bucket). */
  readonly vaultBlobs: BlobStore;
  /** The open database (tests compose use cases of their own over it). */
  readonly database: DatabaseHandle;
  /** What this start handed over in the first-start file (an empty database's `local` account, owner links), if anything. */
  readonly firstStart: { readonly path: string; readonly local: FirstStart['local']; readonly ownerLinks: number } | undefined;
  /** The deployment's key files; `created` says whether this start made them. */
  readonly signingKeys: SigningKeys;
  readonly fingerprintKeys: FingerprintKeys;
  close(): Promise<void>;
}

export interface StartOptions {
  readonly clock?: Clock;
  /** Logger passed to fastify (tests pass false). */
  readonly logger?: Parameters<typeof buildHttpApp>[0]['logger'];
  /** Serve the admin socket (embedded database only). Default true. */
  readonly adminSocket?: boolean;
  /** Make the first start's account and file when the database is empty (only one worker of several does). Default true. */
  readonly firstStart?: boolean;
  /**
   * Listen on a socket of this process's own with SO_REUSEPORT, beside the
   * other workers' on the same port (the kernel spreads connections over
   * them), instead of node:cluster's one shared socket. Default false.
   */
  readonly reusePort?: boolean;
  /** The vault's storage, instead of the one configured (tests wrap it); and a step between its two writes (the crash test stops there). */
  readonly vault?: { readonly blobs?: BlobStore; readonly afterBytes?: () => Promise<void> | void };
}

export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const clock = options.clock ?? systemClock;
  let app: FastifyInstance | undefined;
  // Before anything is opened or created: a path another user can write refuses the start.
  const permissionWarnings = checkDeploymentPaths(config);
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    limitSeeds: config.limitSeeds,
    onError: (error) => app?.log.warn({ err: error }, 'database connection error'),
  });
  const onWriteError = (error: unknown) => app?.log.warn({ err: error }, 'could not record finished calls');
  // On PostgreSQL, this server's reservations carry its id, and a lease it renews (migration 004-instances).
  const instanceId = randomUUID();
  const sqlStore = new SqlStore(database.db, onWriteError, database.kind === 'postgres' ? instanceId : undefined);
  // The embedded database has one user, this process: its bookkeeping can live in memory.
  const store = database.kind === 'pglite' ? new EmbeddedStore(database.db, sqlStore, onWriteError) : sqlStore;
  const keys = SigningKeys.open(config.signingKeysPath, clock.now());
  let url = config.baseUrl ?? `http://${config.host}:${config.port}`;
  const provenance = createProvenance({ keys, issuer: () => config.baseUrl ?? url, clock });
  const admission = createAdmission({ total: config.maxInFlight, perKey: config.maxInFlightPerKey });
  const failedWork = createFailedWork({ budgetSeconds: config.failedWorkSeconds, clock });
  const access = createApiAccess({ store, clock, admission, failedWork, onSettleError: (error) => app?.log.warn({ err: error }, 'could not settle a reservation') });
  const peopleStore = new SqlPeopleStore(database.db, () => (store instanceof EmbeddedStore ? store.forgetKeys() : undefined));
  const admin = createAdmin({ store, people: peopleStore, clock });
  const sessions = createSessions({ people: peopleStore, store, clock });
  const repeatStore = new SqlRepeatStore(database.db);
  const signupStore = new SqlSignupStore(database.db);
  const brakes = new SqlBrakeStore(database.db);
  const mailer = createMailer({ url: config.smtpUrl, from: config.mailFrom });
  const apiKeys = accessService({
    db: database.db,
    store,
    peopleStore,
    clock,
    mailer,
    baseUrl: () => config.baseUrl ?? url,
    onKeysChanged: () => (store instanceof EmbeddedStore ? store.forgetKeys() : undefined),
    onMailError: (error, request) => app?.log.warn({ err: error, request }, 'could not mail the decision on an access request'),
  });
  const people = createPeople({
    people: peopleStore,
    store,
    hasher: createPasswordHasher(),
    clock,
    baseUrl: () => config.baseUrl ?? url,
    onLinkUsed: (link) => {
      for (const path of removeFirstStartFilesFor(config.dataDir, link)) app?.log.info({ path }, 'the owner set a password: removed the first-start file');
    },
  });
  const fingerprintKeys = FingerprintKeys.open(config.fingerprintKeysPath, clock.now());
  const pixels = createPixelDecoder({ maxPixels: config.maxPixels, concurrency: config.decodeConcurrency, queue: config.decodeQueue });
  const pool = createWorkerPool({ threads: config.fingerprintThreads, queue: config.fingerprintQueue });
  const recordStore = new SqlRecordStore(database.db);
  const thumbnails = createThumbnailQueue({
    make: (bytes) => pixels.thumbnail(bytes, THUMBNAIL_SIDE),
    store: (recordId, thumbnail) => recordStore.putThumbnail(recordId, thumbnail),
    busy: () => admission.inFlight > 0,
    onError: (error) => app?.log.info({ err: error }, 'a service record is kept without a thumbnail'),
  });
  const records = createRecords({
    store: recordStore,
    provenance,
    clock,
    thumbnails,
    certificates: createCertificateMaker(),
    audit: (entry) => peopleStore.audit(entry),
    issuer: () => config.baseUrl ?? url,
  });
  const vaultKeys = VaultKeys.open(config.vaultKeysPath, clock.now());
  const vaultBlobs = options.vault?.blobs ?? openBlobStore(config);
  const vault = createVault({
    store: new SqlVaultStore(database.db),
    blobs: vaultBlobs,
    keys: vaultKeys,
    clock,
    audit: (entry) => peopleStore.audit(entry),
    onError: (error, what) => app?.log.warn({ err: error }, what),
    afterBytes: options.vault?.afterBytes,
  });
  const fingerprint = createFingerprinting({
    pixels,
    detect: (task) => pool.detect(task),
    embed: (task, signal) => pool.embed(task, signal),
    detecting: () => fingerprintKeys.detecting,
    marking: () => fingerprintKeys.marking,
  });

  const scanStore = new SqlScanStore(database.db);
  const scanWork = join(config.dataDir, 'scans');
  let jobs: JobQueue | undefined;
  let linkMails: LinkMails | undefined;
  // The queue opens once the server is built; its users hold this port to it from the start.
  const jobPort: JobPort = {
    send: (name, data, options) => jobs!.send(name, data, options),
    work: (name, concurrency, handler) => jobs!.work(name, concurrency, handler),
  };
  const scans = createScans({
    store: scanStore,
    accounts: store,
    jobs: jobPort,
    fetch: (request, limits) => fetchRepository({ ...request, workRoot: scanWork }, limits),
    sources: {
      resolve: async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address),
      realpath: (path) => realpath(path),
    },
    check: (bytes, signal) => inspectWithFingerprint(bytes, { provenance, fingerprint, maxImagePixels: config.maxImagePixels, signal, workers: pool }),
    limits: { ...config.scans, checkConcurrency: config.decodeConcurrency },
    clock,
    instanceId,
    liveInstances: () => scanStore.liveInstances(new Date(clock.now().getTime() - config.reservationTtlSeconds * 1000)),
    soleServer: database.kind === 'pglite',
    onError: (error, what) => app?.log.warn({ err: error }, what),
    audit: (entry) => peopleStore.audit(entry),
    async mark(bytes, path, signal) {
      const iat = Math.floor(clock.now().getTime() / 1000);
      const marked = await protectOffLoop(bytes, { filename: path.split('/').pop(), maxImagePixels: config.maxImagePixels }, provenance.at(iat), { workers: pool, signal });
      return { bytes: marked.bytes, sha256: marked.sha256, value: marked.value, tagKid: marked.tagKid };
    },
  });

  let sweeper: NodeJS.Timeout | undefined;
  let housekeeping: NodeJS.Timeout | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  let vaultChecks: NodeJS.Timeout | undefined;
  let socket: AdminSocket | undefined;
  try {
    // The vault's rows and bytes agree before anything is kept: what a crash left half done is finished or undone.
    // The embedded database has one server, this one: nothing of another is in progress. On PostgreSQL another
    // server's marking may be, and is left alone for the reservation TTL (longer than any call).
    const vaultGraceMs = database.kind === 'pglite' ? 0 : config.reservationTtlSeconds * 1000;
    const vaultCheck = async (graceMs: number) => {
      const found = await vault.check(graceMs);
      if (found.finished + found.removed + found.orphans + found.missing > 0) app?.log.warn(found, 'the vault check finished or undid work a stop left half done');
      return found;
    };
    // The storage and the keys must be this database's vault's: a server with its own would drop the others' files.
    const vaultProblem = await vault.claimIdentity(config.vaultKeysPath);
    const startCheck = await vaultCheck(vaultGraceMs);
    // Only PostgreSQL keeps reservations in the database; the embedded store
    // holds them in memory, so a crash leaves none to give back. The first
    // sweep also takes this server's lease, before it reserves anything.
    const sweeps = database.kind === 'postgres';
    if (sweeps) await access.sweep(config.reservationTtlSeconds);
    // Fetched repositories live here while they are scanned; anything left by a crash goes first.
    rmSync(scanWork, { recursive: true, force: true });
    mkdirSync(scanWork, { recursive: true, mode: 0o700 });
    // While the database is away the queue fails every poll: said once a minute, with how many were not said.
    let queueErrorAt = 0;
    let queueErrorsUnsaid = 0;
    jobs = await openJobQueue(database, config.databaseUrl, (error) => {
      const now = Date.now();
      if (now - queueErrorAt < 60_000) {
        queueErrorsUnsaid += 1;
        return;
      }
      app?.log.warn({ err: error, unsaid: queueErrorsUnsaid }, 'job queue error');
      queueErrorAt = now;
      queueErrorsUnsaid = 0;
    });
    const signUps = config.signup ? createSignUps({ store: signupStore, peopleStore, people, admin, clock, baseUrl: () => config.baseUrl ?? url }) : undefined;
    linkMails = createLinkMails({
      jobs: jobPort,
      people,
      signUps,
      mailer,
      retrySeconds: config.mailRetrySeconds,
      // The error of the SMTP server or the database, never the link.
      failed: (kind, error) => app?.log.warn({ err: error, kind }, 'could not make or mail a link; the job tries again later'),
    });
    const web = {
      people,
      peopleStore,
      sessions,
      signInLimits: createSignInLimits(brakes, clock),
      inviteLimits: createInviteLimits(brakes, () => clock.now()),
      admin,
      apiKeys,
      mailer,
      signUps,
      linkMails,
      repeats: createRepeats({ store: repeatStore, clock, requestTimeoutMs: config.requestTimeoutSeconds * 1000 }),
    };
    app = await buildHttpApp({ config, access, web, records, scans, vault, provenance, fingerprint, workers: pool, jwks: () => keys.jwks(), ping: () => store.ping(), clock: () => clock.now(), logger: options.logger });
    const server = app;
    for (const warning of permissionWarnings) server.log.warn(warning);
    for (const line of await ignoredLimitSettings(config, store)) server.log.warn(line);
    if (vaultProblem !== undefined) server.log.error(`${vaultProblem}; until then this server keeps, opens and checks no Private Vault file`);
    if (startCheck.finished + startCheck.removed + startCheck.orphans + startCheck.missing > 0) server.log.warn(startCheck, 'the vault check at start finished or undid work a stop left half done');
    vaultChecks = setInterval(() => {
      vaultCheck(config.reservationTtlSeconds * 1000).catch((error: unknown) => server.log.warn({ err: error }, 'the vault check failed'));
    }, VAULT_CHECK_INTERVAL_MS);
    vaultChecks.unref();
    // Ended sessions, old idempotency rows and batches are removed every few minutes, on every back end.
    housekeeping = setInterval(() => {
      Promise.all([sessions.sweep(), repeatStore.sweep(clock.now()), scans.sweep(), signupStore.sweep(new Date(clock.now().getTime() - 86_400_000)), brakes.sweep(clock.now())]).catch((error: unknown) => server.log.warn({ err: error }, 'housekeeping failed'));
    }, HOUSEKEEPING_INTERVAL_MS);
    housekeeping.unref();
    if (sweeps) {
      sweeper = setInterval(() => {
        access.sweep(config.reservationTtlSeconds).then(
          (n) => n > 0 && server.log.info({ refunded: n }, 'gave back units of calls that never finished'),
          (error: unknown) => server.log.warn({ err: error }, 'reservation sweep failed'),
        );
      }, SWEEP_INTERVAL_MS);
      sweeper.unref();
      heartbeat = setInterval(() => {
        access.heartbeat().catch((error: unknown) => server.log.warn({ err: error }, 'could not renew the lease on reservations'));
      }, heartbeatMs(config.reservationTtlSeconds));
      heartbeat.unref();
    }
    if (database.kind === 'pglite' && options.adminSocket !== false) socket = await startAdminSocket(config.dataDir, { admin, people, apiKeys, scans: scans.control }, server.log);
    url = await server.listen({ port: config.port, host: config.host, ...(options.reusePort ? { exclusive: true, reusePort: true } : {}) });
    await scans.start();
    await linkMails.start((error) => server.log.warn({ err: error }, 'could not start working on the queued mails; trying again in 30 s'));
    // Only now that the server listens: a start that fails before creates nothing.
    const start = options.firstStart === false ? { local: undefined, ownerLinks: [], handedOver: async () => {} } : await firstStart({ store, admin, people });
    let handedOver: RunningServer['firstStart'];
    if (start.local || start.ownerLinks.length > 0) {
      const firstStartFile = writeFirstStartFile(config.dataDir, firstStartText(start, config.baseUrl ?? url, clock.now()), clock.now());
      await start.handedOver();
      handedOver = { path: firstStartFile, local: start.local, ownerLinks: start.ownerLinks.length };
    }
    let closing: Promise<void> | undefined;
    return {
      app: server,
      url,
      access,
      admin,
      people,
      apiKeys,
      records,
      scans,
      vault,
      vaultKeys,
      vaultBlobs,
      database,
      firstStart: handedOver,
      signingKeys: keys,
      fingerprintKeys,
      close() {
        closing ??= (async () => {
          clearInterval(sweeper);
          clearInterval(housekeeping);
          clearInterval(heartbeat);
          clearInterval(vaultChecks);
          linkMails?.stop();
          thumbnails.close();
          // Every step runs even when one before it fails (a read-only data
          // directory, a database that stopped): a step skipped would leave a
          // thread or handle that keeps the process from exiting.
          let failure: unknown;
          // The HTTP server's own bound is the request timeout, once for the
          // calls in flight and once more for the handlers of calls whose
          // client went away (they still use the database and the worker
          // pool closed after it); the other steps get CLOSE_STEP_TIMEOUT_MS.
          const steps: Array<[string, () => Promise<void> | undefined, bounded: boolean]> = [
            // Scans running stop first (what they checked is saved; they resume on a later start).
            ['the repository scans', () => scans.stop(), true],
            ['the job queue', () => jobs?.stop(CLOSE_STEP_TIMEOUT_MS - 1000), true],
            // After the queue: a mail its jobs are sending goes out.
            ['the mailer', () => void mailer.close(), true],
            ['the HTTP server', () => server.close(), false],
            ['the admin socket', () => socket?.close(), true],
            ['the usage writes still pending', () => store.flush(), true],
            ['the vault files still being marked stored', () => vault.idle(), true],
            ['the database', () => database.close(), true],
            ['the fingerprint workers', () => pool.close(), true],
            ["the vault's storage", () => vaultBlobs.close(), true],
          ];
          for (const [what, step, bounded] of steps) {
            try {
              await (bounded ? withinTime(step(), CLOSE_STEP_TIMEOUT_MS, what) : step());
            } catch (error) {
              server.log.error({ err: error }, `could not close ${what}`);
              failure ??= error;
            }
          }
          if (failure !== undefined) throw failure;
        })();
        return closing;
      },
    };
  } catch (error) {
    clearInterval(sweeper);
    clearInterval(housekeeping);
    clearInterval(heartbeat);
    clearInterval(vaultChecks);
    mailer.close();
    linkMails?.stop();
    thumbnails.close();
    await scans.stop().catch(() => {});
    await jobs?.stop(1000).catch(() => {});
    await app?.close().catch(() => {});
    await vaultBlobs.close().catch(() => {});
    await socket?.close().catch(() => {});
    await database.close().catch(() => {});
    await pool.close().catch(() => {});
    throw error;
  }
}

/** `work`, or a rejection once `ms` have passed without it settling. */
async function withinTime<T>(work: Promise<T> | undefined, ms: number, what: string): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not close within ${ms / 1000} s`)), ms).unref();
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
