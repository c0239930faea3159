/**
 * The brakes on password guessing and on invitations, with the clock in the
 * test's hands: per (email, address) a back-off that doubles after 5 tries
 * that did not hold, per address 20 in 10 minutes; a try that holds is given
 * back and clears its pair; nobody elsewhere is held; an account's
 * invitations, 20 in any hour.
 */
import { describe, expect, it } from 'vitest';
import { createInviteLimits, decideInvitation } from '../../src/app/people/invite-limits.js';
import { backoffSeconds, createSignInLimits, decideSignIn } from '../../src/app/people/sign-in-limits.js';
import { TooManyInvitationsError, TooManySignInsError } from '../../src/errors.js';
import { memoryBrakes } from '../support/memory-brakes.js';

function clock() {
  const c = { t: Date.parse('2026-11-26T12:00:00Z'), now: () => new Date(c.t) };
  return c;
}

/** Undefined when let in (the try then counts, as one that did not hold); else the seconds to wait. */
const refusedFor = async (f: () => Promise<unknown>): Promise<number | undefined> => {
  try {
    await f();
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(TooManySignInsError);
    return (error as TooManySignInsError).retryAfterSeconds;
  }
};

describe('sign-in limits', () => {
  it('5 free tries per email and address, then waits of 2, 4, 8 s ... up to 15 minutes', async () => {
    const c = clock();
    const limits = createSignInLimits(memoryBrakes(), c);
    for (let i = 0; i < 5; i++) expect(await refusedFor(() => limits.admit('192.0.2.1', 'ada@example.com'))).toBeUndefined();
    expect(await refusedFor(() => limits.admit('192.0.2.1', 'Ada@Example.com '))).toBe(2);
    // Another address, and another email, are not held.
    expect(await refusedFor(() => limits.admit('192.0.2.2', 'ada@example.com'))).toBeUndefined();
    expect(await refusedFor(() => limits.admit('192.0.2.1', 'bob@example.com'))).toBeUndefined();
    c.t += 2000;
    expect(await refusedFor(() => limits.admit('192.0.2.1', 'ada@example.com'))).toBeUndefined();
    expect(await refusedFor(() => limits.admit('192.0.2.1', 'ada@example.com'))).toBe(4);
    for (let i = 0; i < 12; i++) {
      c.t += 3_600_000;
      expect(await refusedFor(() => limits.admit('192.0.2.1', 'ada@example.com'))).toBeUndefined();
    }
    expect(await refusedFor(() => limits.admit('192.0.2.1', 'ada@example.com'))).toBe(900);
    expect([5, 6, 7, 12, 13, 40].map(backoffSeconds)).toEqual([2, 4, 8, 256, 512, 900]);
  });

  it('a try that holds clears its pair and is given back to its address', async () => {
    const c = clock();
    const limits = createSignInLimits(memoryBrakes(), c);
    for (let i = 0; i < 4; i++) await limits.admit('192.0.2.1', 'ada@example.com');
    await (await limits.admit('192.0.2.1', 'ada@example.com')).held();
    // The pair starts again: 5 free tries.
    for (let i = 0; i < 5; i++) expect(await refusedFor(() => limits.admit('192.0.2.1', 'ada@example.com'))).toBeUndefined();
    // The address counted 4 + 5 that did not hold: 11 more are let in, then it waits.
    for (let i = 0; i < 11; i++) expect(await refusedFor(() => limits.admit('192.0.2.1', `user${i}@example.com`))).toBeUndefined();
    expect(await refusedFor(() => limits.admit('192.0.2.1', 'new@example.com'))).toBe(600);
  });

  it('tries still being checked count: the sixth waits while the first five are in flight', async () => {
    const limits = createSignInLimits(memoryBrakes(), clock());
    const inFlight = await Promise.all(Array.from({ length: 5 }, () => limits.admit('192.0.2.1', 'ada@example.com')));
    expect(await refusedFor(() => limits.admit('192.0.2.1', 'ada@example.com'))).toBe(2);
    await inFlight[0]!.held();
    expect(await refusedFor(() => limits.admit('192.0.2.1', 'ada@example.com'))).toBeUndefined();
  });

  it('20 tries from one address in 10 minutes hold every sign-in from it until the window ends; an IPv6 /64 is one address', async () => {
    const c = clock();
    const limits = createSignInLimits(memoryBrakes(), c);
    for (let i = 0; i < 20; i++) await limits.admit('2001:db8:1:2::1', `user${i}@example.com`);
    expect(await refusedFor(() => limits.admit('2001:db8:1:2:ffff::9', 'new@example.com'))).toBe(600);
    expect(await refusedFor(() => limits.admit('2001:db8:1:3::1', 'new@example.com'))).toBeUndefined();
    c.t += 600_000;
    expect(await refusedFor(() => limits.admit('2001:db8:1:2::1', 'new@example.com'))).toBeUndefined();
  });

  it('what is kept is forgotten: an address at its window\'s end, a pair after a day without a try', async () => {
    const c = clock();
    const brakes = memoryBrakes();
    const limits = createSignInLimits(brakes, c);
    await limits.admit('192.0.2.1', 'ada@example.com');
    expect(brakes.size).toBe(2);
    c.t += 600_001;
    expect(await brakes.sweep(c.now())).toBe(1);
    c.t += 86_400_000;
    expect(await brakes.sweep(c.now())).toBe(1);
  });
});

describe('invitation limits', () => {
  it('20 in any hour: the 21st waits until the oldest is an hour old', async () => {
    const c = clock();
    const limits = createInviteLimits(memoryBrakes(), () => c.now());
    for (let i = 0; i < 20; i++) {
      await limits.admit('acct-1');
      c.t += 60_000;
    }
    const refused = await limits.admit('acct-1').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TooManyInvitationsError);
    expect((refused as TooManyInvitationsError).retryAfterSeconds).toBe(2400);
    await limits.admit('acct-2');
    c.t += 2_400_000;
    await limits.admit('acct-1');
    expect(decideInvitation([1, 2, 3], 3_600_002)).toEqual({ times: [3, 3_600_002] });
  });
});

describe('the rule, on its own', () => {
  it('a free try is never held, even when the last try is stamped a moment ahead (another server\'s clock)', () => {
    expect(decideSignIn(undefined, { tries: 3, at: 10_500 }, 10_000)).toEqual({ address: { tries: 1, at: 10_000 }, pair: { tries: 4, at: 10_000 } });
    expect(decideSignIn(undefined, { tries: 5, at: 10_500 }, 10_000)).toEqual({ wait: 3 });
  });
});
