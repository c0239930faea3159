/**
 * The brakes' counts over SQL (the same statements on PGlite and
 * PostgreSQL). A caller holds its keys' rows for one transaction: a missing
 * row is first made (state null) so that there is a row to lock, then the
 * rows are locked in the order of their keys (so no two callers can wait on
 * each other in a circle), read, decided on and written. Two tries of one brake, in one
 * process or two, are thus counted one after the other, never both against
 * the same count.
 */
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { BrakeStore, KeptBrake } from '../../app/people/ports.js';
import type { Database } from './schema.js';
import { guarded } from './unavailable.js';

const digest = (key: string) => createHash('sha256').update(key).digest('hex');
/** A row made only to be locked may be forgotten at once. */
const AT_ONCE = new Date(0);

export class SqlBrakeStore implements BrakeStore {
  constructor(private readonly db: Kysely<Database>) {}

  hold<S, T>(
    keys: readonly string[],
    decide: (states: readonly (S | undefined)[]) => { readonly answer: T; readonly keep?: readonly (KeptBrake<S> | undefined)[] },
  ): Promise<T> {
    const digests = keys.map(digest);
    const order = [...new Set(digests)].sort();
    return guarded(() =>
      this.db.transaction().execute(async (tx) => {
        await tx
          .insertInto('brakes')
          .values(order.map((key) => ({ key, state: null, forget_at: AT_ONCE })))
          .onConflict((oc) => oc.column('key').doNothing())
          .execute();
        const rows = await tx.selectFrom('brakes').select(['key', 'state']).where('key', 'in', order).orderBy('key').forUpdate().execute();
        const held = new Map(rows.map((row) => [row.key, row.state === null ? undefined : (JSON.parse(row.state) as S)]));
        const { answer, keep } = decide(digests.map((key) => held.get(key)));
        const next = new Map<string, KeptBrake<S> | undefined>();
        if (keep) digests.forEach((key, i) => next.set(key, keep[i]));
        for (const key of order) {
          const kept = next.has(key) ? next.get(key) : held.get(key) === undefined ? undefined : 'as it was';
          if (kept === 'as it was') continue;
          if (kept === undefined) {
            await tx.deleteFrom('brakes').where('key', '=', key).execute();
            continue;
          }
          const values = { state: JSON.stringify(kept.state), forget_at: kept.forgetAt };
          await tx
            .insertInto('brakes')
            .values({ key, ...values })
            .onConflict((oc) => oc.column('key').doUpdateSet(values))
            .execute();
        }
        return answer;
      }),
    );
  }

  async sweep(now: Date): Promise<number> {
    const result = await guarded(() => this.db.deleteFrom('brakes').where('forget_at', '<', now).executeTakeFirst());
    return Number(result.numDeletedRows);
  }
}
