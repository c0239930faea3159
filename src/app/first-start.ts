/**
 * What a first start hands over, once the server listens: on an empty
 * database, the `local` account (Lifetime) with its owner `owner@localhost`,
 * the owner's API key and the owner's one-time set-up link; on a database
 * from before people existed, a link for the first owner of each account
 * made then. The server writes these to the first-start file
 * (server/first-start-file.ts); nothing here touches a file.
 */
import { LOCAL_ACCOUNT, type Admin, type IssuedKey } from './admin.js';
import type { IssuedLink, People } from './people/users.js';
import type { Store } from './ports.js';

export const LOCAL_OWNER = 'owner@localhost';

export interface FirstStart {
  /** The `local` account, created by this start (another server on the same database may have won the race: then none). */
  readonly local: { readonly key: IssuedKey; readonly ownerLink: IssuedLink } | undefined;
  /** Links for the first owners of accounts made before people existed. */
  readonly ownerLinks: ReadonlyArray<{ readonly account: string; readonly link: IssuedLink }>;
  /** Mark the owner links handed over (after the file holding them was written). */
  handedOver(): Promise<void>;
}

export async function firstStart(deps: { store: Pick<Store, 'countAccounts' | 'createAccount'>; admin: Admin; people: People }): Promise<FirstStart> {
  const { admin, people } = deps;
  const { links: ownerLinks, handedOver } = await people.accountSetupLinks();
  let local: FirstStart['local'];
  if ((await deps.store.countAccounts()) === 0) {
    try {
      await admin.createAccount(LOCAL_ACCOUNT, 'lifetime', 'system');
      const { link } = await people.createUser({ account: LOCAL_ACCOUNT, email: LOCAL_OWNER, role: 'owner', displayName: 'Owner', actor: 'system' });
      const key = await admin.issueKey(LOCAL_ACCOUNT, { user: LOCAL_OWNER, actor: 'system' });
      local = { key, ownerLink: link! };
    } catch (error) {
      // Another server on the same database created it at the same moment: it hands it over.
      if ((error as { code?: string }).code !== 'account_exists') throw error;
    }
  }
  return { local, ownerLinks, handedOver };
}
