/**
 * The thumbnails of records, made after the marking's answer rather than
 * before it. A thumbnail needs the marked file decoded, and for a JPEG of
 * 5 MB that is about 100 ms of CPU even at an eighth of its size (the
 * entropy decoding is the cost): made on the request path, it took a batch
 * of 25 such photos through the dashboard from x1.00 to x1.84 the time of
 * the same files sent to the API by a script (`npm run bench:dashboard`).
 *
 * So a record is stored without one, and its marked bytes wait here (at most
 * `maxBytes` in all; beyond, the record keeps no thumbnail) until the server
 * has no call in flight, or `maxWaitMs` has passed; a certificate asked for
 * before then makes the thumbnails it shows at once. Bytes still waiting
 * when the server stops are dropped: those records' certificates show none.
 */
export interface ThumbnailQueueDeps {
  /** A small JPEG of the image; a refusal leaves the record without one. */
  readonly make: (bytes: Uint8Array) => Promise<Uint8Array>;
  readonly store: (recordId: string, thumbnail: Uint8Array) => Promise<void>;
  /** Whether calls are in flight (the thumbnails wait for a quiet moment). */
  readonly busy: () => boolean;
  readonly maxBytes?: number;
  readonly maxWaitMs?: number;
  readonly onError?: (error: unknown) => void;
}

export interface ThumbnailQueue {
  /** Make the record's thumbnail later, from these bytes (the marked file). */
  add(recordId: string, bytes: Uint8Array): void;
  /** Make now the thumbnails of these records that still wait (a certificate is about to show them). */
  complete(recordIds: readonly string[]): Promise<void>;
  /** Records whose thumbnail waits. */
  readonly waiting: number;
  close(): void;
}

const POLL_MS = 200;

export function createThumbnailQueue(deps: ThumbnailQueueDeps): ThumbnailQueue {
  const maxBytes = deps.maxBytes ?? 256 * 1024 * 1024;
  const maxWaitMs = deps.maxWaitMs ?? 30_000;
  const pending = new Map<string, { bytes: Uint8Array; since: number }>();
  const inProgress = new Map<string, Promise<void>>();
  let queued = 0;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  function take(recordId: string): Promise<void> {
    const running = inProgress.get(recordId);
    if (running) return running;
    const entry = pending.get(recordId);
    if (!entry) return Promise.resolve();
    pending.delete(recordId);
    queued -= entry.bytes.byteLength;
    const work = (async () => {
      try {
        await deps.store(recordId, await deps.make(entry.bytes));
      } catch (error) {
        deps.onError?.(error);
      } finally {
        inProgress.delete(recordId);
      }
    })();
    inProgress.set(recordId, work);
    return work;
  }

  function schedule(): void {
    if (timer || closed || pending.size === 0) return;
    timer = setTimeout(() => {
      timer = undefined;
      const [first] = pending;
      if (!first) return;
      const [recordId, { since }] = first;
      if (deps.busy() && Date.now() - since < maxWaitMs) return schedule();
      void take(recordId).finally(schedule);
    }, POLL_MS);
    timer.unref();
  }

  return {
    add(recordId, bytes) {
      if (closed) return;
      if (queued + bytes.byteLength > maxBytes) {
        deps.onError?.(new Error(`thumbnails waiting hold ${queued} bytes already: record ${recordId} keeps none`));
        return;
      }
      pending.set(recordId, { bytes, since: Date.now() });
      queued += bytes.byteLength;
      schedule();
    },
    async complete(recordIds) {
      await Promise.all(recordIds.map(take));
    },
    get waiting() {
      return pending.size + inProgress.size;
    },
    close() {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
      pending.clear();
      queued = 0;
    },
  };
}
