/**
 * API access (app/access) put together over a database: the SQL store, the
 * audit log, revocation through the request path's store (so that a cache
 * in front of it forgets the key at once), and the decision mailed to the
 * requester when SMTP is configured. The server and the CLI, which may
 * decide requests with the server stopped, both use it.
 */
import type { Kysely } from 'kysely';
import { createAccess, type Access } from '../app/access/access.js';
import { decisionMail } from '../app/access/mail.js';
import type { PeopleStore } from '../app/people/ports.js';
import type { Clock, Store } from '../app/ports.js';
import { SqlAccessStore } from '../adapters/db/access-store.js';
import type { Database } from '../adapters/db/schema.js';
import type { Mailer } from '../adapters/mailer.js';

export interface AccessServiceDeps {
  readonly db: Kysely<Database>;
  readonly store: Store;
  readonly peopleStore: PeopleStore;
  readonly clock: Clock;
  readonly mailer: Mailer;
  /** The deployment's address, for the link in the mail. */
  readonly baseUrl: () => string;
  /** Keys changed other than through `store` (a roll): a cache in front of the database forgets them. */
  readonly onKeysChanged?: () => void;
  readonly onMailError?: (error: unknown, requestId: string) => void;
}

export function accessService(deps: AccessServiceDeps): Access {
  const { mailer } = deps;
  return createAccess({
    accessStore: new SqlAccessStore(deps.db, deps.onKeysChanged),
    people: deps.peopleStore,
    revokeKey: (id, now) => deps.store.revokeKey(id, now),
    clock: deps.clock,
    notifier: {
      async decided(request) {
        const mail = mailer.enabled ? decisionMail(request, deps.baseUrl()) : undefined;
        if (!mail) return false;
        try {
          await mailer.send(mail);
          return true;
        } catch (error) {
          deps.onMailError?.(error, request.id);
          return false;
        }
      },
    },
  });
}
