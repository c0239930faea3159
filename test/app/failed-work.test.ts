/**
 * The failed-work budget's arithmetic (app/failed-work.ts), with the clock
 * in the test's hands: a fixed minute from an account's first charge,
 * Retry-After to its end, accounts apart, and a bounded memory.
 */
import { describe, expect, it } from 'vitest';
import { createFailedWork } from '../../src/app/failed-work.js';
import { OptmarkError, TooManyFailedCallsError } from '../../src/errors.js';

function setup(budgetSeconds: number, maxAccounts?: number) {
  const clock = { time: new Date('2026-11-26T12:00:00Z'), now: () => clock.time };
  const advance = (ms: number) => (clock.time = new Date(clock.time.getTime() + ms));
  return { failed: createFailedWork({ budgetSeconds, clock, maxAccounts }), advance };
}

const refusal = (admit: () => void): TooManyFailedCallsError | undefined => {
  try {
    admit();
    return undefined;
  } catch (error) {
    if (!(error instanceof OptmarkError)) throw error;
    return error as TooManyFailedCallsError;
  }
};

describe('the failed-work budget', () => {
  it('refuses an account once its charges in the minute reach the budget, until the minute that opened with its first charge ends', () => {
    const { failed, advance } = setup(30);
    failed.charge('a', 12);
    advance(10_000);
    failed.charge('a', 17.9);
    expect(refusal(() => failed.admit('a'))).toBeUndefined();
    advance(5_000);
    failed.charge('a', 0.2);
    const refused = refusal(() => failed.admit('a'))!;
    expect(refused.code).toBe('too_many_failed_calls');
    expect(refused.retryAfterSeconds).toBe(45);
    // Other accounts are their own.
    expect(refusal(() => failed.admit('b'))).toBeUndefined();
    advance(44_999);
    expect(refusal(() => failed.admit('a'))!.retryAfterSeconds).toBe(1);
    advance(1);
    expect(refusal(() => failed.admit('a'))).toBeUndefined();
    // A new minute starts from nothing.
    failed.charge('a', 29);
    expect(refusal(() => failed.admit('a'))).toBeUndefined();
  });

  it('0 turns it off; nothing charged for no work', () => {
    const off = setup(0).failed;
    off.charge('a', 1000);
    expect(refusal(() => off.admit('a'))).toBeUndefined();
    const { failed } = setup(1);
    failed.charge('a', 0);
    failed.charge('a', Number.NaN);
    expect(refusal(() => failed.admit('a'))).toBeUndefined();
  });

  it('remembers a bounded number of accounts: the window that opened first is dropped to make room', () => {
    const { failed } = setup(1, 2);
    failed.charge('a', 5);
    failed.charge('b', 5);
    failed.charge('c', 5);
    expect(refusal(() => failed.admit('a'))).toBeUndefined();
    expect(refusal(() => failed.admit('b'))).toBeDefined();
    expect(refusal(() => failed.admit('c'))).toBeDefined();
  });
});
