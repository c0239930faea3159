/**
 * The rule of at most N active keys per account, kept under concurrency: the
 * account's row is locked, then its active keys counted (a key being rolled
 * out, working until its end, does not count), in the transaction that then
 * adds one. Used by a reveal on the keys page and by `optmark keys issue`.
 */
import type { Transaction } from 'kysely';
import type { Database } from './schema.js';

export async function lockedActiveKeys(tx: Transaction<Database>, accountId: string, now: Date): Promise<number> {
  await tx.selectFrom('accounts').select('id').where('id', '=', accountId).forUpdate().executeTakeFirst();
  const row = await tx
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .where('replaced_by', 'is', null)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
