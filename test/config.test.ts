/** Configuration from the environment: defaults, and bad values stop the start with the variable named. */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadClientSettings, loadConfig, servingTunables } from '../src/config.js';

describe('OPTMARK_AUTH_FAILURES_PER_MINUTE', () => {
  it('defaults to 100; 0 (off) and other whole numbers are taken', () => {
    expect(loadConfig({}).authFailuresPerMinute).toBe(100);
    expect(loadConfig({ OPTMARK_AUTH_FAILURES_PER_MINUTE: '' }).authFailuresPerMinute).toBe(100);
    expect(loadConfig({ OPTMARK_AUTH_FAILURES_PER_MINUTE: '0' }).authFailuresPerMinute).toBe(0);
    expect(loadConfig({ OPTMARK_AUTH_FAILURES_PER_MINUTE: ' 20 ' }).authFailuresPerMinute).toBe(20);
  });

  it.each(['-1', '1.5', 'ten', '1e3', '1000001'])('refuses %j', (value) => {
    expect(() => loadConfig({ OPTMARK_AUTH_FAILURES_PER_MINUTE: value })).toThrow(ConfigError);
    expect(() => loadConfig({ OPTMARK_AUTH_FAILURES_PER_MINUTE: value })).toThrow(/OPTMARK_AUTH_FAILURES_PER_MINUTE/);
  });
});

describe('OPTMARK_TRUST_PROXY', () => {
  it('is off by default; takes a comma-separated list of addresses and CIDR ranges', () => {
    expect(loadConfig({}).trustProxy).toBeUndefined();
    expect(loadConfig({ OPTMARK_TRUST_PROXY: ' ' }).trustProxy).toBeUndefined();
    expect(loadConfig({ OPTMARK_TRUST_PROXY: '127.0.0.1, 10.0.0.0/8,::1,fd00::/8' }).trustProxy).toEqual(['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8']);
  });

  it.each(['true', 'loopback', '10.0.0.0/33', '::/129', '10.0.0.1,', '10.0.0.0/8/1', '*', '2'])('refuses %j', (value) => {
    expect(() => loadConfig({ OPTMARK_TRUST_PROXY: value })).toThrow(/OPTMARK_TRUST_PROXY/);
  });
});

describe('OPTMARK_MAX_IMAGE_PIXELS', () => {
  it('defaults to 16383 x 16383 (sharp\'s own limit) and takes whole numbers', () => {
    expect(loadConfig({}).maxImagePixels).toBe(16383 * 16383);
    expect(loadConfig({ OPTMARK_MAX_IMAGE_PIXELS: '4096' }).maxImagePixels).toBe(4096);
  });

  it.each(['0', '-5', 'lots', '2.5'])('refuses %j', (value) => {
    expect(() => loadConfig({ OPTMARK_MAX_IMAGE_PIXELS: value })).toThrow(/OPTMARK_MAX_IMAGE_PIXELS/);
  });
});

describe('OPTMARK_HEADERS_TIMEOUT and OPTMARK_REQUEST_TIMEOUT', () => {
  it('take a headers timeout up to the request timeout', () => {
    expect(loadConfig({})).toMatchObject({ headersTimeoutSeconds: 10, requestTimeoutSeconds: 120 });
    expect(loadConfig({ OPTMARK_HEADERS_TIMEOUT: '5', OPTMARK_REQUEST_TIMEOUT: '5' })).toMatchObject({ headersTimeoutSeconds: 5, requestTimeoutSeconds: 5 });
  });

  it('refuse a headers timeout longer than the request timeout (Node would then never apply the request timeout)', () => {
    expect(() => loadConfig({ OPTMARK_REQUEST_TIMEOUT: '1' })).toThrow(/OPTMARK_HEADERS_TIMEOUT \(10\) must not be longer than OPTMARK_REQUEST_TIMEOUT \(1\)/);
  });
});

describe('OPTMARK_URL and OPTMARK_API_KEY', () => {
  it('are the command line\'s server and key, trimmed, the URL without its trailing slash', () => {
    expect(loadClientSettings({})).toEqual({ url: undefined, apiKey: undefined });
    expect(loadClientSettings({ OPTMARK_URL: ' https://optmark.example/ ', OPTMARK_API_KEY: ' omk_x ' })).toEqual({ url: 'https://optmark.example', apiKey: 'omk_x' });
  });

  it.each(['optmark.example', 'ftp://optmark.example', 'https://'])('refuses OPTMARK_URL=%s', (value) => {
    expect(() => loadClientSettings({ OPTMARK_URL: value })).toThrow(/OPTMARK_URL must be an http:\/\/ or https:\/\/ URL/);
  });
});

describe("the allocator settings optmark serve runs with (GLIBC_TUNABLES)", () => {
  const OURS = 'glibc.malloc.mmap_threshold=67108864:glibc.malloc.trim_threshold=268435456';
  it('are added to an environment without them, and after settings of the operator\'s own', () => {
    expect(servingTunables({})).toBe(OURS);
    expect(servingTunables({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=4' })).toBe(`glibc.malloc.arena_max=4:${OURS}`);
  });

  it("leave a value the operator set for one of them, and ask for nothing once both are there (so the server re-executes itself at most once)", () => {
    expect(servingTunables({ GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=1048576' })).toBe('glibc.malloc.mmap_threshold=1048576:glibc.malloc.trim_threshold=268435456');
    expect(servingTunables({ GLIBC_TUNABLES: OURS })).toBeUndefined();
    expect(servingTunables({ GLIBC_TUNABLES: `glibc.malloc.arena_max=2:${OURS}` })).toBeUndefined();
  });
});

describe('OPTMARK_RESERVATION_TTL', () => {
  it('must be more than twice the request timeout (a call lasts at most its upload and as long again for its work)', () => {
    expect(loadConfig({}).reservationTtlSeconds).toBe(300);
    expect(loadConfig({ OPTMARK_REQUEST_TIMEOUT: '4', OPTMARK_HEADERS_TIMEOUT: '4', OPTMARK_RESERVATION_TTL: '9' }).reservationTtlSeconds).toBe(9);
    expect(() => loadConfig({ OPTMARK_RESERVATION_TTL: '240' })).toThrow(/OPTMARK_RESERVATION_TTL \(240\) must be more than twice OPTMARK_REQUEST_TIMEOUT \(120\)/);
    expect(() => loadConfig({ OPTMARK_REQUEST_TIMEOUT: '200' })).toThrow(/OPTMARK_RESERVATION_TTL \(300\) must be more than twice OPTMARK_REQUEST_TIMEOUT \(200\)/);
  });
});
