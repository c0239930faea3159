/**
 * The limiter of invalid API keys per client address, on an injected clock:
 * the threshold, the window's end, Retry-After, the bound on memory, and
 * what counts as one address.
 */
import { describe, expect, it } from 'vitest';
import { clientKey, createAuthFailures } from '../../src/app/auth-failures.js';
import { InvalidApiKeyError, MissingApiKeyError, PlanNotAllowedError, TooManyAuthFailuresError } from '../../src/errors.js';

function setup(limit = 5, maxAddresses?: number) {
  const clock = { ms: Date.parse('2026-06-10T12:00:00Z'), now: () => new Date(clock.ms) };
  const limiter = createAuthFailures({ limit, clock, maxAddresses });
  const refusal = (ip: string): TooManyAuthFailuresError | undefined => {
    try {
      limiter.admit(ip);
      return undefined;
    } catch (error) {
      if (error instanceof TooManyAuthFailuresError) return error;
      throw error;
    }
  };
  return { clock, limiter, refusal };
}

const failTimes = (limiter: ReturnType<typeof createAuthFailures>, ip: string, n: number) => {
  for (let i = 0; i < n; i++) limiter.fail(ip);
};

describe('auth failures per address', () => {
  it('admits up to limit - 1 failures, refuses from the limit on, and only that address', () => {
    const { limiter, refusal } = setup(5);
    failTimes(limiter, '198.51.100.7', 4);
    expect(refusal('198.51.100.7')).toBeUndefined();
    limiter.fail('198.51.100.7');
    const refused = refusal('198.51.100.7');
    expect(refused).toBeInstanceOf(TooManyAuthFailuresError);
    expect(refused).toMatchObject({ code: 'too_many_requests', limit: 5, retryAfterSeconds: 60 });
    expect(refused!.message).toMatch(/invalid API key \(5 within 60 seconds\).*next 60 seconds/);
    expect(refusal('198.51.100.8')).toBeUndefined();
  });

  it('Retry-After is the seconds until the window (opened by the first failure) ends, rounded up', () => {
    const { clock, limiter, refusal } = setup(3);
    limiter.fail('203.0.113.1'); // the window opens at t = 0
    clock.ms += 10_000;
    failTimes(limiter, '203.0.113.1', 2); // t = 10 s: the limit
    expect(refusal('203.0.113.1')?.retryAfterSeconds).toBe(50);
    clock.ms += 20_500; // t = 30.5 s
    expect(refusal('203.0.113.1')?.retryAfterSeconds).toBe(30);
    clock.ms += 29_400; // t = 59.9 s
    expect(refusal('203.0.113.1')?.retryAfterSeconds).toBe(1);
  });

  it('the address is admitted again when the window ends, and starts a fresh count', () => {
    const { clock, limiter, refusal } = setup(3);
    failTimes(limiter, '203.0.113.2', 3);
    clock.ms += 59_999;
    expect(refusal('203.0.113.2')).toBeDefined();
    clock.ms += 1;
    expect(refusal('203.0.113.2')).toBeUndefined();
    failTimes(limiter, '203.0.113.2', 2);
    expect(refusal('203.0.113.2')).toBeUndefined();
    limiter.fail('203.0.113.2');
    expect(refusal('203.0.113.2')?.retryAfterSeconds).toBe(60);
  });

  it('refused requests do not extend the window (a client that keeps trying still gets back in on time)', () => {
    const { clock, limiter, refusal } = setup(2);
    failTimes(limiter, '203.0.113.3', 2);
    for (let s = 1; s < 60; s++) {
      clock.ms += 1000;
      expect(refusal('203.0.113.3')?.retryAfterSeconds).toBe(60 - s);
    }
    clock.ms += 1000;
    expect(refusal('203.0.113.3')).toBeUndefined();
  });

  it('counts only InvalidApiKeyError from a key check, and passes every outcome through', async () => {
    const { limiter, refusal } = setup(2);
    const ip = '192.0.2.9';
    await expect(limiter.counting(ip, true, async () => 'principal')).resolves.toBe('principal');
    await expect(limiter.counting(ip, true, async () => Promise.reject(new MissingApiKeyError()))).rejects.toBeInstanceOf(MissingApiKeyError);
    await expect(limiter.counting(ip, true, async () => Promise.reject(new PlanNotAllowedError('free')))).rejects.toBeInstanceOf(PlanNotAllowedError);
    await expect(limiter.counting(ip, true, async () => Promise.reject(new Error('database down')))).rejects.toThrow('database down');
    expect(refusal(ip)).toBeUndefined();
    expect(limiter.size).toBe(0);
    await expect(limiter.counting(ip, true, async () => Promise.reject(new InvalidApiKeyError()))).rejects.toBeInstanceOf(InvalidApiKeyError);
    expect(refusal(ip)).toBeUndefined();
    await expect(limiter.counting(ip, true, async () => Promise.reject(new InvalidApiKeyError()))).rejects.toBeInstanceOf(InvalidApiKeyError);
    expect(refusal(ip)).toBeInstanceOf(TooManyAuthFailuresError);
  });

  it('checks in flight count: with 3 running, a limit of 4 and 1 failure, the next waits for one to end, and is then decided on what is known', async () => {
    const { limiter } = setup(4);
    const ip = '192.0.2.10';
    await expect(limiter.counting(ip, true, async () => Promise.reject(new InvalidApiKeyError()))).rejects.toBeInstanceOf(InvalidApiKeyError);
    const ends: ((outcome: 'valid' | 'invalid') => void)[] = [];
    const pending = () =>
      limiter
        .counting(ip, true, () => new Promise<string>((resolve, reject) => ends.push((outcome) => (outcome === 'valid' ? resolve('principal') : reject(new InvalidApiKeyError())))))
        .catch((error: unknown) => error);
    const running = [pending(), pending(), pending()];
    let checked = false;
    const fourth = limiter.counting(ip, true, async () => ((checked = true), 'principal')).catch((error: unknown) => error);
    await new Promise((r) => setTimeout(r, 10));
    expect(checked).toBe(false);
    // Another address is not held by these.
    await expect(limiter.counting('192.0.2.11', true, async () => 'principal')).resolves.toBe('principal');
    ends[0]!('valid');
    expect(await running[0]).toBe('principal');
    expect(await fourth).toBe('principal');
    expect(checked).toBe(true);
    // Two more in flight with 2 running: 1 failure + 2 running + 1 = the limit; the next waits, and is refused once both fail.
    const fifth = pending();
    const sixth = limiter.counting(ip, true, async () => 'never checked').catch((error: unknown) => error);
    ends[1]!('invalid');
    ends[2]!('invalid');
    ends[3]!('invalid');
    await Promise.all([...running, fifth]);
    expect(await sixth).toMatchObject({ retryAfterSeconds: 60 });
    expect(await sixth).toBeInstanceOf(TooManyAuthFailuresError);
  });

  it('a limit of 0 turns it off and tracks nothing', () => {
    const { limiter, refusal } = setup(0);
    failTimes(limiter, '192.0.2.1', 1000);
    expect(refusal('192.0.2.1')).toBeUndefined();
    expect(limiter.size).toBe(0);
  });

  it('holds at most maxAddresses: the address whose window opened first is dropped', () => {
    const { clock, limiter, refusal } = setup(2, 3);
    for (const ip of ['10.0.0.1', '10.0.0.2', '10.0.0.3']) {
      failTimes(limiter, ip, 2);
      clock.ms += 1000;
    }
    expect(limiter.size).toBe(3);
    limiter.fail('10.0.0.4');
    expect(limiter.size).toBe(3);
    expect(refusal('10.0.0.1')).toBeUndefined(); // forgotten
    expect(refusal('10.0.0.2')).toBeDefined();
    expect(refusal('10.0.0.3')).toBeDefined();
    // A failure of an address already tracked takes no room.
    limiter.fail('10.0.0.4');
    expect(limiter.size).toBe(3);
    expect(refusal('10.0.0.4')).toBeDefined();
    expect(refusal('10.0.0.2')).toBeDefined();
  });

  it('drops ended windows first, so memory follows the addresses of the last minute', () => {
    const { clock, limiter } = setup(5, 10_000);
    for (let i = 0; i < 1000; i++) limiter.fail(`10.1.${i >> 8}.${i & 255}`);
    expect(limiter.size).toBe(1000);
    clock.ms += 60_000;
    limiter.fail('10.2.0.1');
    expect(limiter.size).toBe(1);
  });

  it('stays O(1) per request under churn: ten times the addresses through a bound of 10,000 take about ten times as long, not a hundred', () => {
    // Dropping the oldest through a Map's own order was quadratic (V8 walks the
    // deleted entries at its front): 300,000 addresses took over 3 s, the
    // queue about 0.3 s. A ratio of two runs, not a time: it holds on a busy machine.
    const churn = (addresses: number) => {
      const { clock, limiter, refusal } = setup(100, 10_000);
      const started = performance.now();
      for (let i = 0; i < addresses; i++) {
        const ip = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
        limiter.fail(ip);
        refusal(ip);
        if (i % 1000 === 0) clock.ms += 1;
      }
      expect(limiter.size).toBe(10_000);
      return performance.now() - started;
    };
    churn(30_000); // warm-up: compiled code for both runs
    const ratio = churn(300_000) / churn(30_000);
    expect(ratio).toBeLessThan(30);
  });
});

describe('clientKey', () => {
  it('IPv4 as given, IPv4-mapped IPv6 as its IPv4 address', () => {
    expect(clientKey('192.0.2.1')).toBe('192.0.2.1');
    expect(clientKey('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(clientKey('::FFFF:192.0.2.1')).toBe('192.0.2.1');
  });

  it('IPv6 by its /64 prefix, whatever the spelling', () => {
    expect(clientKey('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:db8:1:2:aaaa:bbbb:cccc:dddd')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:0db8:0001:0002:0000:0000:0000:0001')).toBe('2001:db8:1:2::/64');
    expect(clientKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(clientKey('::1')).toBe('0:0:0:0::/64');
    expect(clientKey('2001:db8:1:3::1')).not.toBe(clientKey('2001:db8:1:2::1'));
    expect(clientKey('64:ff9b::192.0.2.1')).toBe('64:ff9b:0:0::/64');
  });

  it('addresses of one /64 share a count; another /64 has its own', () => {
    const { limiter, refusal } = setup(2);
    limiter.fail('2001:db8:1:2::1');
    limiter.fail('2001:db8:1:2:ffff::9');
    expect(refusal('2001:db8:1:2::abcd')).toBeDefined();
    expect(refusal('2001:db8:1:3::1')).toBeUndefined();
  });

  it('text that is not an IP address is its own key', () => {
    expect(clientKey('1:2:3')).toBe('1:2:3');
    expect(clientKey('1::2::3')).toBe('1::2::3');
    expect(clientKey('')).toBe('');
  });
});
