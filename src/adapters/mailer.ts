/**
 * Mail for people (invitations, password resets) through the SMTP server of
 * OPTMARK_SMTP_URL, with nodemailer. Without it, no mail is sent: the owner
 * sees an invitation's link on the page, and the CLI prints reset links.
 */
import nodemailer from 'nodemailer';
import { ServiceUnavailableError } from '../errors.js';

export interface Mail {
  readonly to: string;
  readonly subject: string;
  readonly text: string;
}

export interface Mailer {
  /** Whether mail is configured at all. */
  readonly enabled: boolean;
  /** @throws ServiceUnavailableError when the SMTP server cannot take the mail */
  send(mail: Mail): Promise<void>;
  close(): void;
}

export function createMailer(options: { url: string | undefined; from: string }): Mailer {
  if (!options.url) {
    return {
      enabled: false,
      send: () => Promise.reject(new ServiceUnavailableError('Mail is not configured on this server', 60)),
      close: () => {},
    };
  }
  const transport = nodemailer.createTransport(options.url, { from: options.from });
  return {
    enabled: true,
    async send(mail) {
      try {
        await transport.sendMail({ to: mail.to, subject: mail.subject, text: mail.text });
      } catch (error) {
        throw new ServiceUnavailableError('The mail could not be sent; try again in a while', 30, { cause: error });
      }
    },
    close: () => transport.close(),
  };
}
