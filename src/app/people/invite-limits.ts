/**
 * A brake on invitations: at most INVITES_PER_HOUR an account, successful or
 * refused. An invitation of an email that has a user in another account is
 * refused saying so (the owner needs to know why nobody was invited), so
 * without a brake an owner, or a visitor who opened a Free account, could
 * test any number of addresses for a user, and send invitation mails to as
 * many. State lives in this process's memory, like the sign-in brake
 * (sign-in-limits.ts): several servers each keep their own.
 */
import { TooManyInvitationsError } from '../../errors.js';

export const INVITES_PER_HOUR = 20;
const WINDOW_MS = 3_600_000;
const MAX_ACCOUNTS = 10_000;

export interface InviteLimits {
  /** Count one invitation of the account, or throw TooManyInvitationsError (429) when its hour is used up. */
  admit(accountId: string): void;
}

export function createInviteLimits(clock: () => Date): InviteLimits {
  /** Per account, the times (ms) of its invitations in the last hour, oldest first. */
  const recent = new Map<string, number[]>();
  return {
    admit(accountId) {
      const now = clock().getTime();
      const times = (recent.get(accountId) ?? []).filter((at) => at > now - WINDOW_MS);
      if (times.length >= INVITES_PER_HOUR) {
        recent.set(accountId, times);
        throw new TooManyInvitationsError(INVITES_PER_HOUR, Math.max(1, Math.ceil((times[0]! + WINDOW_MS - now) / 1000)));
      }
      times.push(now);
      recent.delete(accountId);
      recent.set(accountId, times);
      // The account least recently inviting goes first when too many are kept.
      if (recent.size > MAX_ACCOUNTS) recent.delete(recent.keys().next().value!);
    },
  };
}
