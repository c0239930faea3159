/**
 * Dashboard sessions: a person signs in with one of the account's API keys
 * and gets a random session token (kept in a cookie) instead of pasting the
 * key into every upload. A session stands for its key: each use goes through
 * the same authentication and quota as an API call with that key, so revoking
 * or expiring the key ends the session at once, and what the dashboard does
 * counts exactly like API calls.
 *
 * Sessions live in this process's memory, found by the SHA-256 of their
 * token. A restart signs everyone out; servers behind one address need
 * sticky routing (docs/dashboard.md). The key itself is never kept, only its
 * digest, as in the database.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { PlanNotAllowedError } from '../errors.js';
import { keyCredential, type ApiAccess, type Credential } from './api-access.js';
import { API_PLANS, type Clock, type Principal } from './ports.js';

/** A session ends this long after sign-in, used or not. */
export const SESSION_HOURS = 12;
/** Sessions held at once; past it the oldest is dropped (its owner signs in again). */
export const MAX_SESSIONS = 10_000;

export interface DashboardSession {
  readonly credential: Credential;
  /** Sent back with every form of the session: a page from another site cannot know it. */
  readonly formToken: string;
  readonly expiresAt: Date;
}

export interface SignedIn {
  /** The session token for the cookie; shown once, kept only as a digest. */
  readonly token: string;
  readonly session: DashboardSession;
  readonly principal: Principal;
}

export interface DashboardSessions {
  /**
   * Check the key as an API call would and open a session for it.
   * @throws InvalidApiKeyError, PlanNotAllowedError, ServiceUnavailableError
   */
  signIn(key: string): Promise<SignedIn>;
  /** The live session a token names, or undefined (unknown, signed out, expired). */
  find(token: string | undefined): DashboardSession | undefined;
  /** Whether a form token is the session's own, compared in constant time. */
  formTokenMatches(session: DashboardSession, candidate: string | undefined): boolean;
  signOut(token: string | undefined): void;
  /** Sessions held (live or not yet swept). */
  readonly size: number;
}

const digestOf = (token: string) => createHash('sha256').update(token).digest('base64url');
const newToken = () => randomBytes(32).toString('base64url');

export function createDashboardSessions(deps: { access: ApiAccess; clock: Clock; maxSessions?: number }): DashboardSessions {
  const { access, clock } = deps;
  const max = deps.maxSessions ?? MAX_SESSIONS;
  // Insertion order is sign-in order: the first entry is the oldest.
  const sessions = new Map<string, DashboardSession>();

  const dropExpired = () => {
    const now = clock.now().getTime();
    for (const [id, session] of sessions) if (session.expiresAt.getTime() <= now) sessions.delete(id);
  };

  return {
    async signIn(key) {
      const credential = keyCredential(key.trim());
      const principal = await access.authenticate(credential);
      // The dashboard is the API's other face: the plans that may call the API may use it.
      if (!API_PLANS.includes(principal.plan)) throw new PlanNotAllowedError(principal.plan);
      if (sessions.size >= max) dropExpired();
      while (sessions.size >= max) sessions.delete(sessions.keys().next().value!);
      const token = newToken();
      const session: DashboardSession = { credential, formToken: newToken(), expiresAt: new Date(clock.now().getTime() + SESSION_HOURS * 3_600_000) };
      sessions.set(digestOf(token), session);
      return { token, session, principal };
    },

    find(token) {
      if (!token) return undefined;
      const id = digestOf(token);
      const session = sessions.get(id);
      if (!session) return undefined;
      if (session.expiresAt.getTime() <= clock.now().getTime()) {
        sessions.delete(id);
        return undefined;
      }
      return session;
    },

    formTokenMatches(session, candidate) {
      if (candidate === undefined) return false;
      const expected = Buffer.from(session.formToken);
      const given = Buffer.from(candidate);
      return given.length === expected.length && timingSafeEqual(given, expected);
    },

    signOut(token) {
      if (token) sessions.delete(digestOf(token));
    },

    get size() {
      return sessions.size;
    },
  };
}
