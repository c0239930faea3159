/**
 * The brake on password guessing, with the clock in the test's hands: per
 * (email, address) a back-off that doubles after 5 failures, per address 20
 * failures in 10 minutes; a success clears the pair; nobody elsewhere is held.
 */
import { describe, expect, it } from 'vitest';
import { createSignInLimits } from '../../src/app/people/sign-in-limits.js';
import { TooManySignInsError } from '../../src/errors.js';

function clock() {
  const c = { t: Date.parse('2026-11-26T12:00:00Z'), now: () => new Date(c.t) };
  return c;
}

const refusedFor = (f: () => void): number | undefined => {
  try {
    f();
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(TooManySignInsError);
    return (error as TooManySignInsError).retryAfterSeconds;
  }
};

describe('sign-in limits', () => {
  it('5 free tries per email and address, then waits of 2, 4, 8 s ... up to 15 minutes', () => {
    const c = clock();
    const limits = createSignInLimits(c);
    for (let i = 0; i < 5; i++) {
      expect(refusedFor(() => limits.admit('192.0.2.1', 'ada@example.com'))).toBeUndefined();
      limits.fail('192.0.2.1', 'ada@example.com');
    }
    expect(refusedFor(() => limits.admit('192.0.2.1', 'Ada@Example.com '))).toBe(2);
    // Another address, and another email, are not held.
    expect(refusedFor(() => limits.admit('192.0.2.2', 'ada@example.com'))).toBeUndefined();
    expect(refusedFor(() => limits.admit('192.0.2.1', 'bob@example.com'))).toBeUndefined();
    c.t += 2000;
    expect(refusedFor(() => limits.admit('192.0.2.1', 'ada@example.com'))).toBeUndefined();
    limits.fail('192.0.2.1', 'ada@example.com');
    expect(refusedFor(() => limits.admit('192.0.2.1', 'ada@example.com'))).toBe(4);
    for (let i = 0; i < 12; i++) {
      c.t += 3_600_000;
      limits.fail('192.0.2.1', 'ada@example.com');
    }
    expect(refusedFor(() => limits.admit('192.0.2.1', 'ada@example.com'))).toBe(900);
    limits.succeed('192.0.2.1', 'ada@example.com');
    expect(refusedFor(() => limits.admit('192.0.2.1', 'ada@example.com'))).toBeUndefined();
  });

  it('20 failures from one address in 10 minutes hold every sign-in from it until the window ends; an IPv6 /64 is one address', () => {
    const c = clock();
    const limits = createSignInLimits(c);
    for (let i = 0; i < 20; i++) limits.fail('2001:db8:1:2::1', `user${i}@example.com`);
    expect(refusedFor(() => limits.admit('2001:db8:1:2:ffff::9', 'new@example.com'))).toBe(600);
    expect(refusedFor(() => limits.admit('2001:db8:1:3::1', 'new@example.com'))).toBeUndefined();
    c.t += 600_000;
    expect(refusedFor(() => limits.admit('2001:db8:1:2::1', 'new@example.com'))).toBeUndefined();
  });
});
