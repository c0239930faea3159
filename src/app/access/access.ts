/**
 * API access for people (docs/api-access.md), called by the dashboard, the
 * operator console and the CLI alike:
 *
 * - a signed-in owner or member of a Pro or Lifetime account requests a key
 *   for an integration; the requester (or an owner) may withdraw it while
 *   it is pending;
 * - an operator approves it (the scopes granted, an optional expiry) or
 *   denies it with a reason the requester sees. An approval is a grant, not
 *   a key: the key is made at the requester's first reveal, within 14 days,
 *   and shown in that answer only;
 * - a key is rolled (a new key shown once; the old one works for an overlap
 *   of up to 7 days) or revoked by the account's owner or the key's user,
 *   and revoked by an operator.
 *
 * Every decision, issue, roll and revocation is a line of the audit log
 * (who, when, what, from which address). No key is ever written anywhere
 * but in the answer that reveals it: the database holds its SHA-256.
 */
import { randomBytes } from 'node:crypto';
import { apiKeyDigest, generateApiKey, randomBase62, visiblePrefix } from '../../core/keys/api-key.js';
import {
  AccessRequestExistsError,
  AccessRequestNotFoundError,
  AccessRequestNotPendingError,
  AdminError,
  GrantNotAvailableError,
  InvalidOptionError,
  PlanNotAllowedError,
  RoleNotAllowedError,
} from '../../errors.js';
import { MAX_ACTIVE_KEYS } from '../admin.js';
import type { AuditEntry, PeopleStore, User } from '../people/ports.js';
import { API_PLANS, SCOPES, type Clock, type Plan, type Scope } from '../ports.js';
import type { AccessRequest, AccessStore, KeyInfo, NewKey, RequestState } from './ports.js';

/** Days an approved grant waits for its requester to reveal the key; after that it lapses. */
export const REVEAL_DAYS = 14;
/** The longest overlap of a rolled key with its successor. */
export const MAX_OVERLAP_DAYS = 7;
const DAY_MS = 86_400_000;

/** Who acts: a signed-in person (with their account's plan), or the command line. */
export type Actor =
  | { readonly kind: 'person'; readonly user: User; readonly plan: Plan; readonly address: string | null }
  | { readonly kind: 'cli' };

export interface RequestInput {
  readonly name: string;
  readonly purpose: string;
  /** As typed: a whole number of calls per month. */
  readonly monthlyVolume: string | number;
  readonly scopes: readonly string[];
  readonly contact: string;
}

export interface ApprovalInput {
  /** Default: what was requested. */
  readonly scopes?: readonly string[];
  /** Days the key lasts from its reveal; undefined or null: until revoked. */
  readonly expiresInDays?: number | null;
}

/** A key just made: shown this once. */
export interface RevealedKey {
  readonly key: string;
  readonly info: KeyInfo;
  /** A roll: the key it replaces, and when that one stops working. */
  readonly rolledFrom?: { readonly prefix: string; readonly endsAt: Date };
}

/** A grant as its requester sees it. */
export type GrantState = 'ready' | 'revealed' | 'lapsed';

export function grantState(request: AccessRequest, now: Date): GrantState | null {
  if (request.state !== 'approved') return null;
  if (request.revealedAt !== null) return 'revealed';
  return request.revealBy !== null && request.revealBy > now ? 'ready' : 'lapsed';
}

/** Active: not revoked, not past its end. A key being rolled out is active until its end, but does not count toward the limit. */
export const keyActive = (key: Pick<KeyInfo, 'revokedAt' | 'expiresAt'>, now: Date) => key.revokedAt === null && (key.expiresAt === null || key.expiresAt > now);

export interface Notifier {
  /** Tell the requester of a decision (no key in it). Resolves false when no mail is configured or it could not be sent. */
  decided(request: AccessRequest): Promise<boolean>;
}

export interface AccessDeps {
  readonly accessStore: AccessStore;
  readonly people: Pick<PeopleStore, 'audit' | 'auditLog' | 'serviceAuditLog' | 'findUserById'>;
  readonly revokeKey: (id: string, now: Date) => Promise<unknown>;
  readonly notifier: Notifier;
  readonly clock: Clock;
}

const text = (value: unknown, name: string, max: number, what: string): string => {
  const trimmed = typeof value === 'string' ? value.trim() : '';
  if (trimmed.length === 0 || trimmed.length > max) {
    const length = trimmed.length === 0 ? 'it is empty' : `it has ${trimmed.length}`;
    throw new InvalidOptionError(name, `${what} (1 to ${max} characters)`, value, `Give ${what}: 1 to ${max} characters (${length})`);
  }
  return trimmed;
};

export function checkScopes(scopes: readonly string[], name = 'scopes'): Scope[] {
  const unique = [...new Set(scopes.map((s) => s.trim()).filter(Boolean))];
  if (unique.length === 0 || unique.some((s) => !(SCOPES as readonly string[]).includes(s))) {
    const unknown = unique.find((s) => !(SCOPES as readonly string[]).includes(s));
    const why = unknown === undefined ? 'Choose what the key may do' : `"${unknown}" is not something a key may do`;
    throw new InvalidOptionError(name, `one or both of ${SCOPES.join(', ')}`, scopes.join(','), `${why}: ${SCOPES.join(', ')}, or both`);
  }
  return SCOPES.filter((s) => unique.includes(s));
}

function checkVolume(value: string | number): number {
  const n = typeof value === 'number' ? value : /^\s*\d{1,10}\s*$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isInteger(n) || n < 0 || n > 1_000_000_000) throw new InvalidOptionError('monthlyVolume', 'a whole number of calls per month, from 0 to 1,000,000,000', value, 'Give the calls expected each month as a whole number, from 0 to 1,000,000,000');
  return n;
}

function checkDays(value: number | null | undefined, name: string, min: number, max: number): number | null {
  if (value === undefined || value === null) return null;
  if (!Number.isInteger(value) || value < min || value > max) throw new InvalidOptionError(name, `a whole number of days from ${min} to ${max}`, value, `Choose a whole number of days from ${min} to ${max}`);
  return value;
}

function operatorOnly(actor: Actor): void {
  if (actor.kind === 'person' && !actor.user.operator) throw new RoleNotAllowedError("Only the service's operators decide requests for API access");
}

const by = (actor: Actor) => (actor.kind === 'cli' ? 'cli' : actor.user.email);
const auditActor = (actor: Actor) => (actor.kind === 'cli' ? 'cli' : actor.user.id);
const address = (actor: Actor) => (actor.kind === 'cli' ? null : actor.address);

export function createAccess(deps: AccessDeps) {
  const { accessStore, clock } = deps;

  async function audit(actor: Actor, accountId: string, action: string, detail: Record<string, unknown>, at = clock.now()): Promise<void> {
    const entry: AuditEntry = { at, actor: auditActor(actor), accountId, action, detail: { by: by(actor), ...detail }, address: address(actor) };
    await deps.people.audit(entry);
  }

  /** A request of the person's account (another account's reads as unknown), or, where `operatorMay`, of any account for an operator. */
  async function requestOf(actor: Actor, id: string, operatorMay: boolean): Promise<AccessRequest> {
    const request = await accessStore.findRequest(id);
    const mayAny = actor.kind === 'cli' || (operatorMay && actor.user.operator);
    if (!request || (!mayAny && request.accountId !== actor.user.accountId)) throw new AccessRequestNotFoundError();
    return request;
  }

  /**
   * A key of the person's account that they may act on: an owner any, a
   * member their own (another person's key, which a member never sees, reads
   * as unknown, as another account's does); an operator (from the console)
   * any key of any account.
   */
  async function keyOf(actor: Actor, id: string, operatorMay: boolean): Promise<KeyInfo> {
    const key = await accessStore.findKey(id);
    const notFound = new AdminError('key_not_found', 'There is no such key in your account');
    if (!key) throw notFound;
    if (actor.kind === 'cli') return key;
    const { user } = actor;
    if (operatorMay && user.operator) return key;
    if (key.accountId !== user.accountId) throw notFound;
    if (user.role !== 'owner' && key.userId !== user.id) throw notFound;
    return key;
  }

  /** The refusal of a decision that lost to another: in the state the request is in now (it was pending when read). */
  async function notPending(id: string): Promise<AccessRequestNotPendingError> {
    return new AccessRequestNotPendingError((await accessStore.findRequest(id))?.state ?? 'gone');
  }

  function newKey(template: { accountId: string; userId: string | null; scopes: readonly Scope[]; name: string | null; requestId: string | null }, days: number | null, now: Date): { key: string; record: NewKey } {
    const key = generateApiKey(randomBytes);
    const record: NewKey = {
      id: `key_${randomBase62(12, randomBytes)}`,
      ...template,
      prefix: visiblePrefix(key),
      createdAt: now,
      expiresAt: days === null ? null : new Date(now.getTime() + days * DAY_MS),
      revokedAt: null,
      lastUsedAt: null,
      digest: apiKeyDigest(key),
    };
    return { key, record };
  }

  async function notify(request: AccessRequest): Promise<boolean> {
    try {
      return await deps.notifier.decided(request);
    } catch {
      return false;
    }
  }

  return {
    /** A signed-in person asks for a key for an integration. Free accounts are refused, and nothing is stored. */
    async request(actor: Extract<Actor, { kind: 'person' }>, input: RequestInput): Promise<AccessRequest> {
      if (!API_PLANS.includes(actor.plan)) throw new PlanNotAllowedError(actor.plan);
      const now = clock.now();
      const fields = {
        name: text(input.name, 'name', 100, "the integration's name"),
        purpose: text(input.purpose, 'purpose', 2000, 'what the integration does with the API'),
        monthlyVolume: checkVolume(input.monthlyVolume),
        scopes: checkScopes(input.scopes),
        contact: text(input.contact, 'contact', 254, 'how the team can reach you'),
      };
      const id = `req_${randomBase62(12, randomBytes)}`;
      if (!(await accessStore.insertRequest({ id, accountId: actor.user.accountId, userId: actor.user.id, createdAt: now, ...fields }))) {
        throw new AccessRequestExistsError(fields.name);
      }
      await audit(actor, actor.user.accountId, 'access.requested', { request: id, name: fields.name, scopes: fields.scopes, monthlyVolume: fields.monthlyVolume }, now);
      return (await accessStore.findRequest(id))!;
    },

    /** The requester, or an owner of the account, withdraws a pending request. */
    async withdraw(actor: Extract<Actor, { kind: 'person' }>, id: string): Promise<AccessRequest> {
      const request = await requestOf(actor, id, false);
      if (request.userId !== actor.user.id && actor.user.role !== 'owner') throw new AccessRequestNotFoundError();
      const now = clock.now();
      if (!(await accessStore.decide(id, { state: 'withdrawn', at: now, by: by(actor) }))) throw await notPending(id);
      await audit(actor, request.accountId, 'access.withdrawn', { request: id, name: request.name }, now);
      return (await accessStore.findRequest(id))!;
    },

    /** What a person sees: an owner every request of the account, a member their own. */
    listFor(user: User): Promise<AccessRequest[]> {
      return accessStore.listRequests(user.role === 'owner' ? { accountId: user.accountId } : { accountId: user.accountId, userId: user.id }, 200);
    },

    /** Operators: every request (pending first, oldest pending first), or those in one state. */
    listAll(state?: RequestState): Promise<AccessRequest[]> {
      return accessStore.listRequests(state === undefined ? { pendingFirst: true } : { state, pendingFirst: true }, 500);
    },

    /** An account's earlier requests (the console shows them beside a pending one). */
    history(accountId: string): Promise<AccessRequest[]> {
      return accessStore.listRequests({ accountId }, 50);
    },

    async approve(actor: Actor, id: string, input: ApprovalInput = {}): Promise<{ request: AccessRequest; mailed: boolean }> {
      operatorOnly(actor);
      const request = await requestOf(actor, id, true);
      const grantedScopes = input.scopes === undefined ? request.scopes : checkScopes(input.scopes);
      const keyDays = checkDays(input.expiresInDays, 'expiresInDays', 1, 3650);
      const now = clock.now();
      const revealBy = new Date(now.getTime() + REVEAL_DAYS * DAY_MS);
      if (!(await accessStore.decide(id, { state: 'approved', at: now, by: by(actor), grantedScopes, keyDays, revealBy }))) throw await notPending(id);
      await audit(actor, request.accountId, 'access.approved', { request: id, name: request.name, requester: request.userEmail, scopes: grantedScopes, keyDays, revealBy: revealBy.toISOString() }, now);
      const decided = (await accessStore.findRequest(id))!;
      return { request: decided, mailed: await notify(decided) };
    },

    async deny(actor: Actor, id: string, reason: string): Promise<{ request: AccessRequest; mailed: boolean }> {
      operatorOnly(actor);
      const request = await requestOf(actor, id, true);
      const why = text(reason, 'reason', 1000, 'the reason, which the requester will read');
      const now = clock.now();
      if (!(await accessStore.decide(id, { state: 'denied', at: now, by: by(actor), reason: why }))) throw await notPending(id);
      await audit(actor, request.accountId, 'access.denied', { request: id, name: request.name, requester: request.userEmail, reason: why }, now);
      const decided = (await accessStore.findRequest(id))!;
      return { request: decided, mailed: await notify(decided) };
    },

    /** The requester reveals the key of an approved grant: made now, shown in this answer only. */
    async reveal(actor: Extract<Actor, { kind: 'person' }>, id: string): Promise<RevealedKey> {
      const request = await requestOf(actor, id, false);
      // An owner, who sees every request of the account, is told why; a member, who sees only their own, finds no such request.
      if (request.userId !== actor.user.id) throw actor.user.role === 'owner' ? new RoleNotAllowedError('Only the person who requested this key may reveal it') : new AccessRequestNotFoundError();
      const now = clock.now();
      const state = grantState(request, now);
      if (state !== 'ready') throw new GrantNotAvailableError(state);
      const { key, record } = newKey({ accountId: request.accountId, userId: request.userId, scopes: request.grantedScopes!, name: request.name, requestId: request.id }, request.keyDays, now);
      const outcome = await accessStore.reveal(id, record, now, MAX_ACTIVE_KEYS);
      if (outcome === 'too-many-keys') throw new AdminError('too_many_keys', `The account already has ${MAX_ACTIVE_KEYS} active keys: revoke one, then reveal this one`);
      if (outcome === 'unavailable') throw new GrantNotAvailableError(grantState((await accessStore.findRequest(id))!, clock.now()));
      await audit(actor, request.accountId, 'key.issued', { key: record.id, prefix: record.prefix, request: id, name: request.name, scopes: record.scopes }, now);
      return { key, info: (await accessStore.findKey(record.id))! };
    },

    /** A new key in place of an active one, shown once; the old one keeps working for `overlapDays` (0 to 7), then ends. */
    async roll(actor: Extract<Actor, { kind: 'person' }>, keyId: string, overlapDays: number): Promise<RevealedKey> {
      const overlap = checkDays(overlapDays, 'overlapDays', 0, MAX_OVERLAP_DAYS) ?? 0;
      const old = await keyOf(actor, keyId, false);
      // The new key is shown to whoever rolls: only the key's own person (nobody but them sees a key of theirs); an owner revokes it instead.
      if (old.userId !== null && old.userId !== actor.user.id) throw new RoleNotAllowedError("Only the key's own person may roll it (the new key is shown to whoever rolls); an owner may revoke it");
      const now = clock.now();
      if (!keyActive(old, now) || old.replacedBy !== null) throw new AdminError('key_not_found', 'This key is not active (revoked, expired, or already rolled): there is nothing to roll');
      const { key, record: fresh } = newKey({ accountId: old.accountId, userId: old.userId, scopes: old.scopes, name: old.name, requestId: old.requestId }, null, now);
      // The new key ends when the old one was to end: rolling changes the secret, not how long the access granted lasts.
      const record = { ...fresh, expiresAt: old.expiresAt };
      const endsAt = new Date(now.getTime() + overlap * DAY_MS);
      if (!(await accessStore.roll(old.id, record, endsAt, now))) throw new AdminError('key_not_found', 'This key is not active any more: there is nothing to roll');
      await audit(actor, old.accountId, 'key.rolled', { key: old.id, prefix: old.prefix, newKey: record.id, newPrefix: record.prefix, overlapDays: overlap, oldEndsAt: endsAt.toISOString() }, now);
      return { key, info: (await accessStore.findKey(record.id))!, rolledFrom: { prefix: old.prefix, endsAt: old.expiresAt !== null && old.expiresAt < endsAt ? old.expiresAt : endsAt } };
    },

    /** Revoke at once: the account's owner or the key's user, or an operator. */
    async revoke(actor: Actor, keyId: string): Promise<KeyInfo> {
      const key = await keyOf(actor, keyId, true);
      const now = clock.now();
      if (!(await deps.revokeKey(key.id, now))) throw new AdminError('key_not_found', 'This key is revoked already');
      await audit(actor, key.accountId, 'key.revoked', { key: key.id, prefix: key.prefix, name: key.name }, now);
      return (await accessStore.findKey(key.id))!;
    },

    /** The keys a person sees: an owner every key of the account, a member their own. */
    async keysFor(user: User): Promise<KeyInfo[]> {
      const keys = await accessStore.listKeys(user.accountId, 500);
      return user.role === 'owner' ? keys : keys.filter((k) => k.userId === user.id);
    },

    allKeys: (): Promise<KeyInfo[]> => accessStore.listKeys(undefined, 1000),

    /** One key by its id, of any account (an operator's confirmation names it; acting on it goes through revoke). */
    findKey: (id: string): Promise<KeyInfo | undefined> => accessStore.findKey(id),

    /** The account's access lines of the audit log (owners), or the whole service's (operators). */
    async auditFor(accountId: string | undefined): Promise<AuditEntry[]> {
      if (accountId === undefined) return deps.people.serviceAuditLog(['access.', 'key.'], 200);
      return (await deps.people.auditLog(accountId, 500)).filter((e) => e.action.startsWith('access.') || e.action.startsWith('key.')).slice(0, 200);
    },
  };
}

export type Access = ReturnType<typeof createAccess>;
