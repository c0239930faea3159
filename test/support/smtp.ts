/**
 * A real SMTP server on loopback (smtp-server) for the tests of mail: every
 * message it takes is kept, with its recipients and its text as sent.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  readonly to: string[];
  readonly text: string;
}

export interface TestSmtp {
  /** The messages taken so far, in order. */
  readonly received: ReceivedMail[];
  /** For OPTMARK_SMTP_URL. */
  readonly url: string;
  close(): Promise<void>;
}

/** `port`: a given one (a server that comes back where it was), else any free one. */
export async function startSmtp(port = 0): Promise<TestSmtp> {
  const received: ReceivedMail[] = [];
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        received.push({ to: session.envelope.rcptTo.map((r) => r.address), text: Buffer.concat(chunks).toString('utf8') });
        callback();
      });
    },
  });
  smtp.listen(port, '127.0.0.1');
  await once(smtp.server, 'listening');
  const bound = (smtp.server.address() as AddressInfo).port;
  return { received, url: `smtp://127.0.0.1:${bound}`, close: () => new Promise<void>((resolve) => smtp.close(() => resolve())) };
}

/**
 * The first one-time link to `path` in a mail's text (a set-up or reset
 * link at /link, a sign-up link at /sign-up/confirm), its quoted-printable
 * soft breaks undone; undefined when the mail holds none.
 */
export function linkIn(text: string, path = '/link'): string | undefined {
  const plain = text.replace(/=\r?\n/g, '').replace(/=3D/g, '=');
  return new RegExp(`https?://\\S+${path.replace(/\//g, '\\/')}\\?token=[A-Za-z0-9_-]{43}`).exec(plain)?.[0];
}
