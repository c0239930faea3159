/**
 * People: creating users, one-time links (set a first password, reset one,
 * accept an invitation, set up the first owner of an account without users),
 * sign-in, and disabling. The CLI, the admin socket and the dashboard call
 * these; the HTTP layer adds sessions, CSRF and rate limits around them.
 *
 * Links are random 256-bit tokens, valid 24 hours and once; only their
 * SHA-256 is stored. A new reset link retires the user's older ones.
 */
import { randomUUID } from 'node:crypto';
import { AdminError, InvalidCredentialsError, InvalidOptionError, LinkNotValidError, PasswordNotAcceptedError } from '../../errors.js';
import type { Clock, Store } from '../ports.js';
import { isTokenShaped, newToken, tokenDigest } from './secret-token.js';
import { ROLES, type LinkPurpose, type OneTimeLink, type PasswordHasher, type PeopleStore, type RevokedKey, type Role, type User } from './ports.js';

export const LINK_HOURS = 24;
export const PASSWORD_MIN = 10;
export const PASSWORD_MAX = 256;
const DISPLAY_NAME_MAX = 100;
/** The path of the page a one-time link opens; the token goes in the query string, which is never logged. */
export const LINK_PATH = '/link';

export interface IssuedLink {
  /** The link's id (not a secret: it names the link in the first-start file and the audit log). */
  readonly id: string;
  readonly purpose: LinkPurpose;
  /** The person it is for (none for an account's first owner, who does not exist yet). */
  readonly userId: string | null;
  /** The whole link to give the person: shown (or mailed) once, stored only as a digest. */
  readonly url: string;
  readonly expiresAt: Date;
}

/** What a link's page needs to know before the person uses it. */
export interface LinkView {
  readonly purpose: LinkPurpose;
  readonly accountName: string;
  /** The user the link is for (none for an account-setup link: the person gives their email). */
  readonly email: string | undefined;
  readonly displayName: string;
  readonly expiresAt: Date;
}

export interface CreateUserInput {
  readonly account: string;
  readonly email: string;
  readonly role?: string;
  readonly operator?: boolean;
  readonly displayName?: string;
  /** Set the password now (automation) instead of issuing a setup link. */
  readonly password?: string;
  /** Who does it: `cli`, or the acting user's id. */
  readonly actor: string;
}

export interface UseLinkInput {
  readonly password: string;
  readonly displayName?: string;
  /** An account-setup link only: the first owner's email. */
  readonly email?: string;
}

export interface People {
  createUser(input: CreateUserInput): Promise<{ user: User; link: IssuedLink | undefined }>;
  listUsers(account: string): Promise<User[]>;
  /** Disable a user: they cannot sign in, their sessions end (the caller's sessions port) and their API keys are revoked. */
  disableUser(email: string, actor: string): Promise<User>;
  /** A new password-reset link (older unused ones stop working). */
  resetUser(email: string, actor: string): Promise<IssuedLink>;
  /**
   * Links for the first owner of each account made before people existed
   * that still has no users (an upgraded deployment); each account gets its
   * link once (`handedOver` marks it so), and a newer link replaces an older one.
   */
  accountSetupLinks(): Promise<{ links: Array<{ account: string; link: IssuedLink }>; handedOver: () => Promise<void> }>;
  /** The link's page, before it is used; LinkNotValidError when it cannot be used. */
  viewLink(token: string): Promise<LinkView>;
  /** Use a link: set the password (and name; and for account setup, create the owner). Once. */
  useLink(token: string, input: UseLinkInput): Promise<User>;
  /** The user with this email and password, enabled; InvalidCredentialsError otherwise (same answer, same work). */
  signIn(email: string, password: string): Promise<User>;
  findUser(id: string): Promise<User | undefined>;
  /** An owner invites someone into their account: a user with no password yet and an invitation link (24 hours). */
  invite(by: User, email: string, role: string): Promise<{ user: User; link: IssuedLink }>;
  /** An owner sends an invited person, who has not set a password yet, a new link; any earlier one stops working. */
  reinvite(by: User, userId: string): Promise<{ user: User; link: IssuedLink }>;
  /** An owner changes a member's role; the account always keeps an owner. */
  changeRole(by: User, userId: string, role: string): Promise<User>;
  /** An owner removes someone else from the account: their sessions end and their keys go. */
  removeMember(by: User, userId: string): Promise<User>;
  /** The person's own password, given the current one; their other sessions end (the caller's session port). */
  changePassword(user: User, current: string, next: string): Promise<void>;
  setDisplayName(user: User, name: string): Promise<User>;
}

export interface PeopleDeps {
  readonly people: PeopleStore;
  readonly store: Pick<Store, 'findAccount'>;
  readonly hasher: PasswordHasher;
  readonly clock: Clock;
  /** The deployment's public address, for links (OPTMARK_BASE_URL, or where the server listens). */
  readonly baseUrl: () => string;
  /** Told after a link was used (the server removes the first-start file that held it, or named its user). */
  readonly onLinkUsed?: (link: { readonly id: string; readonly purpose: LinkPurpose; readonly userId: string | null }) => void;
}

const EMAIL = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:"]+$|^[^\s@<>()[\]\\,;:"]+@localhost$/;

/** An email as stored and compared: trimmed, lower case; refused when it cannot be one. */
export function normaliseEmail(email: string): string {
  const value = email.trim().toLowerCase();
  if (value.length > 254 || !EMAIL.test(value)) throw new InvalidOptionError('email', 'an email address such as name@example.com', email);
  return value;
}

export function checkPassword(password: string, email: string | undefined): string {
  const length = [...password].length;
  if (length < PASSWORD_MIN) throw new PasswordNotAcceptedError(`it has ${length} characters; use at least ${PASSWORD_MIN} (a few words make a good one)`);
  if (length > PASSWORD_MAX) throw new PasswordNotAcceptedError(`it has more than ${PASSWORD_MAX} characters`);
  if (email !== undefined && password.trim().toLowerCase() === email) throw new PasswordNotAcceptedError('it is the email address');
  return password;
}

/** A display name with control and format characters (bidi overrides, zero-width) removed, trimmed, at most 100 characters. */
export function cleanDisplayName(name: string | undefined): string {
  const cleaned = (name ?? '').replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, '').replace(/\s+/g, ' ').trim();
  return [...cleaned].slice(0, DISPLAY_NAME_MAX).join('');
}

function checkRole(role: string | undefined): Role {
  const value = role ?? 'member';
  if (!(ROLES as readonly string[]).includes(value)) throw new InvalidOptionError('role', ROLES.join(' or '), role, `Choose a role: ${ROLES.join(' or ')}`);
  return value as Role;
}

export function createPeople(deps: PeopleDeps): People {
  const { people, store, hasher, clock } = deps;

  async function account(name: string) {
    const found = await store.findAccount(name);
    if (!found) throw new AdminError('account_not_found', `There is no account named ${JSON.stringify(name)}`);
    return found;
  }

  async function userByEmail(email: string) {
    const found = await people.findUserByEmail(normaliseEmail(email));
    if (!found) throw new AdminError('user_not_found', `There is no user with the email ${JSON.stringify(email.trim())}`);
    return found;
  }

  async function issueLink(purpose: LinkPurpose, accountId: string, userId: string | null): Promise<IssuedLink & { id: string }> {
    const token = newToken();
    const now = clock.now();
    const link: OneTimeLink = { id: `lnk_${randomUUID()}`, purpose, accountId, userId, createdAt: now, expiresAt: new Date(now.getTime() + LINK_HOURS * 3_600_000), usedAt: null };
    await people.insertLink({ ...link, digest: tokenDigest(token) });
    return { id: link.id, purpose, userId, url: `${deps.baseUrl()}${LINK_PATH}?token=${token}`, expiresAt: link.expiresAt };
  }

  /** The link behind a token, if it can still be used. */
  async function usable(token: string): Promise<OneTimeLink> {
    if (!isTokenShaped(token)) throw new LinkNotValidError();
    const link = await people.findLink(tokenDigest(token));
    if (!link || link.usedAt !== null || link.expiresAt <= clock.now()) throw new LinkNotValidError();
    return link;
  }

  /** A user of `by`'s account (another account's user is as good as unknown). */
  async function member(by: User, userId: string) {
    const target = await people.findUserById(userId);
    if (!target || target.accountId !== by.accountId) throw new AdminError('user_not_found', 'There is no such person in your account');
    return target;
  }

  /** A `key.revoked` line for each key revoked with its person, as for a key revoked by itself (docs/api-access.md: every revocation is a line). */
  async function auditRevoked(actor: string, by: string, person: Pick<User, 'accountId' | 'email'>, keys: readonly RevokedKey[], at: Date, how: 'disabled' | 'removed'): Promise<void> {
    for (const key of keys) {
      await people.audit({ at, actor, accountId: person.accountId, action: 'key.revoked', detail: { by, key: key.id, prefix: key.prefix, name: key.name, reason: `its person, ${person.email}, was ${how}` } });
    }
  }

  /** The refusal of a change that would leave the account with no owner who can sign in (the store decides it, one change at a time). */
  const lastOwner = () => new InvalidOptionError('role', 'a change that leaves the account another owner (make someone else owner first)', 'the last owner', 'The account needs an owner: make someone else owner first');

  const withoutSecret = <T extends User>({ passwordHash: _, ...user }: T & { passwordHash?: unknown }): User => user;

  return {
    async createUser(input) {
      const target = await account(input.account);
      const email = normaliseEmail(input.email);
      const role = checkRole(input.role);
      const password = input.password === undefined ? undefined : checkPassword(input.password, email);
      const now = clock.now();
      const user = {
        id: randomUUID(),
        accountId: target.id,
        email,
        displayName: cleanDisplayName(input.displayName),
        role,
        operator: input.operator ?? false,
        createdAt: now,
        passwordHash: password === undefined ? null : await hasher.hash(password),
      };
      if (!(await people.insertUser(user))) throw new AdminError('user_exists', `A user with the email ${email} exists already`);
      if (role === 'owner') await people.adoptKeys(target.id, user.id);
      await people.retireAccountLinks(target.id, ['account-setup'], now);
      await people.audit({ at: now, actor: input.actor, accountId: target.id, action: 'user.created', detail: { user: user.id, email, role, operator: user.operator } });
      const created = await people.findUserById(user.id);
      const link = password === undefined ? await issueLink('setup', target.id, user.id) : undefined;
      return { user: withoutSecret(created!), link };
    },

    async listUsers(name) {
      return people.listUsers((await account(name)).id);
    },

    async disableUser(email, actor) {
      const user = await userByEmail(email);
      const now = clock.now();
      const revoked = await people.disableUser(user.id, now);
      await people.retireLinks(user.id, ['setup', 'reset', 'invitation'], now);
      await people.audit({ at: now, actor, accountId: user.accountId, action: 'user.disabled', detail: { user: user.id, email: user.email } });
      await auditRevoked(actor, actor, user, revoked, now, 'disabled');
      return withoutSecret((await people.findUserById(user.id))!);
    },

    async resetUser(email, actor) {
      const user = await userByEmail(email);
      const now = clock.now();
      await people.retireLinks(user.id, ['setup', 'reset'], now);
      await people.audit({ at: now, actor, accountId: user.accountId, action: 'user.reset-link', detail: { user: user.id, email: user.email } });
      return issueLink('reset', user.accountId, user.id);
    },

    async accountSetupLinks() {
      const now = clock.now();
      const links = [];
      const accounts = await people.accountsAwaitingOwnerLink();
      for (const { id, name } of accounts) {
        await people.retireAccountLinks(id, ['account-setup'], now);
        links.push({ account: name, link: await issueLink('account-setup', id, null) });
      }
      return { links, handedOver: () => people.ownerLinkHandedOver(accounts.map((a) => a.id)) };
    },

    async viewLink(token) {
      const link = await usable(token);
      const user = link.userId === null ? undefined : await people.findUserById(link.userId);
      if (link.userId !== null && (!user || user.disabledAt !== null)) throw new LinkNotValidError();
      const accountName = await people.accountName(link.accountId);
      if (accountName === undefined) throw new LinkNotValidError();
      // An account-setup link is spent once the account has its first user, however that came.
      if (!user && (await people.countUsers(link.accountId)) > 0) throw new LinkNotValidError();
      return {
        purpose: link.purpose,
        accountName,
        email: user?.email,
        displayName: user?.displayName ?? '',
        expiresAt: link.expiresAt,
      };
    },

    async useLink(token, input) {
      const link = await usable(token);
      const now = clock.now();
      if (link.purpose === 'account-setup') {
        const email = normaliseEmail(input.email ?? '');
        const passwordHash = await hasher.hash(checkPassword(input.password, email));
        if (!(await people.useLink(link.id, now))) throw new LinkNotValidError();
        const user = { id: randomUUID(), accountId: link.accountId, email, displayName: cleanDisplayName(input.displayName), role: 'owner' as const, operator: false, createdAt: now, passwordHash };
        if ((await people.countUsers(link.accountId)) > 0) throw new LinkNotValidError();
        if (!(await people.insertUser(user))) throw new AdminError('user_exists', `A user with the email ${email} exists already`);
        await people.adoptKeys(link.accountId, user.id);
        await people.audit({ at: now, actor: user.id, accountId: link.accountId, action: 'user.created', detail: { user: user.id, email, role: 'owner', by: 'account-setup link' } });
        deps.onLinkUsed?.(link);
        return withoutSecret((await people.findUserById(user.id))!);
      }
      const user = link.userId === null ? undefined : await people.findUserById(link.userId);
      if (!user || user.disabledAt !== null) throw new LinkNotValidError();
      const passwordHash = await hasher.hash(checkPassword(input.password, user.email));
      // The link is spent before the password changes: two uses at once cannot both set one.
      if (!(await people.useLink(link.id, now))) throw new LinkNotValidError();
      await people.setPassword(user.id, passwordHash, now);
      if (input.displayName !== undefined && link.purpose !== 'reset') await people.setDisplayName(user.id, cleanDisplayName(input.displayName));
      await people.audit({ at: now, actor: user.id, accountId: user.accountId, action: link.purpose === 'reset' ? 'user.password-reset' : 'user.password-set', detail: { user: user.id } });
      deps.onLinkUsed?.(link);
      return withoutSecret((await people.findUserById(user.id))!);
    },

    async signIn(email, password) {
      let normalised: string | undefined;
      try {
        normalised = normaliseEmail(email);
      } catch {
        normalised = undefined;
      }
      const user = normalised === undefined ? undefined : await people.findUserByEmail(normalised);
      // One check whatever happens, so that the time says nothing: a decoy hash when there is no user or no password.
      const stored = user && user.disabledAt === null ? (user.passwordHash ?? undefined) : undefined;
      const matches = await hasher.verify(stored, password);
      if (!user || !matches || user.disabledAt !== null || stored === undefined) throw new InvalidCredentialsError();
      if (hasher.needsRehash(stored)) await people.setPassword(user.id, await hasher.hash(password), user.passwordChangedAt ?? clock.now());
      return withoutSecret(user);
    },

    async findUser(id) {
      const user = await people.findUserById(id);
      return user && withoutSecret(user);
    },

    async invite(by, email, role) {
      const normalised = normaliseEmail(email);
      const checkedRole = checkRole(role);
      const now = clock.now();
      const user = { id: randomUUID(), accountId: by.accountId, email: normalised, displayName: '', role: checkedRole, operator: false, createdAt: now, passwordHash: null };
      if (!(await people.insertUser(user))) throw new AdminError('user_exists', `${normalised} already has a user (an email belongs to one account)`);
      await people.audit({ at: now, actor: by.id, accountId: by.accountId, action: 'member.invited', detail: { user: user.id, email: normalised, role: checkedRole } });
      const link = await issueLink('invitation', by.accountId, user.id);
      return { user: withoutSecret((await people.findUserById(user.id))!), link };
    },

    async reinvite(by, userId) {
      const target = await member(by, userId);
      if (target.passwordHash !== null || target.disabledAt !== null) {
        throw new InvalidOptionError('user', 'someone invited who has not chosen a password yet', target.email, `${target.email} has chosen a password already: they sign in (or use “Forgot your password?”)`);
      }
      const now = clock.now();
      await people.retireLinks(target.id, ['invitation'], now);
      await people.audit({ at: now, actor: by.id, accountId: by.accountId, action: 'member.reinvited', detail: { user: target.id, email: target.email } });
      const link = await issueLink('invitation', by.accountId, target.id);
      return { user: withoutSecret(target), link };
    },

    async changeRole(by, userId, role) {
      const target = await member(by, userId);
      const checkedRole = checkRole(role);
      if ((await people.setRole(by.accountId, target.id, checkedRole)) === 'last owner') throw lastOwner();
      await people.audit({ at: clock.now(), actor: by.id, accountId: by.accountId, action: 'member.role-changed', detail: { user: target.id, email: target.email, role: checkedRole } });
      return withoutSecret((await people.findUserById(target.id))!);
    },

    async removeMember(by, userId) {
      const target = await member(by, userId);
      if (target.id === by.id) throw new InvalidOptionError('user', 'someone other than yourself (another owner can remove you)', target.email, 'You cannot remove yourself: another owner can');
      const now = clock.now();
      const revoked = await people.removeUser(by.accountId, target.id, now);
      if (revoked === 'last owner') throw lastOwner();
      await people.audit({ at: now, actor: by.id, accountId: by.accountId, action: 'member.removed', detail: { user: target.id, email: target.email } });
      await auditRevoked(by.id, by.email, target, revoked, now, 'removed');
      return withoutSecret(target);
    },

    async changePassword(user, current, next) {
      const stored = await people.findUserById(user.id);
      if (!stored || !(await hasher.verify(stored.passwordHash ?? undefined, current))) throw new InvalidCredentialsError('The current password is not right');
      const hash = await hasher.hash(checkPassword(next, stored.email));
      const now = clock.now();
      await people.setPassword(user.id, hash, now);
      await people.retireLinks(user.id, ['setup', 'reset'], now);
      await people.audit({ at: now, actor: user.id, accountId: user.accountId, action: 'user.password-changed', detail: { user: user.id } });
    },

    async setDisplayName(user, name) {
      await people.setDisplayName(user.id, cleanDisplayName(name));
      return withoutSecret((await people.findUserById(user.id))!);
    },
  };
}
