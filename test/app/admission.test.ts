/**
 * The admission rules themselves (app/admission.ts), with the clock in the
 * test's hands: per key, per account under contention, and which place is
 * given to another account when every place is taken.
 */
import { describe, expect, it } from 'vitest';
import { CONTENTION_MS, createAdmission } from '../../src/app/admission.js';
import { OptmarkError } from '../../src/errors.js';

function setup(total: number, perKey = total) {
  const clock = { ms: 1_000_000 };
  const admission = createAdmission({ total, perKey, now: () => clock.ms });
  return { clock, admission };
}

const refusal = (enter: () => unknown): string => {
  try {
    enter();
    return 'admitted';
  } catch (error) {
    if (!(error instanceof OptmarkError)) throw error;
    return `${error.code}: ${error.message}`;
  }
};

describe('admission', () => {
  it('a key holds at most its limit, whatever its account may hold', () => {
    const { admission } = setup(10, 2);
    admission.enter({ account: 'a', key: 'k1' });
    admission.enter({ account: 'a', key: 'k1' });
    expect(refusal(() => admission.enter({ account: 'a', key: 'k1' }))).toMatch(/^too_many_requests: This API key already has 2 calls/);
    expect(refusal(() => admission.enter({ account: 'a', key: 'k2' }))).toBe('admitted');
  });

  it('uncontended, one account takes every place; the next account takes the newest upload of the one over its share', () => {
    const { admission } = setup(8);
    const hog = Array.from({ length: 8 }, () => admission.enter({ account: 'hog', key: 'h' }));
    expect(admission.inFlight).toBe(8);
    const newcomer = admission.enter({ account: 'b', key: 'b' });
    expect(admission.inFlight).toBe(8);
    expect(hog.map((slot) => slot.preempted.aborted)).toEqual([false, false, false, false, false, false, false, true]);
    expect((hog[7]!.preempted.reason as OptmarkError).code).toBe('server_busy');
    // Its later leave changes nothing: the place is the newcomer's now.
    hog[7]!.leave();
    expect(admission.inFlight).toBe(8);
    newcomer.leave();
    expect(admission.inFlight).toBe(7);
  });

  it("a place whose body was read is never given away: the newest still uploading is, and with none, the newcomer is refused", () => {
    const { admission } = setup(4);
    const hog = Array.from({ length: 4 }, () => admission.enter({ account: 'hog', key: 'h' }));
    hog[3]!.working();
    hog[2]!.working();
    admission.enter({ account: 'b', key: 'b' });
    expect(hog.map((slot) => slot.preempted.aborted)).toEqual([false, true, false, false]);
    // Share of 4 places: 1. The hog holds 3; its one upload left goes to the next account.
    admission.enter({ account: 'c', key: 'c' });
    expect(hog[0]!.preempted.aborted).toBe(true);
    // Now the hog holds 2 working places, over its share, but none uploading: nothing to give.
    expect(refusal(() => admission.enter({ account: 'd', key: 'd' }))).toMatch(/^server_busy/);
  });

  it('while another account was refused within the last second, an account at its share gets 429; after the second, it may take free places again', () => {
    const { clock, admission } = setup(8);
    const hog = Array.from({ length: 6 }, () => admission.enter({ account: 'hog', key: 'h' }));
    for (const slot of hog) slot.working();
    const others = [admission.enter({ account: 'b', key: 'b' }), admission.enter({ account: 'b', key: 'b' })];
    // Full, and nothing uploading beyond a share: b's third is refused, which marks the contention.
    expect(refusal(() => admission.enter({ account: 'c', key: 'c' }))).toMatch(/^server_busy/);
    others[0]!.leave();
    // A free place, but the hog holds 6 of a share of 2 while c was refused a moment ago.
    expect(refusal(() => admission.enter({ account: 'hog', key: 'h' }))).toMatch(/^too_many_requests: This account already has 2 calls in progress while other accounts wait/);
    // c itself, under its share, takes it.
    expect(refusal(() => admission.enter({ account: 'c', key: 'c' }))).toBe('admitted');
    others[1]!.leave();
    clock.ms += CONTENTION_MS;
    expect(refusal(() => admission.enter({ account: 'hog', key: 'h' }))).toBe('admitted');
  });

  it("an account's own refusal does not hold it to its share", () => {
    const { admission } = setup(2);
    const mine = [admission.enter({ account: 'a', key: 'a1' }), admission.enter({ account: 'a', key: 'a2' })];
    expect(refusal(() => admission.enter({ account: 'a', key: 'a3' }))).toMatch(/^server_busy/);
    mine[0]!.leave();
    expect(refusal(() => admission.enter({ account: 'a', key: 'a3' }))).toBe('admitted');
  });
});
