/**
 * Quota periods are calendar months in UTC. Pure: the caller passes the time.
 */
export interface Period {
  /** `YYYY-MM`, the key usage is stored under. */
  readonly key: string;
  readonly start: Date;
  /** The first instant of the next month: when the allowance resets. */
  readonly end: Date;
}

export function periodOf(now: Date): Period {
  const year = now.getUTCFullYear();
  const month = now.getUTCMonth();
  return {
    key: `${year}-${String(month + 1).padStart(2, '0')}`,
    start: new Date(Date.UTC(year, month, 1)),
    end: new Date(Date.UTC(year, month + 1, 1)),
  };
}

/** Whole seconds from `now` until `then`, rounded up, never below 1. */
export function secondsUntil(then: Date, now: Date): number {
  return Math.max(1, Math.ceil((then.getTime() - now.getTime()) / 1000));
}
