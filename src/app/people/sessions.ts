/**
 * Dashboard sessions, kept in the database (both back ends), so that they
 * survive a restart and work across several servers. A session is a random
 * 256-bit token in a cookie, stored as its SHA-256; it belongs to a user and
 * ends on sign-out, after 8 idle hours, 7 days after sign-in whatever the
 * use, when the user's password changes (their other sessions) and when the
 * user is disabled. Each user keeps at most 10 sessions and each account
 * 200 (the oldest end first): never a table-wide bound that one account's
 * sign-ins could use to push everyone else out.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AccountDetails, Clock, Store } from '../ports.js';
import type { PeopleStore, SessionRecord, User } from './ports.js';
import { isTokenShaped, newToken, tokenDigest } from './secret-token.js';

export const SESSION_IDLE_HOURS = 8;
export const SESSION_DAYS = 7;
export const MAX_SESSIONS_PER_USER = 10;
export const MAX_SESSIONS_PER_ACCOUNT = 200;
/** last_seen_at is written at most this often per session. */
const TOUCH_INTERVAL_MS = 60_000;

/** A live session, with the form token its pages carry. */
export interface LiveSession extends SessionRecord {
  /** Sent back by every form and page script of the session: a page of another site cannot know it. Derived from the session token, never stored. */
  readonly formToken: string;
}

/**
 * What a dashboard form did, said once by the page its browser is sent to
 * (Post/Redirect/Get: the form's answer is a redirect, so reloading that
 * page does not send the form again). Kept with the session, so it works
 * across several servers and never travels in an address or a cookie.
 */
export interface Notice {
  /** The page that says it (a path of this site). */
  readonly path: string;
  /** The form of that page it belongs to, where a page has several. */
  readonly form?: string;
  readonly message: string;
}

/** A live session with the user and the account behind it. */
export interface SignedIn {
  readonly session: LiveSession;
  readonly user: User;
  readonly account: AccountDetails;
}

export interface Sessions {
  /** A new session for the user; the one `previousToken` names (this browser's) ends. Returns the token for the cookie. */
  open(user: User, previousToken?: string): Promise<{ token: string; session: LiveSession }>;
  /** The live session a token names, with its user and account; undefined when there is none (and a dead one is removed). */
  find(token: string | undefined): Promise<SignedIn | undefined>;
  close(token: string | undefined): Promise<void>;
  /** End every session of the user but `exceptId`'s (a password change). */
  endOthers(userId: string, exceptId?: string): Promise<void>;
  /** Whether a form token is the session's own, compared in constant time. */
  formTokenMatches(session: LiveSession, candidate: string | undefined): boolean;
  /** Leave a notice for the session's next load of `notice.path` (one at a time: a newer one replaces it). */
  leaveNotice(session: LiveSession, notice: Notice): Promise<void>;
  /** The notice the session holds for `path`, taken (the page shows it once); undefined when it holds none for that page. */
  takeNotice(session: LiveSession, path: string): Promise<Notice | undefined>;
  /** Remove ended sessions; how many. */
  sweep(): Promise<number>;
}

/** The form token of a session: a one-way function of its token, unlike the digest stored (so neither reveals the other). */
const formTokenOf = (token: string) => createHash('sha256').update('optmark form token\n').update(token).digest('base64url');

export function createSessions(deps: { people: PeopleStore; store: Pick<Store, 'findAccountById'>; clock: Clock }): Sessions {
  const { people, store, clock } = deps;
  const idleMs = SESSION_IDLE_HOURS * 3_600_000;

  async function live(token: string | undefined): Promise<SessionRecord | undefined> {
    if (token === undefined || !isTokenShaped(token)) return undefined;
    return people.findSession(tokenDigest(token));
  }

  return {
    async open(user, previousToken) {
      const previous = await live(previousToken);
      if (previous) await people.deleteSession(previous.id);
      const now = clock.now();
      const token = newToken();
      const session: SessionRecord = {
        id: `ses_${randomBytes(12).toString('base64url')}`,
        userId: user.id,
        accountId: user.accountId,
        createdAt: now,
        lastSeenAt: now,
        expiresAt: new Date(now.getTime() + SESSION_DAYS * 86_400_000),
      };
      await people.insertSession({ ...session, tokenDigest: tokenDigest(token) });
      await people.trimSessions(user.id, user.accountId, MAX_SESSIONS_PER_USER, MAX_SESSIONS_PER_ACCOUNT);
      return { token, session: { ...session, formToken: formTokenOf(token) } };
    },

    async find(token) {
      const session = await live(token);
      if (!session) return undefined;
      const now = clock.now();
      if (session.expiresAt <= now || now.getTime() - session.lastSeenAt.getTime() > idleMs) {
        await people.deleteSession(session.id);
        return undefined;
      }
      const [user, account] = await Promise.all([people.findUserById(session.userId), store.findAccountById(session.accountId)]);
      if (!user || user.disabledAt !== null || !account || user.accountId !== account.id) {
        await people.deleteSession(session.id);
        return undefined;
      }
      if (now.getTime() - session.lastSeenAt.getTime() >= TOUCH_INTERVAL_MS) await people.touchSession(session.id, now);
      const { passwordHash: _, ...withoutSecret } = user;
      return { session: { ...session, formToken: formTokenOf(token!) }, user: withoutSecret, account };
    },

    async close(token) {
      const session = await live(token);
      if (session) await people.deleteSession(session.id);
    },

    endOthers: (userId, exceptId) => people.deleteUserSessions(userId, exceptId),

    formTokenMatches(session, candidate) {
      if (typeof candidate !== 'string') return false;
      const a = Buffer.from(session.formToken);
      const b = Buffer.from(candidate);
      return a.length === b.length && timingSafeEqual(a, b);
    },

    leaveNotice: (session, notice) => people.setSessionNotice(session.id, JSON.stringify(notice)),

    async takeNotice(session, path) {
      if (!session.notice) return undefined;
      const notice = parseNotice(session.notice);
      if (notice?.path !== path) return undefined;
      await people.setSessionNotice(session.id, null);
      return notice;
    },

    sweep() {
      const now = clock.now();
      return people.deleteStaleSessions(now, new Date(now.getTime() - idleMs));
    },
  };
}

/** A stored notice, or undefined when it is not one (a value this version did not write). */
function parseNotice(stored: string): Notice | undefined {
  try {
    const value = JSON.parse(stored) as Partial<Notice>;
    if (typeof value.path !== 'string' || typeof value.message !== 'string' || (value.form !== undefined && typeof value.form !== 'string')) return undefined;
    return { path: value.path, message: value.message, ...(value.form !== undefined ? { form: value.form } : {}) };
  } catch {
    return undefined;
  }
}
