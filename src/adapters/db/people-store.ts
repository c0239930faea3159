/**
 * Users, one-time links and the audit log over SQL (Kysely; the same
 * statements on PGlite and PostgreSQL). Nothing here is on the image
 * request path, so there is no cache: every server sees a change at once.
 */
import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import type { AuditEntry, LinkPurpose, NewUser, OneTimeLink, PeopleStore, RevokedKey, Role, SessionRecord, User, UserWithSecret } from '../../app/people/ports.js';
import type { AuditLogTable, Database, OneTimeLinksTable, SessionsTable, UsersTable } from './schema.js';
import { guarded } from './unavailable.js';
/** A user's id as the database makes them. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const toUser = (row: Selectable<UsersTable>): UserWithSecret => ({
  id: row.id,
  accountId: row.account_id,
  email: row.email,
  displayName: row.display_name,
  role: row.role as Role,
  operator: row.operator,
  createdAt: row.created_at,
  disabledAt: row.disabled_at,
  hasPassword: row.password_hash !== null,
  passwordChangedAt: row.password_changed_at,
  passwordHash: row.password_hash,
});

const withoutSecret = ({ passwordHash: _, ...user }: UserWithSecret): User => user;

const toLink = (row: Selectable<OneTimeLinksTable>): OneTimeLink => ({
  id: row.id,
  purpose: row.purpose as LinkPurpose,
  accountId: row.account_id,
  userId: row.user_id,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  usedAt: row.used_at,
});

const toAuditEntry = (row: Selectable<AuditLogTable>): AuditEntry => ({
  at: row.at,
  actor: row.actor,
  accountId: row.account_id,
  action: row.action,
  detail: JSON.parse(row.detail) as Record<string, unknown>,
  address: row.address,
});

const toSession = (row: Selectable<SessionsTable>): SessionRecord => ({
  id: row.id,
  userId: row.user_id,
  accountId: row.account_id,
  createdAt: row.created_at,
  lastSeenAt: row.last_seen_at,
  expiresAt: row.expires_at,
  notice: row.notice,
});

/** Disabled, keys revoked, sessions ended: the keys revoked. */
async function disable(tx: Transaction<Database>, userId: string, now: Date): Promise<RevokedKey[]> {
  await tx.updateTable('users').set({ disabled_at: now }).where('id', '=', userId).where('disabled_at', 'is', null).execute();
  const keys = await tx.updateTable('api_keys').set({ revoked_at: now }).where('user_id', '=', userId).where('revoked_at', 'is', null).returning(['id', 'prefix', 'name']).execute();
  await tx.deleteFrom('sessions').where('user_id', '=', userId).execute();
  return keys;
}

/**
 * Whether the person is an owner of the account whom no other owner who can
 * sign in (not disabled, a password chosen: someone invited has not) would
 * be left to replace, read with the account's row locked: changes of owners
 * of one account are so decided one after the other.
 */
async function lastOwner(tx: Transaction<Database>, accountId: string, userId: string): Promise<boolean> {
  await tx.selectFrom('accounts').select('id').where('id', '=', accountId).forUpdate().executeTakeFirst();
  const target = await tx.selectFrom('users').select('role').where('id', '=', userId).where('account_id', '=', accountId).executeTakeFirst();
  if (target?.role !== 'owner') return false;
  const others = await tx
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .where('role', '=', 'owner')
    .where('disabled_at', 'is', null)
    .where('password_hash', 'is not', null)
    .where('id', '<>', userId)
    .executeTakeFirstOrThrow();
  return Number(others.n) === 0;
}

export class SqlPeopleStore implements PeopleStore {
  constructor(
    private readonly db: Kysely<Database>,
    /** Told when a user's keys were revoked here (the embedded store drops them from its cache). */
    private readonly onKeysRevoked: (userId: string) => void = () => {},
  ) {}

  insertUser(user: NewUser): Promise<boolean> {
    return guarded(async () => {
      const row = await this.db
        .insertInto('users')
        .values({
          id: user.id,
          account_id: user.accountId,
          email: user.email,
          display_name: user.displayName,
          password_hash: user.passwordHash,
          password_changed_at: user.passwordHash === null ? null : user.createdAt,
          role: user.role,
          operator: user.operator,
          created_at: user.createdAt,
        })
        .onConflict((oc) => oc.column('email').doNothing())
        .returning('id')
        .executeTakeFirst();
      return row !== undefined;
    });
  }

  findUserByEmail(email: string): Promise<UserWithSecret | undefined> {
    return guarded(async () => {
      const row = await this.db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
      return row && toUser(row);
    });
  }

  findUserById(id: string): Promise<UserWithSecret | undefined> {
    // An id from a form: one that is not a UUID names no user (the database would refuse it with an error).
    if (!UUID.test(id)) return Promise.resolve(undefined);
    return guarded(async () => {
      const row = await this.db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
      return row && toUser(row);
    });
  }

  listUsers(accountId: string): Promise<User[]> {
    return guarded(async () => {
      const rows = await this.db.selectFrom('users').selectAll().where('account_id', '=', accountId).orderBy('created_at').orderBy('email').execute();
      return rows.map((row) => withoutSecret(toUser(row)));
    });
  }

  countUsers(accountId: string): Promise<number> {
    return guarded(async () => {
      const row = await this.db
        .selectFrom('users')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('account_id', '=', accountId)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    });
  }

  accountName(accountId: string): Promise<string | undefined> {
    return guarded(async () => (await this.db.selectFrom('accounts').select('name').where('id', '=', accountId).executeTakeFirst())?.name);
  }

  accountsWithoutUsers(): Promise<Array<{ id: string; name: string }>> {
    return guarded(async () =>
      this.db
        .selectFrom('accounts as a')
        .select(['a.id', 'a.name'])
        .where(({ not, exists, selectFrom }) => not(exists(selectFrom('users as u').select('u.id').whereRef('u.account_id', '=', 'a.id'))))
        .orderBy('a.name')
        .execute(),
    );
  }

  accountsAwaitingOwnerLink(): Promise<Array<{ id: string; name: string }>> {
    return guarded(async () =>
      this.db
        .selectFrom('accounts as a')
        .select(['a.id', 'a.name'])
        .where('a.owner_link_pending', '=', true)
        .where(({ not, exists, selectFrom }) => not(exists(selectFrom('users as u').select('u.id').whereRef('u.account_id', '=', 'a.id'))))
        .orderBy('a.name')
        .execute(),
    );
  }

  ownerLinkHandedOver(accountIds: readonly string[]): Promise<void> {
    return guarded(async () => {
      if (accountIds.length === 0) return;
      await this.db.updateTable('accounts').set({ owner_link_pending: false }).where('id', 'in', [...accountIds]).execute();
    });
  }

  setPassword(userId: string, passwordHash: string, now: Date): Promise<void> {
    return guarded(async () => {
      await this.db.updateTable('users').set({ password_hash: passwordHash, password_changed_at: now }).where('id', '=', userId).execute();
    });
  }

  setDisplayName(userId: string, displayName: string): Promise<void> {
    return guarded(async () => {
      await this.db.updateTable('users').set({ display_name: displayName }).where('id', '=', userId).execute();
    });
  }

  setRole(accountId: string, userId: string, role: Role): Promise<'done' | 'last owner'> {
    return guarded(() =>
      this.db.transaction().execute(async (tx) => {
        if (role !== 'owner' && (await lastOwner(tx, accountId, userId))) return 'last owner';
        await tx.updateTable('users').set({ role }).where('id', '=', userId).where('account_id', '=', accountId).execute();
        return 'done';
      }),
    );
  }

  disableUser(userId: string, now: Date): Promise<RevokedKey[]> {
    return guarded(async () => {
      const revoked = await this.db.transaction().execute((tx) => disable(tx, userId, now));
      this.onKeysRevoked(userId);
      return revoked;
    });
  }

  removeUser(accountId: string, userId: string, now: Date): Promise<RevokedKey[] | 'last owner'> {
    return guarded(async () => {
      const removed = await this.db.transaction().execute(async (tx) => {
        if (await lastOwner(tx, accountId, userId)) return 'last owner' as const;
        const revoked = await disable(tx, userId, now);
        await tx.deleteFrom('users').where('id', '=', userId).where('account_id', '=', accountId).execute();
        return revoked;
      });
      if (removed !== 'last owner') this.onKeysRevoked(userId);
      return removed;
    });
  }

  enableUser(userId: string): Promise<void> {
    return guarded(async () => {
      await this.db.updateTable('users').set({ disabled_at: null }).where('id', '=', userId).execute();
    });
  }

  adoptKeys(accountId: string, userId: string): Promise<number> {
    return guarded(async () => {
      const result = await this.db.updateTable('api_keys').set({ user_id: userId }).where('account_id', '=', accountId).where('user_id', 'is', null).executeTakeFirst();
      return Number(result.numUpdatedRows);
    });
  }

  insertLink(link: OneTimeLink & { readonly digest: Uint8Array }): Promise<void> {
    return guarded(async () => {
      await this.db
        .insertInto('one_time_links')
        .values({
          id: link.id,
          digest: link.digest,
          purpose: link.purpose,
          account_id: link.accountId,
          user_id: link.userId,
          created_at: link.createdAt,
          expires_at: link.expiresAt,
          used_at: link.usedAt,
        })
        .execute();
    });
  }

  findLink(digest: Uint8Array): Promise<OneTimeLink | undefined> {
    return guarded(async () => {
      const row = await this.db.selectFrom('one_time_links').selectAll().where('digest', '=', digest).executeTakeFirst();
      return row && toLink(row);
    });
  }

  useLink(id: string, now: Date): Promise<boolean> {
    return guarded(async () => {
      const result = await this.db
        .updateTable('one_time_links')
        .set({ used_at: now })
        .where('id', '=', id)
        .where('used_at', 'is', null)
        .where('expires_at', '>', now)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    });
  }

  retireLinks(userId: string, purposes: readonly LinkPurpose[], now: Date): Promise<void> {
    return guarded(async () => {
      await this.db
        .updateTable('one_time_links')
        .set({ used_at: now })
        .where('user_id', '=', userId)
        .where('purpose', 'in', [...purposes])
        .where('used_at', 'is', null)
        .execute();
    });
  }

  retireAccountLinks(accountId: string, purposes: readonly LinkPurpose[], now: Date): Promise<void> {
    return guarded(async () => {
      await this.db
        .updateTable('one_time_links')
        .set({ used_at: now })
        .where('account_id', '=', accountId)
        .where('purpose', 'in', [...purposes])
        .where('used_at', 'is', null)
        .execute();
    });
  }

  insertSession(session: SessionRecord & { readonly tokenDigest: Uint8Array }): Promise<void> {
    return guarded(async () => {
      await this.db
        .insertInto('sessions')
        .values({
          id: session.id,
          token_digest: session.tokenDigest,
          user_id: session.userId,
          account_id: session.accountId,
          created_at: session.createdAt,
          last_seen_at: session.lastSeenAt,
          expires_at: session.expiresAt,
        })
        .execute();
    });
  }

  findSession(tokenDigest: Uint8Array): Promise<SessionRecord | undefined> {
    return guarded(async () => {
      const row = await this.db.selectFrom('sessions').selectAll().where('token_digest', '=', tokenDigest).executeTakeFirst();
      return row && toSession(row);
    });
  }

  touchSession(id: string, now: Date): Promise<void> {
    return guarded(async () => {
      await this.db.updateTable('sessions').set({ last_seen_at: now }).where('id', '=', id).execute();
    });
  }

  setSessionNotice(id: string, notice: string | null): Promise<void> {
    return guarded(async () => {
      await this.db.updateTable('sessions').set({ notice }).where('id', '=', id).execute();
    });
  }

  deleteSession(id: string): Promise<void> {
    return guarded(async () => {
      await this.db.deleteFrom('sessions').where('id', '=', id).execute();
    });
  }

  deleteUserSessions(userId: string, exceptId?: string): Promise<void> {
    return guarded(async () => {
      let query = this.db.deleteFrom('sessions').where('user_id', '=', userId);
      if (exceptId !== undefined) query = query.where('id', '<>', exceptId);
      await query.execute();
    });
  }

  trimSessions(userId: string, accountId: string, perUser: number, perAccount: number): Promise<void> {
    return guarded(async () => {
      await sql`
        delete from sessions where id in (
          select id from sessions where user_id = ${userId} order by created_at desc, id desc offset ${perUser}
        ) or id in (
          select id from sessions where account_id = ${accountId} order by created_at desc, id desc offset ${perAccount}
        )
      `.execute(this.db);
    });
  }

  deleteStaleSessions(now: Date, idleSince: Date): Promise<number> {
    return guarded(async () => {
      const result = await this.db
        .deleteFrom('sessions')
        .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<', idleSince)]))
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }

  audit(entry: AuditEntry): Promise<void> {
    return guarded(async () => {
      await this.db
        .insertInto('audit_log')
        .values({ at: entry.at, actor: entry.actor, account_id: entry.accountId, action: entry.action, detail: JSON.stringify(entry.detail), address: entry.address ?? null })
        .execute();
    });
  }

  auditLog(accountId: string, limit: number): Promise<AuditEntry[]> {
    return guarded(async () => {
      const rows = await this.db.selectFrom('audit_log').selectAll().where('account_id', '=', accountId).orderBy('id', 'desc').limit(limit).execute();
      return rows.map(toAuditEntry);
    });
  }

  serviceAuditLog(prefixes: readonly string[], limit: number): Promise<AuditEntry[]> {
    return guarded(async () => {
      const rows = await this.db
        .selectFrom('audit_log')
        .selectAll()
        .where((eb) => eb.or(prefixes.map((prefix) => eb('action', 'like', `${prefix.replace(/[\\%_]/g, '\\$&')}%`))))
        .orderBy('id', 'desc')
        .limit(limit)
        .execute();
      return rows.map(toAuditEntry);
    });
  }
}
