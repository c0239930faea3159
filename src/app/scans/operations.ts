/**
 * What the service's operators do to repository scans from the console:
 * pause and resume new scans for everyone, and change today's service-wide
 * ceiling. Each is a line of the audit log (action `scans.*`, no account:
 * it is about the whole service), with who did it and from where.
 */
import { RoleNotAllowedError } from '../../errors.js';
import type { User } from '../people/ports.js';
import type { Scans } from './scans.js';

export interface ScanOperator {
  readonly user: Pick<User, 'id' | 'email' | 'operator'>;
  /** The client's address, when over HTTP. */
  readonly address: string | null;
}

export interface ScanOperationsDeps {
  readonly scans: Pick<Scans, 'status' | 'pause' | 'resume' | 'setCeiling'>;
}

export function createScanOperations(deps: ScanOperationsDeps) {
  const { scans } = deps;
  // The audit line is written by the scan controls themselves (control.ts), with who and from where.
  const by = (actor: ScanOperator) => ({ actor: actor.user.id, email: actor.user.email, address: actor.address });

  const operatorOnly = (actor: ScanOperator) => {
    if (!actor.user.operator) throw new RoleNotAllowedError("Only the service's operators pause, resume or limit repository scans");
  };

  return {
    /** New scans are refused for everyone (503 scans_paused) until resumed; running scans finish. */
    async pause(actor: ScanOperator): Promise<void> {
      operatorOnly(actor);
      await scans.pause(by(actor));
    },

    async resume(actor: ScanOperator): Promise<void> {
      operatorOnly(actor);
      await scans.resume(by(actor));
    },

    /** The service-wide ceiling of scans per UTC day (all accounts together). */
    async setCeiling(actor: ScanOperator, perDay: number): Promise<{ from: number; to: number }> {
      operatorOnly(actor);
      const before = await scans.status();
      await scans.setCeiling(perDay, by(actor));
      return { from: before.ceiling, to: perDay };
    },
  };
}

export type ScanOperations = ReturnType<typeof createScanOperations>;
