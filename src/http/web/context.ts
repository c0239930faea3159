/**
 * What the people's routes share: the use cases, the guard, the assets, and
 * how to answer with a page.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Admin } from '../../app/admin.js';
import type { Access } from '../../app/access/access.js';
import type { ApiAccess } from '../../app/api-access.js';
import type { Fingerprinting } from '../../app/fingerprint.js';
import type { MetadataWorkers } from '../../app/off-loop.js';
import type { PeopleStore } from '../../app/people/ports.js';
import type { Notice, Sessions } from '../../app/people/sessions.js';
import type { SignInLimits } from '../../app/people/sign-in-limits.js';
import type { People } from '../../app/people/users.js';
import type { Provenance } from '../../app/provenance.js';
import type { Scans } from '../../app/scans/scans.js';
import type { Records } from '../../app/records/records.js';
import type { Vault } from '../../app/vault/vault.js';
import type { Mailer } from '../../adapters/mailer.js';
import type { InviteLimits } from '../../app/people/invite-limits.js';
import type { LinkMails } from '../../app/people/link-mails.js';
import type { SignUps } from '../../app/people/signup.js';
import { formatFor, localeOf, type Format } from '../../web/format.js';
import type { PageContext } from '../../web/layout.js';
import { PAGE_HEADERS } from '../page-headers.js';
import type { UploadLimits } from '../upload.js';
import type { Guard } from './guard.js';

export interface WebDeps {
  readonly people: People;
  readonly peopleStore: PeopleStore;
  readonly sessions: Sessions;
  readonly signInLimits: SignInLimits;
  readonly inviteLimits: InviteLimits;
  readonly admin: Admin;
  /** API access requests, decisions and keys (app/access). */
  readonly apiKeys: Access;
  readonly access: ApiAccess;
  readonly provenance: Provenance;
  /** Dated service records (app/records). */
  readonly records: Records;
  /** Repository scans (app/scans). */
  readonly scans?: Scans;
  /** The Private Vault (app/vault). */
  readonly vault: Vault;
  readonly fingerprint: Fingerprinting;
  /** Where a file whose XMP is too long for the event loop is read and written (app/off-loop.ts). */
  readonly workers: MetadataWorkers | undefined;
  /** How long a call's work may take after its body was read (http/call-work.ts). */
  readonly callSeconds: number;
  readonly mailer: Mailer;
  /** Visitors' own sign-ups (OPTMARK_SIGNUP=open); none when operators open every account. */
  readonly signUps?: SignUps | undefined;
  /** The reset and sign-up links' mails, queued by the public forms and sent by a job. */
  readonly linkMails: LinkMails;
  readonly upload: UploadLimits;
  readonly maxImagePixels: number;
  readonly clock: () => Date;
  /** The URL of a built asset, with its version. */
  readonly asset: (name: string) => string;
}

export function pageContext(deps: WebDeps, request: FastifyRequest): PageContext {
  return { asset: deps.asset, signedIn: request.signedIn };
}

/**
 * A form's work done, Post/Redirect/Get: a browser's navigation (its
 * `Sec-Fetch-Dest: document`) is sent to the form's page with 303, which
 * says what was done once (the notice is kept with the session), so that
 * reloading that page shows it and does not send the form again. Any other
 * client (a page script's fetch, a program, a browser without Fetch
 * Metadata) gets the page itself, from `show`, as before. Refusals are
 * always the page itself, with what was typed.
 */
export async function formDone(deps: WebDeps, request: FastifyRequest, reply: FastifyReply, notice: Notice, show: () => Promise<FastifyReply>): Promise<FastifyReply> {
  if (request.headers['sec-fetch-dest'] !== 'document' || !request.signedIn) return show();
  await deps.sessions.leaveNotice(request.signedIn.session, notice);
  return reply.redirect(notice.path, 303);
}

/** The notice a form left for the page at `path`, taken: shown by this load only (a HEAD, which shows nothing, leaves it). */
export async function takeNotice(deps: WebDeps, request: FastifyRequest, path: string): Promise<Notice | undefined> {
  return request.signedIn && request.method === 'GET' ? deps.sessions.takeNotice(request.signedIn.session, path) : undefined;
}

export function formatOf(request: FastifyRequest): Format {
  return formatFor(localeOf(request.headers['accept-language']));
}

export function sendPage(reply: FastifyReply, body: string, status = 200): FastifyReply {
  return reply.code(status).headers(PAGE_HEADERS).type('text/html; charset=utf-8').send(body);
}

/** A field of a posted form (urlencoded), or '' when absent. */
export function field(request: FastifyRequest, name: string): string {
  return request.body instanceof URLSearchParams ? (request.body.get(name) ?? '') : '';
}

/** Where to go after signing in: a path of this site only (never another host, never a protocol-relative URL). */
export function safeNext(next: string | undefined): string {
  if (!next || !/^\/(?![/\\])[A-Za-z0-9/_-]*$/.test(next)) return '/overview';
  return next;
}
