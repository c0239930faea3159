/**
 * People: users who belong to one account with a role, the service's
 * operators, one-time links, and the audit log. What the use cases need from
 * the database (adapters/db/people-store.ts) and from a password hasher
 * (adapters/password-hasher.ts).
 */

export const ROLES = ['owner', 'member'] as const;
export type Role = (typeof ROLES)[number];

export interface User {
  readonly id: string;
  readonly accountId: string;
  /** Lower case, as typed otherwise; unique in the whole service. */
  readonly email: string;
  readonly displayName: string;
  readonly role: Role;
  /** One of the service's team: decides API access requests, manages accounts and plans. */
  readonly operator: boolean;
  readonly createdAt: Date;
  readonly disabledAt: Date | null;
  /** Whether a password is set (a user invited or set up by a link has none until the link is used). */
  readonly hasPassword: boolean;
  readonly passwordChangedAt: Date | null;
}

/** A user as the sign-in sees it: with the stored password hash. */
export interface UserWithSecret extends User {
  readonly passwordHash: string | null;
}

export const LINK_PURPOSES = ['setup', 'reset', 'invitation', 'account-setup'] as const;
/**
 * What a one-time link does: `setup` sets the first password of a user made
 * by an operator or the first start; `reset` sets a new one; `invitation`
 * lets an invited person choose their name and password; `account-setup`
 * creates the first owner of an account that has no users (an upgraded
 * deployment), with the email the person gives.
 */
export type LinkPurpose = (typeof LINK_PURPOSES)[number];

export interface OneTimeLink {
  readonly id: string;
  readonly purpose: LinkPurpose;
  readonly accountId: string;
  readonly userId: string | null;
  readonly createdAt: Date;
  readonly expiresAt: Date;
  readonly usedAt: Date | null;
}

export interface NewUser {
  readonly id: string;
  readonly accountId: string;
  readonly email: string;
  readonly displayName: string;
  readonly role: Role;
  readonly operator: boolean;
  readonly createdAt: Date;
  readonly passwordHash: string | null;
}

export interface AuditEntry {
  readonly at: Date;
  /** `cli`, `system`, or the id of the user who acted. */
  readonly actor: string;
  readonly accountId: string | null;
  readonly action: string;
  readonly detail: Record<string, unknown>;
  /** The client's address, when a person acted over HTTP. */
  readonly address?: string | null;
}

export interface SessionRecord {
  readonly id: string;
  readonly userId: string;
  readonly accountId: string;
  readonly createdAt: Date;
  readonly lastSeenAt: Date;
  /** The absolute end, whatever the use. */
  readonly expiresAt: Date;
  /** What a form did, left for the next page (JSON, see sessions.ts's Notice); null or absent when there is none. */
  readonly notice?: string | null;
}

/** A key revoked with its person (disabled or removed): what its audit line names. */
export interface RevokedKey {
  readonly id: string;
  readonly prefix: string;
  readonly name: string | null;
}

export interface PeopleStore {
  /** False when the email is taken (in any account). */
  insertUser(user: NewUser): Promise<boolean>;
  findUserByEmail(email: string): Promise<UserWithSecret | undefined>;
  findUserById(id: string): Promise<UserWithSecret | undefined>;
  listUsers(accountId: string): Promise<User[]>;
  countUsers(accountId: string): Promise<number>;
  accountName(accountId: string): Promise<string | undefined>;
  /** Accounts that have no user at all. */
  accountsWithoutUsers(): Promise<Array<{ id: string; name: string }>>;
  /** Accounts made before people existed that still have no users and whose owner link was not handed over yet. */
  accountsAwaitingOwnerLink(): Promise<Array<{ id: string; name: string }>>;
  ownerLinkHandedOver(accountIds: readonly string[]): Promise<void>;
  setPassword(userId: string, passwordHash: string, now: Date): Promise<void>;
  setDisplayName(userId: string, displayName: string): Promise<void>;
  /**
   * Give the person of the account this role, unless they are an owner and
   * the account would be left with no other owner who can sign in (not
   * disabled, a password chosen):
   * 'last owner' then, and nothing changes. Decided with the account's row
   * locked, so two owners demoting or removing each other at once cannot
   * both go.
   */
  setRole(accountId: string, userId: string, role: Role): Promise<'done' | 'last owner'>;
  /** Disable the person, end their sessions and revoke their keys, in one transaction: the keys revoked. */
  disableUser(userId: string, now: Date): Promise<RevokedKey[]>;
  enableUser(userId: string): Promise<void>;
  /**
   * Remove the person from the account: disabled, keys revoked, sessions
   * ended and deleted, in one transaction; under the same rule, and lock, as
   * setRole: 'last owner' when they are the account's last owner.
   */
  removeUser(accountId: string, userId: string, now: Date): Promise<RevokedKey[] | 'last owner'>;
  /** Give the keys that have no user yet (made before the account had users) to this user. */
  adoptKeys(accountId: string, userId: string): Promise<number>;

  insertLink(link: OneTimeLink & { readonly digest: Uint8Array }): Promise<void>;
  /** The link with this digest, used or not. */
  findLink(digest: Uint8Array): Promise<OneTimeLink | undefined>;
  /** Mark it used at `now`, only if it is still unused and unexpired: false when another use came first. */
  useLink(id: string, now: Date): Promise<boolean>;
  /** Every unused link of this user for these purposes is used up (a new reset link replaces the old ones). */
  retireLinks(userId: string, purposes: readonly LinkPurpose[], now: Date): Promise<void>;
  retireAccountLinks(accountId: string, purposes: readonly LinkPurpose[], now: Date): Promise<void>;

  insertSession(session: SessionRecord & { readonly tokenDigest: Uint8Array }): Promise<void>;
  findSession(tokenDigest: Uint8Array): Promise<SessionRecord | undefined>;
  touchSession(id: string, now: Date): Promise<void>;
  /** Leave (or, with null, clear) the session's notice. */
  setSessionNotice(id: string, notice: string | null): Promise<void>;
  deleteSession(id: string): Promise<void>;
  /** End every session of the user, but `exceptId`'s. */
  deleteUserSessions(userId: string, exceptId?: string): Promise<void>;
  /** Keep the newest `perUser` sessions of the user and `perAccount` of the account; end the older ones. */
  trimSessions(userId: string, accountId: string, perUser: number, perAccount: number): Promise<void>;
  /** End the sessions past their absolute end or idle since before `idleSince`; how many. */
  deleteStaleSessions(now: Date, idleSince: Date): Promise<number>;

  audit(entry: AuditEntry): Promise<void>;
  auditLog(accountId: string, limit: number): Promise<AuditEntry[]>;
  /** The newest lines of the whole service's log whose action starts with one of `prefixes` (operators). */
  serviceAuditLog(prefixes: readonly string[], limit: number): Promise<AuditEntry[]>;
}

/** Hashes and checks passwords (argon2id), a bounded number at a time. */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /** Whether `password` matches `hash`; with `hash` undefined, takes the same time as a check and answers false. */
  verify(hash: string | undefined, password: string): Promise<boolean>;
  /** Whether a stored hash was made with weaker parameters than today's (it is then replaced at the next sign-in). */
  needsRehash(hash: string): boolean;
  /** The parameters, as the documentation states them. */
  readonly parameters: string;
}

/** What a brake keeps under one key, and from when it may be forgotten. */
export interface KeptBrake<S> {
  readonly state: S;
  readonly forgetAt: Date;
}

/**
 * Counts of the brakes on guessing and on invitations, shared by every
 * process on the database, so that a try is counted wherever it arrives.
 */
export interface BrakeStore {
  /**
   * Holds the brakes under `keys` against every other caller (in any
   * process) while `decide` reads their states (undefined: none kept) and
   * answers. With `keep`, each key's state is replaced by its entry
   * (undefined: forgotten); without, nothing changes.
   */
  hold<S, T>(
    keys: readonly string[],
    decide: (states: readonly (S | undefined)[]) => { readonly answer: T; readonly keep?: readonly (KeptBrake<S> | undefined)[] },
  ): Promise<T>;
  /** Forget what may be forgotten by `now`; how many. */
  sweep(now: Date): Promise<number>;
}
