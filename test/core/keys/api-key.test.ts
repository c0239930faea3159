import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { apiKeyDigest, generateApiKey, isWellFormedApiKey, randomBase62, visiblePrefix } from '../../../src/core/keys/api-key.js';

describe('API keys', () => {
  it('have a prefix, 32 random characters and a checksum that holds', () => {
    const key = generateApiKey(randomBytes);
    expect(key).toMatch(/^omk_[0-9A-Za-z]{38}$/);
    expect(isWellFormedApiKey(key)).toBe(true);
    expect(visiblePrefix(key)).toBe(key.slice(0, 10));
    expect(apiKeyDigest(key)).toHaveLength(32);
  });

  it('refuse a mistyped key: one changed character breaks the checksum', () => {
    const key = generateApiKey(randomBytes);
    for (let i = 4; i < key.length; i++) {
      const c = key[i] === 'a' ? 'b' : 'a';
      expect(isWellFormedApiKey(key.slice(0, i) + c + key.slice(i + 1))).toBe(false);
    }
    for (const bad of ['', 'omk_', 'Bearer x', `${key}x`, key.slice(0, -1), key.replace('omk_', 'omx_'), `${key.slice(0, 10)}-${key.slice(11)}`]) {
      expect(isWellFormedApiKey(bad)).toBe(false);
    }
  });

  it('are distinct and uniformly drawn', () => {
    const keys = new Set(Array.from({ length: 2000 }, () => generateApiKey(randomBytes)));
    expect(keys.size).toBe(2000);
    const counts = new Map<string, number>();
    for (const c of randomBase62(62_000, randomBytes)) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(62);
    // Each character is expected 1000 times; rejection sampling keeps it unbiased.
    for (const n of counts.values()) expect(Math.abs(n - 1000)).toBeLessThan(200);
  });
});
