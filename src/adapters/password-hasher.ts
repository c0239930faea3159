/**
 * Passwords hashed with argon2id (@node-rs/argon2, on libuv's thread pool),
 * a bounded number at a time: a flood of sign-ins waits in a short queue and
 * past it gets 503 server_busy, instead of taking every core and the memory
 * of hundreds of concurrent hashes.
 *
 * Parameters: 46 MiB of memory, 1 pass, 1 lane (m=47104, t=1, p=1), the first
 * of the configurations OWASP's Password Storage Cheat Sheet lists for
 * argon2id; about 15 ms per hash on the project's reference machine. The
 * parameters travel inside each stored hash (PHC string), so raising them
 * later leaves old hashes readable; they are upgraded at the next sign-in.
 */
import { hash, verify, type Options } from '@node-rs/argon2';
import { ServerBusyError } from '../errors.js';
import type { PasswordHasher } from '../app/people/ports.js';

/** `algorithm` 2 is argon2id (the package's const enum, which a module compiled on its own cannot read). */
export const ARGON2_OPTIONS: Options & { memoryCost: number; timeCost: number; parallelism: number } = { algorithm: 2 as Options['algorithm'], memoryCost: 47_104, timeCost: 1, parallelism: 1 };

export interface HasherLimits {
  /** Hashes computed at once. */
  readonly concurrency: number;
  /** Hashes that may wait for a turn; past it, ServerBusyError. */
  readonly queue: number;
}

export function createPasswordHasher(limits: HasherLimits = { concurrency: 2, queue: 32 }): PasswordHasher {
  let running = 0;
  const waiting: Array<() => void> = [];
  // A stored hash for unknown users, so that "no such user" costs one check like a wrong password does.
  const decoy = hash('optmark: no such user', ARGON2_OPTIONS);

  async function slot<T>(work: () => Promise<T>): Promise<T> {
    if (running >= limits.concurrency) {
      if (waiting.length >= limits.queue) throw new ServerBusyError('sign-ins');
      await new Promise<void>((resolve) => waiting.push(resolve));
    } else running++;
    try {
      return await work();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  }

  return {
    needsRehash,
    parameters: `argon2id, m=${ARGON2_OPTIONS.memoryCost} KiB, t=${ARGON2_OPTIONS.timeCost}, p=${ARGON2_OPTIONS.parallelism}`,
    hash: (password) => slot(() => hash(password, ARGON2_OPTIONS)),
    async verify(stored, password) {
      const against = stored ?? (await decoy);
      const matches = await slot(async () => {
        try {
          return await verify(against, password);
        } catch {
          return false; // a stored value that is not a hash matches nothing
        }
      });
      return stored !== undefined && matches;
    },
  };
}

function needsRehash(stored: string): boolean {
  const match = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$/.exec(stored);
  if (!match) return true;
  return Number(match[1]) < ARGON2_OPTIONS.memoryCost || Number(match[2]) < ARGON2_OPTIONS.timeCost;
}
