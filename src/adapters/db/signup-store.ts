/** Visitors' sign-ups over SQL (both back ends): app/people/signup.ts. */
import type { Kysely } from 'kysely';
import type { Signup, SignupStore } from '../../app/people/signup.js';
import type { Database } from './schema.js';
import { guarded } from './unavailable.js';

export class SqlSignupStore implements SignupStore {
  constructor(private readonly db: Kysely<Database>) {}

  insert(signup: Signup & { readonly digest: Uint8Array }): Promise<void> {
    return guarded(async () => {
      await this.db.transaction().execute(async (tx) => {
        await tx.updateTable('signups').set({ used_at: signup.createdAt }).where('email', '=', signup.email).where('used_at', 'is', null).execute();
        await tx
          .insertInto('signups')
          .values({ id: signup.id, digest: signup.digest, email: signup.email, created_at: signup.createdAt, expires_at: signup.expiresAt, used_at: null })
          .execute();
      });
    });
  }

  find(digest: Uint8Array): Promise<Signup | undefined> {
    return guarded(async () => {
      const row = await this.db.selectFrom('signups').selectAll().where('digest', '=', digest).executeTakeFirst();
      return row && { id: row.id, email: row.email, createdAt: new Date(row.created_at), expiresAt: new Date(row.expires_at), usedAt: row.used_at === null ? null : new Date(row.used_at) };
    });
  }

  sweep(before: Date): Promise<void> {
    return guarded(async () => {
      await this.db.deleteFrom('signups').where((eb) => eb.or([eb('expires_at', '<', before), eb('used_at', '<', before)])).execute();
    });
  }

  use(id: string, now: Date): Promise<boolean> {
    return guarded(async () => {
      const result = await this.db.updateTable('signups').set({ used_at: now }).where('id', '=', id).where('used_at', 'is', null).where('expires_at', '>', now).executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    });
  }
}
