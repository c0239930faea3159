/**
 * The service-wide scan controls operators use (the console, `optmark scans`):
 * today's count of scans against the ceiling, pause, resume, and the
 * ceiling itself. Every change is written to the audit log.
 */
import { InvalidOptionError } from '../../errors.js';
import type { AuditEntry } from '../people/ports.js';
import type { Store } from '../ports.js';
import type { ScanStore } from './ports.js';

export interface ScanControlDeps {
  readonly store: Pick<ScanStore, 'countToday' | 'setCeiling' | 'setPaused'>;
  readonly settings: Pick<Store, 'serviceSettings'>;
  readonly audit: (entry: AuditEntry) => Promise<void>;
  readonly clock: { now(): Date };
}

/** Who changed it: `cli`, or the operator's user id, with their address over HTTP. */
export interface ControlActor {
  readonly actor: string;
  readonly address?: string | null;
  /** The operator's email, kept in the line (the user may be removed later). */
  readonly email?: string;
}

export interface ScanStatus {
  /** Scans accepted today (UTC) that count, all accounts together. */
  readonly today: number;
  readonly ceiling: number;
  readonly paused: boolean;
}

const dayStart = (now: Date) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));

export function createScanControl(deps: ScanControlDeps) {
  const { store, settings, clock } = deps;
  const audit = (by: ControlActor, action: string, detail: Record<string, unknown>) =>
    deps.audit({ at: clock.now(), actor: by.actor, accountId: null, action, detail: { ...(by.email ? { by: by.email } : {}), ...detail }, address: by.address ?? null });
  const status = async (): Promise<ScanStatus> => {
    const current = await settings.serviceSettings();
    return { today: await store.countToday(dayStart(clock.now())), ceiling: current.scanCeilingPerDay, paused: current.scansPaused };
  };
  return {
    status,
    async pause(by: ControlActor = { actor: 'cli' }): Promise<ScanStatus> {
      await store.setPaused(true);
      const now = await status();
      await audit(by, 'scans.paused', { today: now.today, ceiling: now.ceiling });
      return now;
    },
    async resume(by: ControlActor = { actor: 'cli' }): Promise<ScanStatus> {
      await store.setPaused(false);
      const now = await status();
      await audit(by, 'scans.resumed', { today: now.today, ceiling: now.ceiling });
      return now;
    },
    async setCeiling(perDay: number, by: ControlActor = { actor: 'cli' }): Promise<ScanStatus> {
      if (!Number.isSafeInteger(perDay) || perDay < 0 || perDay > 1_000_000_000) throw new InvalidOptionError('ceiling', 'a whole number of scans per day, 0 or more', perDay);
      const before = await status();
      await store.setCeiling(perDay);
      await audit(by, 'scans.ceiling-set', { from: before.ceiling, to: perDay, today: before.today });
      return status();
    },
  };
}

export type ScanControl = ReturnType<typeof createScanControl>;
