/**
 * The Private Vault (docs/vault.md): when an account's owner turns it on,
 * every file marked through the dashboard is kept twice, the original and
 * the marked file, sealed (sealing.ts) in a BlobStore, for the account's
 * people to find, preview, download and delete. It holds at most the
 * account's `vault_bytes` (the limits table), counted exactly: the plaintext
 * bytes of each distinct file stored. A marking whose files would pass it
 * is not kept (the marking itself succeeds and says so).
 *
 * Nothing is ever half-kept. A file is written down in the database first
 * (`writing`, counted against the limit), then its bytes are written and
 * synced, and the marking answers "kept"; the database says `stored` just
 * after (not waited for: the rows and the bytes are durable already, and a
 * stop before it is finished by the check). A removal writes `removing`
 * first, removes the bytes, then the row. A crash anywhere leaves rows the
 * check (at start, then every few hours) finishes (a file whose bytes are
 * all there and open) or undoes (the rest), and bytes no row names, which
 * the check removes: no row without bytes, no bytes without a row.
 */
import { randomBytes } from 'node:crypto';
import { randomBase62 } from '../../core/keys/api-key.js';
import { InvalidOptionError, PlanNotAllowedError, RoleNotAllowedError, ServiceUnavailableError, VaultFileNotFoundError, VaultFileUnreadableError } from '../../errors.js';
import type { AuditEntry, User } from '../people/ports.js';
import { API_PLANS, type Clock, type Plan } from '../ports.js';
import type { BlobStore, VaultFile, VaultKeyRing, VaultObject, VaultSearch, VaultStatus, VaultStore, VaultViewer } from './ports.js';
import { vaultIdentityProblem } from './identity.js';
import { objectName, open, seal, SealError } from './sealing.js';
import { makeZip } from 'client-zip';

/** Files one page of the vault lists. */
export const VAULT_PAGE_SIZE = 50;
/** Files one archive may hold at most (each is two files in it). */
export const ARCHIVE_MAX_FILES = 200;
/** The most one download may hold (a ZIP without ZIP64 extensions, which every unzip tool reads). */
export const ARCHIVE_MAX_BYTES = 0xffff_ffff;
const SHA256 = /^[0-9a-fA-F]{64}$/;
const FILE_ID = /^vlt_[A-Za-z0-9]{20}$/;
/** A download or deletion sent with no file ticked. */
const NOTHING_CHOSEN = 'Choose at least one file first: tick its box in the list';

/** What a dashboard marking hands over to be kept. */
export interface KeepInput {
  readonly account: { readonly id: string };
  readonly user: Pick<User, 'id' | 'email'>;
  /**
   * The marking's dated service record, being made at the same time: the
   * file names it once it is made, and is removed if it is not (the marking
   * then fails).
   */
  readonly recordId: Promise<string | null>;
  readonly batchId: string | null;
  readonly original: { readonly bytes: Uint8Array; readonly sha256: string; readonly mimeType: string; readonly name: string };
  readonly marked: { readonly bytes: Uint8Array; readonly sha256: string; readonly mimeType: string; readonly name: string };
}

/**
 * What became of a marking's files: kept (`stored`), not kept because the
 * vault would pass its limit (`full`), because it is off (`off`), or because
 * the storage failed or one of the files was being removed (`not_stored`).
 */
export type KeepOutcome =
  | { readonly state: 'stored'; readonly fileId: string }
  | { readonly state: 'full'; readonly used: number; readonly limit: number; readonly needed: number }
  | { readonly state: 'off' }
  | { readonly state: 'not_stored' };

export interface VaultDeps {
  readonly store: VaultStore;
  readonly blobs: BlobStore;
  readonly keys: VaultKeyRing;
  readonly clock: Clock;
  readonly audit: (entry: AuditEntry) => Promise<void>;
  /** Told of a failure that does not fail the call (storage down while keeping, a removal to finish later). */
  readonly onError?: (error: unknown, what: string) => void;
  /** Between the two writes (bytes durable, database not yet told): the crash test stops the process here. */
  readonly afterBytes?: () => Promise<void> | void;
}

export interface VaultSearchInput {
  readonly q?: string;
  readonly page?: string | number;
}

/** What a check found and did. */
export interface CheckReport {
  /** Files whose bytes were all written when a stop came before the database said so: stored now. */
  readonly finished: number;
  /** Objects removed: their files were never finished, were removed, or their account is gone. */
  readonly removed: number;
  /** Bytes in storage that no row named (a crash between the two writes), removed. */
  readonly orphans: number;
  /** Stored objects whose bytes were missing (a backup restored out of step): their files are dropped. */
  readonly missing: number;
}

export function vaultFilter(input: VaultSearchInput): { filter: VaultSearch; page: number } {
  const q = (input.q ?? '').trim();
  if (q.length > 200) throw new InvalidOptionError('q', 'a file name or a SHA-256 (at most 200 characters)', `${q.slice(0, 40)}…`, 'Search for a file name or a SHA-256 of at most 200 characters');
  const pageText = String(input.page ?? '1').trim() || '1';
  if (!/^\d{1,6}$/.test(pageText)) throw new InvalidOptionError('page', 'a page number', input.page);
  const filter: VaultSearch = SHA256.test(q) ? { hash: q.toLowerCase() } : q !== '' ? { name: q, ...(/^[0-9a-fA-F]{6,63}$/.test(q) ? { hashPrefix: q.toLowerCase() } : {}) } : {};
  return { filter, page: Math.max(1, Number(pageText)) };
}

/** A file's name made safe inside an archive: no folders, no control characters, not empty. */
function entryName(name: string, fallback: string): string {
  const clean = name.replace(/[\\/]/g, '_').replace(/[\u0000-\u001f\u007f]/g, '').replace(/^\.+/, '').trim();
  return clean === '' ? fallback : clean.slice(0, 200);
}

/** `name`, or `name (2)`... when the archive has one of that name already. */
function unique(used: Set<string>, name: string): string {
  let candidate = name;
  for (let n = 2; used.has(candidate.toLowerCase()); n++) {
    const dot = name.lastIndexOf('.');
    candidate = dot > 0 ? `${name.slice(0, dot)} (${n})${name.slice(dot)}` : `${name} (${n})`;
  }
  used.add(candidate.toLowerCase());
  return candidate;
}

export function createVault(deps: VaultDeps) {
  const { store, blobs, keys, clock } = deps;
  const report = (error: unknown, what: string) => deps.onError?.(error, what);
  /** The last steps of keepings that answered already. */
  const settling = new Set<Promise<void>>();
  /**
   * Why this server's storage or keys are not the database's vault's
   * (identity.ts), once claimIdentity has looked: then it keeps, opens and
   * checks nothing, so that it neither drops the files whose bytes it cannot
   * see nor answers their downloads with another storage's absence.
   */
  let foreign: string | undefined;
  /** Set when the storage could not be asked for its id: asked again at each check. */
  let unclaimed: string | undefined;

  /**
   * The database says `stored`, with the marking's record, after the answer;
   * a failure is left to the check, which finishes the file from its bytes.
   * A marking whose record could not be made failed: its file goes.
   */
  function settle(accountId: string, fileId: string, sha256s: readonly string[], recordId: Promise<string | null>): void {
    const work: Promise<void> = recordId
      .then(
        (record) => store.commit(accountId, fileId, sha256s, record).catch((error: unknown) => report(error, 'a vault file kept is not yet marked stored; the next check finishes it')),
        async () => finishRemoval(await store.abandon(accountId, fileId)),
      )
      .catch((error: unknown) => report(error, 'could not remove the vault file of a marking that failed; the next check removes it'))
      .finally(() => settling.delete(work));
    settling.add(work);
  }

  /** Whether every object of the file is there, its bytes whole: it may be marked stored. */
  async function whole(file: VaultFile): Promise<boolean> {
    for (const sha256 of new Set([file.original.sha256, file.marked.sha256])) {
      const object = await store.object(file.accountId, sha256);
      if (!object || object.state === 'removing') return false;
      const sealed = await blobs.get(object.objectName);
      if (!sealed) return false;
      try {
        open(keys, object.objectName, sealed);
      } catch {
        return false;
      }
    }
    return true;
  }

  /** Remove the bytes of objects marked `removing`, then their rows (what is left is finished by the next check). */
  async function finishRemoval(objects: readonly VaultObject[]): Promise<void> {
    if (objects.length === 0) return;
    const gone: VaultObject[] = [];
    for (const object of objects) {
      try {
        await blobs.delete(object.objectName);
        gone.push(object);
      } catch (error) {
        report(error, 'could not remove a vault object now; the next check removes it');
      }
    }
    await store.forget(gone);
  }

  /**
   * Whether this server's storage and keys are the database's vault's (the
   * first server's are written down): the problem in words, undefined when
   * there is none. With a problem, this server's vault keeps, opens and
   * checks nothing from then on.
   */
  async function claimIdentity(keysPath: string): Promise<string | undefined> {
    try {
      foreign = await vaultIdentityProblem({ store, blobs, keys, keysPath });
      unclaimed = undefined;
    } catch (error) {
      // Storage or database unreachable: nothing is kept, opened or checked until the next check finds out.
      foreign = `the Private Vault's storage or database could not be asked whether they are this database's vault's (${error instanceof Error ? error.message : String(error)}); asked again at the next check`;
      unclaimed = keysPath;
    }
    return foreign;
  }

  /** The bytes of one of the account's objects, opened. */
  async function readObject(accountId: string, sha256: string): Promise<Buffer> {
    if (foreign !== undefined) throw new ServiceUnavailableError('The Private Vault cannot be read through this server: its storage is not set up as the other servers\' (its operators are told so in its log)', 60);
    const object = await store.object(accountId, sha256);
    if (!object || object.state !== 'stored') throw new VaultFileNotFoundError();
    const sealed = await blobs.get(object.objectName);
    if (!sealed) throw new VaultFileNotFoundError('The file is listed in the vault but its bytes are missing; the next check removes it');
    try {
      return open(keys, object.objectName, sealed);
    } catch (error) {
      if (error instanceof SealError) throw new VaultFileUnreadableError(error.message);
      throw error;
    }
  }

  /** What this server answered as kept is listed: its last steps are done first (milliseconds). */
  const settled = async (): Promise<void> => {
    while (settling.size > 0) await Promise.all([...settling]);
  };

  /** The ids of a choice, each once; a choice of none is refused in words. */
  const chosenIds = (ids: readonly string[]): string[] => {
    const wanted = [...new Set(ids)];
    if (wanted.length === 0) throw new InvalidOptionError('id', 'at least one file chosen', '', NOTHING_CHOSEN);
    return wanted;
  };
  /** The files of `wanted`, each one the viewer may see, else VaultFileNotFoundError (as for one that does not exist). */
  const findChosen = async (viewer: VaultViewer, wanted: readonly string[]): Promise<VaultFile[]> => {
    const found = wanted.some((id) => !FILE_ID.test(id)) ? [] : await store.find(viewer, wanted);
    if (found.length !== wanted.length) throw new VaultFileNotFoundError('One of the files chosen is not in your vault');
    return found;
  };
  return {
    async status(accountId: string): Promise<VaultStatus> {
      await settled();
      return store.status(accountId);
    },

    /**
     * An owner turns the vault on or off; turning it off may also remove
     * everything it holds (`removeFiles`). Files kept stay when it is off
     * without that choice: listed, downloadable and removable.
     */
    async setEnabled(actor: User, plan: Plan, enabled: boolean, removeFiles: boolean, address: string | null): Promise<{ removed: number }> {
      if (actor.role !== 'owner') throw new RoleNotAllowedError("Only the account's owners may turn the vault on or off");
      if (enabled && !API_PLANS.includes(plan)) throw new PlanNotAllowedError(plan);
      await store.setEnabled(actor.accountId, enabled);
      let removed = 0;
      if (!enabled && removeFiles) {
        const done = await store.remove({ accountId: actor.accountId, userId: actor.id, owner: true }, 'all');
        removed = done.removed;
        await finishRemoval(done.objects);
      }
      await deps.audit({ at: clock.now(), actor: actor.id, accountId: actor.accountId, action: 'vault.settings', detail: { by: actor.email, enabled, removed }, address });
      return { removed };
    },

    /** Keep a marking's two files, when the account's vault is on and they fit. Never fails the marking: a storage failure is `not_stored`. */
    async keep(input: KeepInput): Promise<KeepOutcome> {
      const accountId = input.account.id;
      // The record is made meanwhile, and looked at only once the file is kept (settle): should it fail on a path
      // that returns before that, its failure is the marking's (the caller awaits it), never an unhandled rejection.
      input.recordId.catch(() => {});
      // Most accounts keep nothing: a read, no transaction, nothing sealed.
      if (!(await store.switchedOn(accountId))) return { state: 'off' };
      if (foreign !== undefined) return { state: 'not_stored' };
      const key = keys.active;
      // Each object's name once (a new name is random: the row and the staged bytes must agree on it).
      const names = new Map([input.original.sha256, input.marked.sha256].map((sha256) => [sha256, objectName(key, accountId, sha256)]));
      const name = (sha256: string) => names.get(sha256)!;
      const id = `vlt_${randomBase62(20, randomBytes)}`;
      const begun = store.begin({
        id,
        accountId,
        userId: input.user.id,
        userEmail: input.user.email,
        recordId: null,
        batchId: input.batchId,
        createdAt: clock.now(),
        original: { sha256: input.original.sha256, size: input.original.bytes.byteLength, mimeType: input.original.mimeType, name: input.original.name, objectName: name(input.original.sha256) },
        marked: { sha256: input.marked.sha256, size: input.marked.bytes.byteLength, mimeType: input.marked.mimeType, name: input.marked.name, objectName: name(input.marked.sha256) },
        keyVersion: key.version,
      });
      // While the rows are written down, the bytes are sealed and made durable where no one looks for them yet
      // (a temporary file): only their naming waits for the rows.
      const files = new Map([input.original, input.marked].map((file) => [file.sha256, file.bytes]));
      const staging = [...files].map(([sha256, bytes]) => {
        const objectName = name(sha256);
        return blobs.stage(objectName, seal(key, objectName, bytes)).then((staged) => ({ objectName, staged }));
      });
      // Looked at below in every case; a failure here must not go unhandled meanwhile.
      for (const promise of staging) promise.catch(() => {});
      const discardAll = async () => {
        for (const result of await Promise.allSettled(staging)) if (result.status === 'fulfilled') await result.value.staged.discard().catch(() => {});
      };
      let outcome: Awaited<typeof begun>;
      try {
        outcome = await begun;
      } catch (error) {
        await discardAll();
        // The database gone answers the marking as it is (503); anything else is this file not kept, not the marking failed.
        if (error instanceof ServiceUnavailableError) throw error;
        report(error, 'could not keep a marking in the vault');
        return { state: 'not_stored' };
      }
      if (outcome.outcome !== 'write') {
        await discardAll();
        if (outcome.outcome === 'off') return { state: 'off' };
        if (outcome.outcome === 'busy') return { state: 'not_stored' };
        return { state: 'full', used: outcome.used, limit: outcome.limit, needed: outcome.needed };
      }
      try {
        const staged = await Promise.all(staging);
        // Each object under the name and key its row was written down with (another marking may have begun it
        // under an older key: then sealed again for that name); staged bytes no row asks for are forgotten.
        await Promise.all(
          outcome.objects.map(async (object) => {
            const mine = staged.find((s) => s.objectName === object.objectName);
            if (mine) return mine.staged.publish();
            const sealingKey = keys.version(object.keyVersion);
            if (!sealingKey) throw new Error(`vault key version ${object.keyVersion} is not in the key file`);
            return blobs.put(object.objectName, seal(sealingKey, object.objectName, files.get(object.sha256)!));
          }),
        );
        for (const s of staged) if (!outcome.objects.some((o) => o.objectName === s.objectName)) await s.staged.discard();
        await deps.afterBytes?.();
      } catch (error) {
        report(error, 'could not keep a marking in the vault');
        await discardAll();
        try {
          await finishRemoval(await store.abandon(accountId, id));
        } catch (undo) {
          report(undo, 'could not undo a vault file not kept; the next check removes it');
        }
        return { state: 'not_stored' };
      }
      settle(accountId, id, [...files.keys()], input.recordId);
      return { state: 'stored', fileId: id };
    },

    claimIdentity,

    /** Once every kept marking's last step is done (a stop waits for it; tests read the rows after it). */
    idle: settled,

    /** A page of the files the viewer may see, newest first. */
    async search(viewer: VaultViewer, input: VaultSearchInput): Promise<{ files: VaultFile[]; total: number; page: number; pageSize: number }> {
      const { filter, page } = vaultFilter(input);
      await settled();
      const { files, total } = await store.search(viewer, filter, { limit: VAULT_PAGE_SIZE, offset: (page - 1) * VAULT_PAGE_SIZE });
      return { files, total, page, pageSize: VAULT_PAGE_SIZE };
    },

    /** One file's original or marked bytes; a file the viewer may not see is VaultFileNotFoundError, as one that does not exist. */
    async read(viewer: VaultViewer, fileId: string, which: string): Promise<{ file: VaultFile; name: string; mimeType: string; bytes: Buffer }> {
      if (!FILE_ID.test(fileId) || (which !== 'original' && which !== 'marked')) throw new VaultFileNotFoundError();
      await settled();
      const [file] = await store.find(viewer, [fileId]);
      if (!file) throw new VaultFileNotFoundError();
      const blob = which === 'original' ? file.original : file.marked;
      return { file, name: blob.name, mimeType: blob.mimeType, bytes: await readObject(viewer.accountId, blob.sha256) };
    },

    /**
     * A ZIP of the files chosen: `original/NAME` and `marked/NAME` of each.
     * Checked before the answer starts: every id the viewer's (else
     * VaultFileNotFoundError), at most ARCHIVE_MAX_FILES and 4 GiB.
     */
    async archive(viewer: VaultViewer, ids: readonly string[]): Promise<{ files: VaultFile[]; stream: AsyncIterable<Uint8Array> }> {
      const wanted = chosenIds(ids);
      if (wanted.length > ARCHIVE_MAX_FILES) throw new InvalidOptionError('id', `at most ${ARCHIVE_MAX_FILES} files in one download`, `${wanted.length} files`, `One download holds at most ${ARCHIVE_MAX_FILES} files; ${wanted.length} are chosen`);
      await settled();
      const files = await findChosen(viewer, wanted);
      const total = files.reduce((sum, f) => sum + f.original.size + f.marked.size + 2 * 300, 0);
      if (total > ARCHIVE_MAX_BYTES) throw new InvalidOptionError('id', 'a choice of at most 4 GB in one download', `${files.length} files`, 'One download holds at most 4 GB: choose fewer files');
      // Each file is read and unsealed as the archive reaches it (client-zip writes stored entries as they come).
      async function* entries() {
        const used = new Set<string>();
        for (const file of files) {
          yield { name: `original/${unique(used, entryName(file.original.name, `${file.id}-original`))}`, input: await readObject(viewer.accountId, file.original.sha256), lastModified: file.createdAt };
          yield { name: `marked/${unique(used, entryName(file.marked.name, `${file.id}-marked`))}`, input: await readObject(viewer.accountId, file.marked.sha256), lastModified: file.createdAt };
        }
      }
      return { files, stream: makeZip(entries()) as unknown as AsyncIterable<Uint8Array> };
    },

    /** The files chosen, each one the viewer may see (else VaultFileNotFoundError, as for one that does not exist): what a deletion asks to confirm. */
    chosen: (viewer: VaultViewer, ids: readonly string[]): Promise<VaultFile[]> => findChosen(viewer, chosenIds(ids)),

    /** Remove files the viewer may see (their bytes too, unless another file of the account still uses them). */
    async remove(viewer: VaultViewer, ids: readonly string[], actor: User, address: string | null): Promise<number> {
      const wanted = chosenIds(ids);
      await settled();
      await findChosen(viewer, wanted);
      const { removed, objects } = await store.remove(viewer, wanted);
      await finishRemoval(objects);
      await deps.audit({ at: clock.now(), actor: actor.id, accountId: viewer.accountId, action: 'vault.removed', detail: { by: actor.email, files: removed }, address });
      return removed;
    },

    /**
     * Make the database and the storage agree: files written down before
     * `graceMs` ago and never said stored are finished when their bytes are
     * all there and open, else undone; objects no file uses are
     * removed, bytes that no row names (and older than `graceMs`) are
     * removed, and stored objects whose bytes are gone drop their files.
     */
    async check(graceMs: number): Promise<CheckReport> {
      if (unclaimed !== undefined) await claimIdentity(unclaimed);
      if (foreign !== undefined) return { finished: 0, removed: 0, orphans: 0, missing: 0 };
      const before = new Date(clock.now().getTime() - graceMs);
      let finished = 0;
      for (const file of await store.unfinished(before)) {
        if (!(await whole(file))) continue;
        await store.commit(file.accountId, file.id, [...new Set([file.original.sha256, file.marked.sha256])], null);
        finished += 1;
      }
      const removing = await store.sweep(before);
      await finishRemoval(removing);
      // The listing first, the names after: a row is written down before its bytes, so bytes listed have their row by then.
      const listed = new Map<string, Date>();
      for await (const entry of blobs.list()) listed.set(entry.name, entry.modifiedAt);
      const known = await store.objectNames();
      let orphans = 0;
      for (const [name, modifiedAt] of listed) {
        if (known.has(name) || modifiedAt >= before) continue;
        await blobs.delete(name);
        orphans += 1;
      }
      // A stored object not listed: looked at once more (a rotation may have moved it meanwhile).
      const missing: string[] = [];
      for (const [name, state] of known) {
        if (state === 'stored' && !listed.has(name) && (await blobs.get(name)) === undefined && (await store.objectNames()).get(name) === 'stored') missing.push(name);
      }
      const dropped = missing.length ? await store.dropMissing(missing) : 0;
      if (dropped > 0) await finishRemoval(await store.sweep(before));
      return { finished, removed: removing.length, orphans, missing: missing.length };
    },
  };
}

export type Vault = ReturnType<typeof createVault>;
