import type { Operation } from '../errors.js';
import { periodOf } from '../core/quota/period.js';
import type { AccountLimits } from './ports.js';

export interface Allowance {
  readonly used: number;
  readonly limit: number;
  readonly remaining: number;
}

/** The shape of GET /api/v1/usage. */
export interface UsageReport {
  readonly protect: Allowance;
  readonly verify: Allowance;
  readonly resetsAt: string;
}

function allowance(used: number, limit: number): Allowance {
  return { used, limit, remaining: Math.max(0, limit - used) };
}

export function usageReport(used: Record<Operation, number>, limits: AccountLimits, now: Date): UsageReport {
  return {
    protect: allowance(used.protect, limits.protectPerMonth),
    verify: allowance(used.verify, limits.verifyPerMonth),
    resetsAt: periodOf(now).end.toISOString(),
  };
}
