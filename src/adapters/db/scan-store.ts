/**
 * Repository scans and their reports over SQL (Kysely; the same statements
 * on PGlite and PostgreSQL). Accepting a scan checks the user's daily limit
 * and the service-wide ceiling under one transaction-scoped advisory lock,
 * so that servers sharing the database cannot together pass either.
 */
import { sql, type Kysely, type Selectable } from 'kysely';
import type { AcceptOutcome, NewScan, Scan, ScanItem, ScanState, ScanStore } from '../../app/scans/ports.js';
import type { Database, ScansTable } from './schema.js';
import { guarded } from './unavailable.js';

/** The advisory lock every acceptance takes (an arbitrary constant of ours). */
const ACCEPT_LOCK = 7_357_001;

function toScan(row: Selectable<ScansTable>): Scan {
  return {
    id: row.id,
    accountId: row.account_id,
    userId: row.user_id,
    repository: row.repository,
    ref: row.ref,
    withToken: row.with_token,
    instanceId: row.instance_id,
    commit: row.commit,
    state: row.state as ScanState,
    reason: row.reason,
    counted: row.counted,
    createdAt: row.created_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    expiresAt: row.expires_at,
    total: row.files,
    processed: row.processed,
    summary: { images: row.images, optedOut: row.opted_out, notOptedOut: row.not_opted_out, failed: row.failed, skipped: row.skipped, otherFiles: row.other_files },
    fetchMs: row.fetch_ms,
  };
}

const parse = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));

export class SqlScanStore implements ScanStore {
  constructor(private readonly db: Kysely<Database>) {}

  accept(scan: NewScan, perUserLimit: number, dayStart: Date): Promise<AcceptOutcome> {
    return guarded(() =>
      this.db.transaction().execute(async (tx) => {
        await sql`select pg_advisory_xact_lock(${ACCEPT_LOCK})`.execute(tx);
        const mine = await tx
          .selectFrom('scans')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('user_id', '=', scan.userId)
          .where('counted', '=', true)
          .where('created_at', '>=', dayStart)
          .executeTakeFirstOrThrow();
        if (Number(mine.n) >= perUserLimit) return { kind: 'user-limit', limit: perUserLimit };
        const settings = await tx.selectFrom('service_settings').selectAll().executeTakeFirstOrThrow();
        if (settings.scans_paused) return { kind: 'paused' };
        const all = await tx
          .selectFrom('scans')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('counted', '=', true)
          .where('created_at', '>=', dayStart)
          .executeTakeFirstOrThrow();
        if (Number(all.n) >= settings.scan_ceiling_per_day) return { kind: 'ceiling', ceiling: settings.scan_ceiling_per_day };
        const row = await tx
          .insertInto('scans')
          .values({
            id: scan.id,
            account_id: scan.accountId,
            user_id: scan.userId,
            repository: scan.repository,
            ref: scan.ref,
            with_token: scan.withToken,
            instance_id: scan.instanceId,
            state: 'queued',
            created_at: scan.createdAt,
            expires_at: scan.expiresAt,
          })
          .returningAll()
          .executeTakeFirstOrThrow();
        return { kind: 'accepted', scan: toScan(row) };
      }),
    );
  }

  find(accountId: string, id: string): Promise<Scan | undefined> {
    return guarded(async () => {
      const row = await this.db.selectFrom('scans').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
      return row && toScan(row);
    });
  }

  findById(id: string): Promise<Scan | undefined> {
    return guarded(async () => {
      const row = await this.db.selectFrom('scans').selectAll().where('id', '=', id).executeTakeFirst();
      return row && toScan(row);
    });
  }

  list(accountId: string, limit: number): Promise<Scan[]> {
    return guarded(async () => {
      const rows = await this.db.selectFrom('scans').selectAll().where('account_id', '=', accountId).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
      return rows.map(toScan);
    });
  }

  claim(id: string, runner: string, now: Date, leaseUntil: Date): Promise<Scan | undefined> {
    return guarded(async () => {
      const row = await this.db
        .updateTable('scans')
        .set({ state: 'running', runner, lease_until: leaseUntil, started_at: sql<Date>`coalesce(started_at, ${now})` })
        .where('id', '=', id)
        .where('state', 'in', ['queued', 'running'])
        .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now), eb('runner', '=', runner)]))
        .returningAll()
        .executeTakeFirst();
      return row && toScan(row);
    });
  }

  renew(id: string, runner: string, leaseUntil: Date): Promise<boolean> {
    return guarded(async () => {
      const result = await this.db.updateTable('scans').set({ lease_until: leaseUntil }).where('id', '=', id).where('runner', '=', runner).where('state', '=', 'running').executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    });
  }

  setListed(id: string, commit: string | null, total: number, otherFiles: number, fetchMs: number): Promise<void> {
    return guarded(async () => {
      await this.db.updateTable('scans').set({ commit: sql<string | null>`coalesce(commit, ${commit})`, files: total, other_files: otherFiles, fetch_ms: fetchMs }).where('id', '=', id).execute();
    });
  }

  addItems(id: string, items: readonly ScanItem[], progress?: { processed: number; otherFiles: number }): Promise<void> {
    return guarded(() =>
      this.db.transaction().execute(async (tx) => {
        let inserted: ScanItem[] = [];
        if (items.length > 0) {
          const rows = await tx
            .insertInto('scan_items')
            .values(
              items.map((item) => ({
                scan_id: id,
                path: item.path,
                status: item.status,
                reason: item.reason,
                code: item.code,
                bytes: item.bytes,
                sha256: item.sha256,
                format: item.format,
                signals: JSON.stringify(item.signals),
                value: item.value,
                provenance: item.provenance && JSON.stringify(item.provenance),
                fingerprint: item.fingerprint && JSON.stringify(item.fingerprint),
              })),
            )
            // A path saved already (a resumed scan that raced its predecessor) is not counted twice.
            .onConflict((oc) => oc.columns(['scan_id', 'path']).doNothing())
            .returning(['path'])
            .execute();
          const saved = new Set(rows.map((r) => r.path));
          inserted = items.filter((item) => saved.has(item.path));
        }
        const count = (status: ScanItem['status']) => inserted.filter((i) => i.status === status).length;
        await tx
          .updateTable('scans')
          .set((eb) => ({
            images: eb('images', '+', inserted.length),
            opted_out: eb('opted_out', '+', count('optedOut')),
            not_opted_out: eb('not_opted_out', '+', count('notOptedOut')),
            failed: eb('failed', '+', count('failed')),
            skipped: eb('skipped', '+', count('skipped')),
            ...(progress ? { processed: sql<number>`greatest(processed, ${progress.processed})`, other_files: progress.otherFiles } : {}),
          }))
          .where('id', '=', id)
          .execute();
      }),
    );
  }

  donePaths(id: string): Promise<Set<string>> {
    return guarded(async () => {
      const rows = await this.db.selectFrom('scan_items').select('path').where('scan_id', '=', id).execute();
      return new Set(rows.map((r) => r.path));
    });
  }

  finish(id: string, state: 'done' | 'failed' | 'cancelled', reason: string | null, now: Date, options: { uncount?: boolean } = {}): Promise<boolean> {
    return guarded(async () => {
      const result = await this.db
        .updateTable('scans')
        .set({ state, reason, finished_at: now, runner: null, lease_until: null, ...(options.uncount ? { counted: false } : {}) })
        .where('id', '=', id)
        .where('state', 'in', ['queued', 'running'])
        .executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    });
  }

  items(id: string): Promise<ScanItem[]> {
    return guarded(async () => {
      const rows = await this.db.selectFrom('scan_items').selectAll().where('scan_id', '=', id).orderBy('path').execute();
      return rows.map((row) => ({
        path: row.path,
        status: row.status as ScanItem['status'],
        reason: row.reason,
        code: row.code,
        bytes: Number(row.bytes),
        sha256: row.sha256,
        format: row.format,
        signals: JSON.parse(row.signals) as string[],
        value: row.value,
        provenance: parse(row.provenance),
        fingerprint: parse(row.fingerprint),
      }));
    });
  }

  releaseClaims(): Promise<void> {
    return guarded(async () => {
      await this.db.updateTable('scans').set({ runner: null, lease_until: null }).where('state', 'in', ['queued', 'running']).execute();
    });
  }

  orphans(now: Date): Promise<Scan[]> {
    return guarded(async () => {
      const rows = await this.db
        .selectFrom('scans')
        .selectAll()
        .where('state', 'in', ['queued', 'running'])
        .where('with_token', '=', false)
        .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
        .execute();
      return rows.map(toScan);
    });
  }

  strandedTokenScans(liveInstances: readonly string[]): Promise<Scan[]> {
    return guarded(async () => {
      let query = this.db.selectFrom('scans').selectAll().where('state', 'in', ['queued', 'running']).where('with_token', '=', true);
      if (liveInstances.length > 0) query = query.where('instance_id', 'not in', [...liveInstances]);
      return (await query.execute()).map(toScan);
    });
  }

  sweep(now: Date): Promise<number> {
    return guarded(async () => {
      const result = await this.db.deleteFrom('scans').where('expires_at', '<', now).where('state', 'in', ['done', 'failed', 'cancelled']).executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }

  countToday(dayStart: Date): Promise<number> {
    return guarded(async () => {
      const row = await this.db
        .selectFrom('scans')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('counted', '=', true)
        .where('created_at', '>=', dayStart)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    });
  }

  countUserToday(userId: string, dayStart: Date): Promise<number> {
    return guarded(async () => {
      const row = await this.db
        .selectFrom('scans')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('user_id', '=', userId)
        .where('counted', '=', true)
        .where('created_at', '>=', dayStart)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    });
  }

  /** Servers on PostgreSQL whose heartbeat is since `since` (migration 004-instances). */
  liveInstances(since: Date): Promise<string[]> {
    return guarded(async () => {
      const rows = await this.db.selectFrom('instances').select('id').where('heartbeat_at', '>=', since).execute();
      return rows.map((r) => r.id);
    });
  }

  setCeiling(perDay: number): Promise<void> {
    return guarded(async () => {
      await this.db.updateTable('service_settings').set({ scan_ceiling_per_day: perDay }).execute();
    });
  }

  setPaused(paused: boolean): Promise<void> {
    return guarded(async () => {
      await this.db.updateTable('service_settings').set({ scans_paused: paused }).execute();
    });
  }
}
