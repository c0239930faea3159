/**
 * Refunds (hardening plan, QUOTA-4): a unit reserved for a call that then
 * fails is given back once, however many times the refund is applied, on
 * both stores; and over HTTP a call that fails after its unit was reserved
 * (a dependency breaking mid-call) answers a 5xx JSON error and leaves usage
 * where it was. Our schema has no "refunded" ledger rows: a refund deletes
 * the reservation, so "exactly one refund" is "the reservation is gone and
 * the counter moved down by one".
 */
import { accessService } from '../../src/server/access-service.js';
import { createThumbnailQueue } from '../../src/app/records/thumbnails.js';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/adapters/db/open.js';
import { EmbeddedStore } from '../../src/adapters/db/embedded-store.js';
import { SqlPeopleStore } from '../../src/adapters/db/people-store.js';
import { SqlStore } from '../../src/adapters/db/sql-store.js';
import { SigningKeys } from '../../src/adapters/signing-keys.js';
import { createAdmin, type Admin } from '../../src/app/admin.js';
import { createAdmission } from '../../src/app/admission.js';
import { createApiAccess, keyCredential, type ApiAccess } from '../../src/app/api-access.js';
import { createSessions } from '../../src/app/people/sessions.js';
import { createSignInLimits } from '../../src/app/people/sign-in-limits.js';
import { createInviteLimits } from '../../src/app/people/invite-limits.js';
import { SqlBrakeStore } from '../../src/adapters/db/brake-store.js';
import { createPeople } from '../../src/app/people/users.js';
import { createRepeats } from '../../src/app/repeats.js';
import { createLinkMails } from '../../src/app/people/link-mails.js';
import { createMailer } from '../../src/adapters/mailer.js';
import { createPasswordHasher } from '../../src/adapters/password-hasher.js';
import { SqlRepeatStore } from '../../src/adapters/db/repeat-store.js';
import { SqlRecordStore } from '../../src/adapters/db/record-store.js';
import { createCertificateMaker } from '../../src/adapters/certificate-pdf.js';
import { createPixelDecoder } from '../../src/adapters/pixels.js';
import { createRecords, THUMBNAIL_SIDE } from '../../src/app/records/records.js';
import type { Fingerprinting } from '../../src/app/fingerprint.js';
import { API_PLANS, systemClock, type Store } from '../../src/app/ports.js';
import { createProvenance, type Provenance } from '../../src/app/provenance.js';
import { NO_FINGERPRINT } from '../../src/app/verify-image.js';
import { loadConfig } from '../../src/config.js';
import { periodOf } from '../../src/core/quota/period.js';
import { buildHttpApp } from '../../src/http/build-app.js';
import { SqlVaultStore } from '../../src/adapters/db/vault-store.js';
import { FileBlobStore } from '../../src/adapters/storage/filesystem.js';
import { VaultKeys } from '../../src/adapters/vault-keys.js';
import { createVault } from '../../src/app/vault/vault.js';
import { generatedImages } from '../support/generated.js';
import { HeldUpload, multipartBody } from '../support/raw-http.js';
import { BACKENDS, freshDataDir, freshPgDatabase, postImage, type Backend } from '../support/server.js';

const JPEG = (await generatedImages()).find((g) => g.name === 'baseline.jpg')!.bytes;

/** The stores exactly as src/server/start.ts composes them, on a database of their own. */
interface Stores {
  readonly database: DatabaseHandle;
  readonly store: Store;
  readonly admin: Admin;
  readonly dataDir: string;
  close(): Promise<void>;
}

async function openStores(backend: Backend): Promise<Stores> {
  const dataDir = freshDataDir();
  const pgDb = backend === 'postgres' ? await freshPgDatabase() : undefined;
  const database = await openDatabase({ databaseUrl: pgDb?.url, dataDir });
  const sqlStore = new SqlStore(database.db);
  const store = database.kind === 'pglite' ? new EmbeddedStore(database.db, sqlStore) : sqlStore;
  return {
    database,
    store,
    admin: createAdmin({ store, people: new SqlPeopleStore(database.db), clock: systemClock }),
    dataDir,
    async close() {
      await store.flush();
      await database.close();
      await pgDb?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

describe.each(BACKENDS)('refunds in the %s store', (backend) => {
  let s: Stores;
  beforeAll(async () => {
    s = await openStores(backend);
  });
  afterAll(async () => s?.close());

  it('a refund applied twice gives back one unit only: one after the other, and both at once', async () => {
    const name = `refund-twice-${backend}`;
    const account = await s.admin.createAccount(name, 'pro');
    const { key } = await s.admin.issueKey(name);
    const now = new Date();
    const period = periodOf(now).key;
    const reserve = async () => {
      const reservationId = randomUUID();
      const outcome = await s.store.authenticateAndReserve({
        digest: keyCredential(key).keyDigest,
        now,
        period,
        operation: 'protect',
        reservationId,
        plans: API_PLANS,
      });
      expect(outcome.kind).toBe('reserved');
      return reservationId;
    };
    const used = async () => (await s.store.usage(account.id, period)).protect;

    // Three units in flight: a refund that counted twice would take one of
    // another call's units, which a single reservation (floored at 0 by the
    // schema's check) could hide.
    const [a, b, c] = [await reserve(), await reserve(), await reserve()];
    expect(await used()).toBe(3);

    await s.store.refund(a);
    await s.store.refund(a);
    expect(await used()).toBe(2);

    // Both at once: on PostgreSQL the second DELETE waits for the first's row
    // lock, then finds nothing to give back.
    await Promise.all([s.store.refund(b), s.store.refund(b)]);
    expect(await used()).toBe(1);

    if (backend === 'postgres') {
      // Only c's reservation is still open; a and b each left exactly once.
      const { rows } = await sql<{ id: string }>`select id::text from reservations where account_id = ${account.id}`.execute(s.database.db);
      expect(rows.map((r) => r.id)).toEqual([c]);
    }
    await s.store.refund(c);
    await s.store.refund(c);
    expect(await used()).toBe(0);

    // What is written down agrees once the store has flushed (the embedded
    // store never writes units of calls that did not return 200).
    await s.store.flush();
    const row = await s.database.db.selectFrom('usage').select('used').where('account_id', '=', account.id).where('period', '=', period).where('operation', '=', 'protect').executeTakeFirst();
    expect(row?.used ?? 0).toBe(0);
  });

  // SqlStore queues commits for up to 10 ms (longer while PostgreSQL is
  // failing) before deleting their reservations: a refund in between must
  // still find the unit committed.
  it('a refund after the commit gives nothing back (the Store port promises it)', async () => {
    const name = `refund-after-commit-${backend}`;
    const account = await s.admin.createAccount(name, 'pro');
    const { key } = await s.admin.issueKey(name);
    const now = new Date();
    const period = periodOf(now).key;
    const reservationId = randomUUID();
    const outcome = await s.store.authenticateAndReserve({ digest: keyCredential(key).keyDigest, now, period, operation: 'verify', reservationId, plans: API_PLANS });
    if (outcome.kind !== 'reserved') throw new Error(`not reserved: ${outcome.kind}`);
    await s.store.commit(reservationId, outcome.principal.keyId, now);
    await s.store.refund(reservationId);
    await s.store.flush();
    expect((await s.store.usage(account.id, period)).verify).toBe(1);
  });
});

/**
 * The HTTP app as src/server/start.ts builds it, but with the two
 * dependencies a call uses after its unit is reserved replaced by ones the
 * test can break: the signer protect uses, and the fingerprint check every
 * verify makes. The store is watched, to prove the unit was really reserved
 * and refunded (and not simply never taken).
 */
interface FaultyServer {
  readonly url: string;
  readonly admin: Admin;
  readonly access: ApiAccess;
  readonly calls: { reserved: number; refunds: number };
  readonly faults: { signer?: Error; fingerprint?: Error; hold?: Hold };
  /** The HTTP app's close alone (what the server's shutdown runs first); the stores stay open. */
  closeHttp(): Promise<void>;
  close(): Promise<void>;
}

/** Holds verify's fingerprint check: `started` is called when one begins, which then waits for `until`. */
interface Hold {
  readonly started: () => void;
  readonly until: Promise<void>;
}

async function startFaultyServer(backend: Backend): Promise<FaultyServer> {
  const s = await openStores(backend);
  const calls = { reserved: 0, refunds: 0 };
  const faults: FaultyServer['faults'] = {};
  // Every other method goes to the real store, bound to it (its state lives on it).
  const store = new Proxy(s.store, {
    get(target, property) {
      if (property === 'authenticateAndReserve') {
        return async (...args: Parameters<Store['authenticateAndReserve']>) => {
          const outcome = await target.authenticateAndReserve(...args);
          if (outcome.kind === 'reserved') calls.reserved++;
          return outcome;
        };
      }
      if (property === 'refund') {
        return async (id: string) => {
          calls.refunds++;
          return target.refund(id);
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const config = loadConfig({ PORT: '0', OPTMARK_DATA_DIR: s.dataDir, OPTMARK_LOG_LEVEL: 'silent' });
  const keys = SigningKeys.open(join(s.dataDir, 'signing-keys.json'));
  const real = createProvenance({ keys, issuer: () => 'http://127.0.0.1', clock: systemClock });
  const faulty = (signer: Provenance['signer']): Provenance['signer'] => ({
    sign(digest, dataMining) {
      if (faults.signer) throw faults.signer;
      return signer.sign(digest, dataMining);
    },
    accepts: signer.accepts,
  });
  const faultyProvenance = (p: Provenance): Provenance => ({ ...p, signer: faulty(p.signer), at: (iat) => faultyProvenance(p.at(iat)) });
  const provenance = faultyProvenance(real);
  const fingerprint: Fingerprinting = {
    async check() {
      if (faults.fingerprint) throw faults.fingerprint;
      if (faults.hold) {
        faults.hold.started();
        await faults.hold.until;
      }
      return NO_FINGERPRINT;
    },
    async mark() {
      throw new Error('not used by the API');
    },
  };
  const access = createApiAccess({ store, clock: systemClock, admission: createAdmission({ total: 32, perKey: 8 }) });
  let app: FastifyInstance | undefined;
  try {
    const recordStore = new SqlRecordStore(s.database.db);
    app = await buildHttpApp({
      config,
      access,
      web: webOf(s.database, store, s.admin),
      records: createRecords({
        store: recordStore,
        provenance,
        clock: systemClock,
        thumbnails: createThumbnailQueue({
          make: (bytes) => createPixelDecoder({ maxPixels: 1e8, concurrency: 1, queue: 8 }).thumbnail(bytes, THUMBNAIL_SIDE),
          store: (recordId, thumbnail) => recordStore.putThumbnail(recordId, thumbnail),
          busy: () => false,
        }),
        certificates: createCertificateMaker(),
        audit: (entry) => new SqlPeopleStore(s.database.db).audit(entry),
        issuer: () => 'http://127.0.0.1',
      }),
      vault: createVault({
        store: new SqlVaultStore(s.database.db),
        blobs: new FileBlobStore(join(s.dataDir, 'vault')),
        keys: VaultKeys.open(join(s.dataDir, 'vault-keys.json')),
        clock: systemClock,
        audit: (entry) => new SqlPeopleStore(s.database.db).audit(entry),
      }),
      provenance,
      fingerprint,
      jwks: () => keys.jwks(),
      ping: () => store.ping(),
      clock: () => new Date(),
      logger: false,
    });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const server = app;
    let closingHttp: Promise<void> | undefined;
    const closeHttp = () => (closingHttp ??= server.close());
    return {
      url,
      admin: s.admin,
      access,
      calls,
      faults,
      closeHttp,
      async close() {
        await closeHttp();
        await s.close();
      },
    };
  } catch (error) {
    await app?.close();
    await s.close();
    throw error;
  }
}

/** The people's side's use cases over the same database (the image routes under test do not use them). */
function webOf(database: DatabaseHandle, store: Store, admin: Admin) {
  const peopleStore = new SqlPeopleStore(database.db);
  const people = createPeople({ people: peopleStore, store, hasher: createPasswordHasher(), clock: systemClock, baseUrl: () => 'http://127.0.0.1' });
  const mailer = createMailer({ url: undefined, from: 'optmark <no-reply@localhost>' });
  const brakes = new SqlBrakeStore(database.db);
  return {
    apiKeys: accessService({ db: database.db, store, peopleStore, clock: systemClock, mailer, baseUrl: () => 'http://127.0.0.1' }),
    people,
    peopleStore,
    sessions: createSessions({ people: peopleStore, store, clock: systemClock }),
    signInLimits: createSignInLimits(brakes, systemClock),
    inviteLimits: createInviteLimits(brakes, () => systemClock.now()),
    admin,
    mailer,
    // Mail is off here: the public forms that would queue a link's mail send the visitor to sign in instead.
    linkMails: createLinkMails({ jobs: { send: () => Promise.reject(new Error('no job queue in this test')), work: async () => {} }, people, signUps: undefined, mailer, retrySeconds: 30, failed: () => {} }),
    repeats: createRepeats({ store: new SqlRepeatStore(database.db), clock: systemClock, requestTimeoutMs: 120_000 }),
  };
}

describe.each(BACKENDS)('a call that fails after its unit was reserved, on %s', (backend) => {
  let t: FaultyServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const cases: Array<[string, '/api/v1/protect' | '/api/v1/verify', 'signer' | 'fingerprint']> = [
    ['protect, its signer throwing', '/api/v1/protect', 'signer'],
    ['verify, its fingerprint check rejecting', '/api/v1/verify', 'fingerprint'],
  ];

  it.each(cases)('%s: 500 internal_error in JSON, usage unchanged, and counted again once it works', async (_, path, broken) => {
    t = await startFaultyServer(backend);
    const name = `faulty-${backend}-${broken}`;
    await t.admin.createAccount(name, 'pro');
    const { key } = await t.admin.issueKey(name);
    const operation = path.endsWith('protect') ? 'protect' : 'verify';
    const used = async () => {
      const report = (await (await fetch(`${t!.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } })).json()) as Record<string, { used: number }>;
      return report[operation]!.used;
    };
    // One success first, so "unchanged" is not simply "still zero".
    expect((await postImage(t.url, key, JPEG, { path })).status).toBe(200);
    expect(await used()).toBe(1);

    t.faults[broken] = new Error('injected: the dependency broke');
    for (let i = 0; i < 3; i++) {
      const response = await postImage(t.url, key, JPEG, { path });
      expect(response.status).toBe(500);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      const body = (await response.json()) as Record<string, string>;
      expect(Object.keys(body).sort()).toEqual(['code', 'error', 'requestId']);
      expect(body.code).toBe('internal_error');
      // Nothing of the injected error reaches the client.
      expect(body.error).not.toMatch(/injected/);
      // The refund happens before the answer is sent: the very next read sees it.
      expect(await used()).toBe(1);
    }
    // The failures did reserve (4 calls so far) and each gave its unit back once.
    expect(t.calls).toEqual({ reserved: 4, refunds: 3 });
    expect((await t.admin.usage(name))[operation].used).toBe(1);
    // No reservation is left open for the crash sweep to find (PostgreSQL keeps them in the database).
    expect(await t.access.sweep(0)).toBe(0);

    delete t.faults[broken];
    expect((await postImage(t.url, key, JPEG, { path })).status).toBe(200);
    expect(await used()).toBe(2);
  });
});

describe.each(BACKENDS)('a call whose client goes away while it runs, on %s', (backend) => {
  let t: FaultyServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  // Seen under load: a stop that closed the worker pool under such a call
  // failed its fingerprint check, logged as an unhandled error.
  it('gets its unit back, and closing the HTTP app waits for its handler before the stores and the pool may close', async () => {
    t = await startFaultyServer(backend);
    const name = `gone-${backend}`;
    await t.admin.createAccount(name, 'pro');
    const { key } = await t.admin.issueKey(name);
    const { promise: checkStarted, resolve: started } = Promise.withResolvers<void>();
    const { promise: until, resolve: release } = Promise.withResolvers<void>();
    t.faults.hold = { started: () => started(), until };

    const upload = new HeldUpload(t.url, key, multipartBody([{ name: 'image', filename: 'a.jpg', type: 'image/jpeg', data: JPEG }]), '/api/v1/verify');
    void upload.finish();
    await checkStarted;
    upload.abort();
    const events: string[] = [];
    const closed = t.closeHttp().then(() => events.push('closed'));
    await sleep(300);
    expect(events).toEqual([]);
    events.push('released');
    release();
    await closed;
    expect(events).toEqual(['released', 'closed']);
    // Its unit was reserved, then given back when the client left.
    expect(t.calls).toEqual({ reserved: 1, refunds: 1 });
    expect((await t.admin.usage(name)).verify.used).toBe(0);
  });
});
