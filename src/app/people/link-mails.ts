/**
 * The mails the public forms promise: a link to choose a new password
 * ("Forgot your password?") and a link to confirm a sign-up. Both forms
 * answer the same page whether or not the email has a user; had they looked
 * it up and written its link before answering, the answer's time would tell
 * (a few database writes for one kind of address, none for the other). So
 * the form only queues the email, the same one insert for every address,
 * and a job of the durable queue does the lookup, the link and the mail.
 *
 * The job outlives the process that answered: a server stopped or crashed
 * after the answer leaves it to the next server that runs. A mail the SMTP
 * server does not take is tried again, after OPTMARK_MAIL_RETRY_SECONDS
 * and then after twice as long each time, 6 times in all, within the link's
 * 24 hours; each try makes a new link (the one before was never sent).
 * Only the email is queued, never a link; a finished job is deleted after
 * an hour.
 */
import { isOptmarkError } from '../../errors.js';
import type { JobPort } from '../ports.js';
import type { People } from './users.js';
import type { SignUps } from './signup.js';

export const LINK_MAIL_QUEUE = 'link-mail';

export type LinkMailKind = 'password-reset' | 'sign-up';

export interface LinkMailDeps {
  readonly jobs: JobPort;
  readonly people: Pick<People, 'resetUser'>;
  readonly signUps: Pick<SignUps, 'request'> | undefined;
  readonly mailer: { send(mail: { to: string; subject: string; text: string }): Promise<void> };
  /** Seconds before the first new try of a mail the SMTP server refused. */
  readonly retrySeconds: number;
  /** A try that failed: said in the log (never with a link). */
  readonly failed: (kind: LinkMailKind, error: unknown) => void;
}

export interface LinkMails {
  /** Queue the mail for `email`; resolves once the job is stored. */
  queue(kind: LinkMailKind, email: string): Promise<void>;
  /**
   * Work on the queued mails (this server takes up to 2 at once). The
   * database may be away at this moment (the server already listens): a
   * start that fails is tried again every 30 s.
   */
  start(onError: (error: unknown) => void): Promise<void>;
  stop(): void;
}

/** Tries of one mail: the first, then 5 more. */
const TRIES = 6;
/** A try that takes longer than this (an SMTP server that never answers) is ended and tried again. */
const TRY_SECONDS = 120;
const WORKERS = 2;
const RESTART_MS = 30_000;

export function createLinkMails(deps: LinkMailDeps): LinkMails {
  async function passwordReset(email: string): Promise<void> {
    let link;
    try {
      link = await deps.people.resetUser(email, 'self-service');
    } catch (error) {
      // No user by that email (or one who may not reset it this way): nothing to mail, and no trace of it.
      if (isOptmarkError(error) && ['user_not_found', 'invalid_option'].includes(error.code)) return;
      throw error;
    }
    await deps.mailer.send({
      to: email.toLowerCase(),
      subject: 'Choose a new optmark password',
      text: `Someone (we hope you) asked for a link to choose a new password for ${email.toLowerCase()}.\n\n${link.url}\n\nIt works once, for 24 hours. If you did not ask, ignore this mail: your password stays as it is.\n`,
    });
  }

  async function signUp(address: string): Promise<void> {
    if (!deps.signUps) return;
    const mail = await deps.signUps.request(address);
    await deps.mailer.send(
      mail.kind === 'link'
        ? {
            to: mail.email,
            subject: 'Confirm your email to create your optmark account',
            text: `Someone (we hope you) asked to create an optmark account with ${mail.email}.\n\nOpen this link to choose the account's name and your password:\n${mail.url}\n\nIt works once, for 24 hours. If you did not ask, ignore this mail: nothing is made.\n`,
          }
        : {
            to: mail.email,
            subject: 'You have an optmark account already',
            text: `Someone (we hope you) asked to create an optmark account with ${mail.email}, which has one already.\n\nSign in at ${mail.signInUrl}; if you forgot your password, ask there for a link to choose a new one.\n\nIf you did not ask, ignore this mail.\n`,
          },
    );
  }

  let restart: NodeJS.Timeout | undefined;
  const work = () =>
    deps.jobs.work(LINK_MAIL_QUEUE, WORKERS, async (data) => {
      const kind = data.kind as LinkMailKind;
      const email = String(data.email);
      try {
        await (kind === 'password-reset' ? passwordReset(email) : signUp(email));
      } catch (error) {
        deps.failed(kind, error);
        throw error;
      }
    });

  return {
    queue: (kind, email) =>
      deps.jobs.send(
        LINK_MAIL_QUEUE,
        { kind, email },
        { expireInSeconds: TRY_SECONDS, retryLimit: TRIES - 1, retryDelay: deps.retrySeconds, retryBackoff: true, deleteAfterSeconds: 3600 },
      ),
    async start(onError) {
      const attempt = () =>
        work().catch((error: unknown) => {
          onError(error);
          restart = setTimeout(() => void attempt(), RESTART_MS);
          restart.unref();
        });
      await attempt();
    },
    stop() {
      clearTimeout(restart);
    },
  };
}
