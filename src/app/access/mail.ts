/**
 * The mail a requester gets when their request for API access is decided.
 * It never holds a key: an approval asks them to reveal the key on the
 * dashboard, where it is shown once.
 */
import type { Mail } from '../../adapters/mailer.js';
import type { AccessRequest } from './ports.js';

export function decisionMail(request: AccessRequest, baseUrl: string): Mail | undefined {
  const page = new URL('/keys', baseUrl).href;
  if (request.state === 'approved') {
    const until = request.revealBy?.toISOString().slice(0, 10) ?? '';
    return {
      to: request.userEmail,
      subject: `API access for ${request.name} is approved`,
      text: [
        `Your request for API access for "${request.name}" (${request.accountName}) is approved, with the scopes ${request.grantedScopes?.join(', ') ?? ''}.`,
        '',
        `Sign in and reveal the key on ${page} before ${until} (UTC). The key is shown once, when you reveal it: store it where your integration keeps its secrets.`,
        '',
        'This mail does not contain the key, and nobody at optmark will ever ask you for it.',
      ].join('\n'),
    };
  }
  if (request.state === 'denied') {
    return {
      to: request.userEmail,
      subject: `API access for ${request.name} is not approved`,
      text: [`Your request for API access for "${request.name}" (${request.accountName}) was not approved.`, '', `The reason given: ${request.reason ?? ''}`, '', `Your requests: ${page}`].join('\n'),
    };
  }
  return undefined;
}
