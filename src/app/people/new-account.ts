/**
 * A new account with its first owner, as one action (DESIGN §6 "Getting an
 * account"): an operator opens one from the console, and its owner gets a
 * one-time set-up link (the command line does the same in two commands:
 * `accounts create`, then `users create --role owner`). The owner's address is checked
 * before the account is made, and the account goes again should the owner
 * still not be made (another made that address at the same moment), so
 * neither is left without the other. Both are lines of the audit log.
 */
import type { Account } from '../ports.js';
import type { Admin, AdminActor } from '../admin.js';
import { AdminError } from '../../errors.js';
import type { PeopleStore, User } from './ports.js';
import { normaliseEmail, type IssuedLink, type People } from './users.js';

export interface NewAccount {
  readonly account: Account;
  readonly owner: User;
  /** The owner's one-time set-up link. */
  readonly link: IssuedLink;
}

export async function openAccount(
  deps: { readonly admin: Admin; readonly people: People; readonly peopleStore: Pick<PeopleStore, 'findUserByEmail'> },
  input: { readonly name: string; readonly plan: string; readonly ownerEmail: string; readonly actor: Extract<AdminActor, object> },
): Promise<NewAccount> {
  const email = normaliseEmail(input.ownerEmail);
  if (await deps.peopleStore.findUserByEmail(email)) throw new AdminError('user_exists', `A user with the email ${email} exists already: a person belongs to one account`);
  const account = await deps.admin.createAccount(input.name, input.plan, input.actor);
  try {
    const { user, link } = await deps.people.createUser({ account: account.name, email, role: 'owner', actor: input.actor.id });
    return { account, owner: user, link: link! };
  } catch (error) {
    await deps.admin.deleteAccount(account.name, input.actor).catch(() => {});
    throw error;
  }
}
