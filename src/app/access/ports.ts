/**
 * API access as people get it (docs/api-access.md): a request for a key for
 * one integration, an operator's decision, and the grant an approval makes.
 * The key itself is made only when its requester reveals it, in the same
 * transaction that records the reveal, and is shown in that answer alone.
 */
import type { KeyRecord, Plan, Scope } from '../ports.js';

export const REQUEST_STATES = ['pending', 'approved', 'denied', 'withdrawn'] as const;
export type RequestState = (typeof REQUEST_STATES)[number];

export interface AccessRequest {
  readonly id: string;
  readonly accountId: string;
  readonly accountName: string;
  readonly plan: Plan;
  readonly userId: string;
  readonly userEmail: string;
  /** The integration's name, unique among the account's pending requests. */
  readonly name: string;
  readonly purpose: string;
  readonly monthlyVolume: number;
  /** What the requester asked for. */
  readonly scopes: readonly Scope[];
  readonly contact: string;
  readonly state: RequestState;
  readonly createdAt: Date;
  readonly decidedAt: Date | null;
  /** Who decided (an operator's email, `cli`), or withdrew (the person's email). */
  readonly decidedBy: string | null;
  /** Why it was denied, shown to the requester. */
  readonly reason: string | null;
  /** An approval's grant: what the key may do, how many days it lasts (null: until revoked), and until when it may be revealed. */
  readonly grantedScopes: readonly Scope[] | null;
  readonly keyDays: number | null;
  readonly revealBy: Date | null;
  readonly revealedAt: Date | null;
  readonly keyId: string | null;
}

export interface NewAccessRequest {
  readonly id: string;
  readonly accountId: string;
  readonly userId: string;
  readonly name: string;
  readonly purpose: string;
  readonly monthlyVolume: number;
  readonly scopes: readonly Scope[];
  readonly contact: string;
  readonly createdAt: Date;
}

/** A decision on a pending request. */
export type Decision =
  | { readonly state: 'approved'; readonly at: Date; readonly by: string; readonly grantedScopes: readonly Scope[]; readonly keyDays: number | null; readonly revealBy: Date }
  | { readonly state: 'denied'; readonly at: Date; readonly by: string; readonly reason: string }
  | { readonly state: 'withdrawn'; readonly at: Date; readonly by: string };

/** A key as people see it after its issue: never the key, only what identifies it. */
export interface KeyInfo extends KeyRecord {
  readonly name: string | null;
  readonly userEmail: string | null;
  readonly accountName: string;
  readonly requestId: string | null;
  /** The key that replaced this one in a roll: this one ends at its `expiresAt`. */
  readonly replacedBy: string | null;
}

export interface NewKey extends KeyRecord {
  readonly digest: Uint8Array;
  readonly name: string | null;
  readonly requestId: string | null;
}

export type RevealOutcome = 'revealed' | 'unavailable' | 'too-many-keys';

export interface AccessStore {
  /** False when the account has a pending request of that name already. */
  insertRequest(request: NewAccessRequest): Promise<boolean>;
  findRequest(id: string): Promise<AccessRequest | undefined>;
  /** Newest first; pending requests first when `pendingFirst`. */
  listRequests(filter: { readonly accountId?: string; readonly userId?: string; readonly state?: RequestState; readonly pendingFirst?: boolean }, limit: number): Promise<AccessRequest[]>;
  /** Apply the decision if the request is still pending; false when it is not (another decision came first). */
  decide(id: string, decision: Decision): Promise<boolean>;
  /**
   * In one transaction: if the request is approved, not revealed, and
   * `now` is before its reveal-by time, and the account has fewer than
   * `maxActive` active keys (keys being rolled out not counted), record the
   * reveal and insert the key.
   */
  reveal(requestId: string, key: NewKey, now: Date, maxActive: number): Promise<RevealOutcome>;
  /** In one transaction: insert `next` and end `oldId` at `oldEndsAt` (replaced by `next`), if `oldId` is still active and not being rolled out; false otherwise. */
  roll(oldId: string, next: NewKey, oldEndsAt: Date, now: Date): Promise<boolean>;
  findKey(id: string): Promise<KeyInfo | undefined>;
  /** Newest first; every account's when `accountId` is undefined. */
  listKeys(accountId: string | undefined, limit: number): Promise<KeyInfo[]>;
}
