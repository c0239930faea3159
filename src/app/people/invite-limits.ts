/**
 * A brake on invitations: at most INVITES_PER_HOUR an account in any hour,
 * successful or refused. An invitation of an email that has a user in
 * another account is refused saying so (the owner needs to know why nobody
 * was invited), so without a brake an owner, or a visitor who opened a Free
 * account, could test any number of addresses for a user, and send
 * invitation mails to as many. The times of an account's invitations of the
 * last hour are kept in the database (BrakeStore): invitations sent at once,
 * or through several workers or instances, are counted one after the other.
 */
import { TooManyInvitationsError } from '../../errors.js';
import type { BrakeStore } from './ports.js';

export const INVITES_PER_HOUR = 20;
const WINDOW_MS = 3_600_000;

export interface InviteLimits {
  /** Count one invitation of the account, or throw TooManyInvitationsError (429) when its hour is used up. */
  admit(accountId: string): Promise<void>;
}

/** The times (ms) of the last hour's invitations, oldest first, with one at `now` if the hour allows it; or the seconds to wait. */
export function decideInvitation(times: readonly number[], now: number): { wait: number } | { times: number[] } {
  const recent = times.filter((at) => at > now - WINDOW_MS);
  if (recent.length >= INVITES_PER_HOUR) return { wait: Math.max(1, Math.ceil((recent[0]! + WINDOW_MS - now) / 1000)) };
  return { times: [...recent, now] };
}

export function createInviteLimits(store: BrakeStore, clock: () => Date): InviteLimits {
  return {
    async admit(accountId) {
      const decided = await store.hold<number[], ReturnType<typeof decideInvitation>>([`invitations ${accountId}`], ([times]) => {
        // The time once the brake is held, so that the times kept stay in order.
        const now = clock().getTime();
        const answer = decideInvitation(times ?? [], now);
        return 'wait' in answer ? { answer } : { answer, keep: [{ state: answer.times, forgetAt: new Date(now + WINDOW_MS) }] };
      });
      if ('wait' in decided) throw new TooManyInvitationsError(INVITES_PER_HOUR, decided.wait);
    },
  };
}
