/**
 * A visitor's own Free account (DESIGN §6 "Getting an account", with
 * `OPTMARK_SIGNUP=open`): they give an email, and a one-time link mailed to
 * it (24 hours) lets them choose the account's name and their password; the
 * account is then made on the Free plan with them as its owner, and they are
 * signed in. An email that already has a user is mailed a note saying so
 * instead, and the page answers the same either way, so the form tells
 * nobody who has an account. Links are stored as their SHA-256 only; a newer
 * link for an email retires the older ones.
 */
import { randomUUID } from 'node:crypto';
import { LinkNotValidError } from '../../errors.js';
import type { Admin } from '../admin.js';
import type { Clock } from '../ports.js';
import type { PeopleStore, User } from './ports.js';
import { isTokenShaped, newToken, tokenDigest } from './secret-token.js';
import { checkPassword, LINK_HOURS, normaliseEmail, type People } from './users.js';

export const SIGNUP_PATH = '/sign-up/confirm';

export interface Signup {
  readonly id: string;
  readonly email: string;
  readonly createdAt: Date;
  readonly expiresAt: Date;
  readonly usedAt: Date | null;
}

export interface SignupStore {
  /** Insert a sign-up; older unused ones of the same email stop working. */
  insert(signup: Signup & { readonly digest: Uint8Array }): Promise<void>;
  find(digest: Uint8Array): Promise<Signup | undefined>;
  /** Spend it: false when it was used already or has expired. */
  use(id: string, now: Date): Promise<boolean>;
  /** Remove sign-ups that ended (used or expired) before `before`. */
  sweep(before: Date): Promise<void>;
}

/** What the visitor is mailed: a link to go on, or a note that the email has an account already. */
export type SignupMail =
  | { readonly kind: 'link'; readonly email: string; readonly url: string; readonly expiresAt: Date }
  | { readonly kind: 'known'; readonly email: string; readonly signInUrl: string };

export interface SignupInput {
  readonly accountName: string;
  readonly password: string;
  readonly displayName?: string;
}

export interface SignUps {
  /** The visitor's email: what to mail them (InvalidOption for an address that is not one). */
  request(email: string): Promise<SignupMail>;
  /** The sign-up behind a link, while it can be used (LinkNotValid otherwise): its email. */
  view(token: string): Promise<{ readonly email: string; readonly expiresAt: Date }>;
  /** Make the Free account and its owner; the link is spent. */
  complete(token: string, input: SignupInput): Promise<User>;
}

export function createSignUps(deps: {
  readonly store: SignupStore;
  readonly peopleStore: Pick<PeopleStore, 'findUserByEmail'>;
  readonly people: People;
  readonly admin: Admin;
  readonly clock: Clock;
  readonly baseUrl: () => string;
}): SignUps {
  const { store, clock } = deps;

  async function usable(token: string): Promise<Signup> {
    if (!isTokenShaped(token)) throw new LinkNotValidError();
    const signup = await store.find(tokenDigest(token));
    if (!signup || signup.usedAt !== null || signup.expiresAt <= clock.now()) throw new LinkNotValidError();
    return signup;
  }

  return {
    async request(typed) {
      const email = normaliseEmail(typed);
      if (await deps.peopleStore.findUserByEmail(email)) return { kind: 'known', email, signInUrl: `${deps.baseUrl()}/sign-in` };
      const token = newToken();
      const now = clock.now();
      const signup: Signup = { id: `sgn_${randomUUID()}`, email, createdAt: now, expiresAt: new Date(now.getTime() + LINK_HOURS * 3_600_000), usedAt: null };
      await store.insert({ ...signup, digest: tokenDigest(token) });
      return { kind: 'link', email, url: `${deps.baseUrl()}${SIGNUP_PATH}?token=${token}`, expiresAt: signup.expiresAt };
    },

    async view(token) {
      const { email, expiresAt } = await usable(token);
      return { email, expiresAt };
    },

    async complete(token, input) {
      const signup = await usable(token);
      checkPassword(input.password, signup.email);
      // The account first (its name may be taken: the person chooses another, the link still good), then the
      // link spent, then the owner; the account goes again if either of those fails.
      const actor = { id: 'sign-up', email: signup.email };
      const account = await deps.admin.createAccount(input.accountName.trim(), 'free', actor);
      try {
        if (!(await store.use(signup.id, clock.now()))) throw new LinkNotValidError();
        const { user } = await deps.people.createUser({
          account: account.name,
          email: signup.email,
          role: 'owner',
          password: input.password,
          ...(input.displayName === undefined ? {} : { displayName: input.displayName }),
          actor: 'sign-up',
        });
        return user;
      } catch (error) {
        await deps.admin.deleteAccount(account.name, actor).catch(() => {});
        throw error;
      }
    },
  };
}
