import { describe, expect, it } from 'vitest';
import { periodOf, secondsUntil } from '../../../src/core/quota/period.js';

describe('quota periods', () => {
  it.each([
    ['2026-11-22T04:00:00Z', '2026-11', '2026-12-01T00:00:00.000Z'],
    ['2026-12-31T23:59:59.999Z', '2026-12', '2027-01-01T00:00:00.000Z'],
    ['2027-01-01T00:00:00Z', '2027-01', '2027-02-01T00:00:00.000Z'],
    ['2028-02-29T12:00:00Z', '2028-02', '2028-03-01T00:00:00.000Z'],
  ])('%s is in %s, which ends at %s', (now, key, end) => {
    const period = periodOf(new Date(now));
    expect(period.key).toBe(key);
    expect(period.end.toISOString()).toBe(end);
  });

  it('counts whole seconds up, never below one', () => {
    expect(secondsUntil(new Date('2027-01-01T00:00:00Z'), new Date('2026-12-31T23:59:58.5Z'))).toBe(2);
    expect(secondsUntil(new Date('2027-01-01T00:00:00Z'), new Date('2027-01-01T00:00:00Z'))).toBe(1);
  });
});
