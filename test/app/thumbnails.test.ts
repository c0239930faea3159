/**
 * The thumbnails of records are made after the marking's answer: while
 * calls are in flight they wait (up to a longest wait), a certificate makes
 * the ones it shows at once, the bytes waiting are bounded, and a stop drops
 * what still waits.
 */
import { describe, expect, it } from 'vitest';
import { createThumbnailQueue } from '../../src/app/records/thumbnails.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function queue(options: { busy: () => boolean; maxBytes?: number; maxWaitMs?: number }) {
  const made: string[] = [];
  const stored = new Map<string, Uint8Array>();
  const errors: unknown[] = [];
  const q = createThumbnailQueue({
    make: async (bytes) => {
      made.push(String(bytes.byteLength));
      return bytes.subarray(0, 1);
    },
    store: async (id, thumbnail) => void stored.set(id, thumbnail),
    busy: options.busy,
    maxBytes: options.maxBytes,
    maxWaitMs: options.maxWaitMs,
    onError: (error) => errors.push(error),
  });
  return { q, made, stored, errors };
}

describe('the thumbnails of records', () => {
  it('wait while calls are in flight, and are made once the server is quiet', async () => {
    let busy = true;
    const { q, stored } = queue({ busy: () => busy });
    q.add('rec_a', new Uint8Array(10));
    await sleep(700);
    expect(stored.size).toBe(0);
    expect(q.waiting).toBe(1);
    busy = false;
    await expect.poll(() => stored.has('rec_a'), { timeout: 2000 }).toBe(true);
    expect(q.waiting).toBe(0);
  });

  it('a certificate makes the ones it shows at once, even while busy, and only once', async () => {
    const { q, stored, made } = queue({ busy: () => true });
    q.add('rec_b', new Uint8Array(20));
    q.add('rec_c', new Uint8Array(30));
    await Promise.all([q.complete(['rec_b']), q.complete(['rec_b'])]);
    expect([...stored.keys()]).toEqual(['rec_b']);
    expect(made).toEqual(['20']);
    expect(q.waiting).toBe(1);
    q.close();
    expect(q.waiting).toBe(0);
  });

  it('are made after the longest wait even when the server is never quiet', async () => {
    const { q, stored } = queue({ busy: () => true, maxWaitMs: 300 });
    q.add('rec_d', new Uint8Array(5));
    await expect.poll(() => stored.has('rec_d'), { timeout: 3000 }).toBe(true);
  });

  it('hold a bounded number of bytes: beyond it, a record keeps no thumbnail, and says so', async () => {
    const { q, errors } = queue({ busy: () => true, maxBytes: 100 });
    q.add('rec_e', new Uint8Array(60));
    q.add('rec_f', new Uint8Array(60));
    expect(q.waiting).toBe(1);
    expect(String(errors[0])).toContain('rec_f keeps none');
    q.close();
  });
});
