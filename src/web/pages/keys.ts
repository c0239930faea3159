/**
 * The API keys page: a key just revealed or rolled (shown this once, with a
 * copy button and a warning), approvals waiting to be revealed, the keys (a
 * member sees their own, an owner every key of the account) with roll and
 * revoke, the requests with their state and a denial's reason, the form to
 * request access (Pro and Lifetime; a Free account is told why it cannot),
 * and for owners the account's access activity.
 */
import { grantState, keyActive, MAX_OVERLAP_DAYS, REVEAL_DAYS, type RevealedKey } from '../../app/access/access.js';
import type { AccessRequest, KeyInfo } from '../../app/access/ports.js';
import type { AuditEntry } from '../../app/people/ports.js';
import { API_PLANS } from '../../app/ports.js';
import type { Format } from '../format.js';
import { html, type Html } from '../html.js';
import { layout, notice, planName, type PageContext } from '../layout.js';

export interface RequestForm {
  readonly name: string;
  readonly purpose: string;
  readonly monthlyVolume: string;
  readonly scopes: readonly string[];
  readonly contact: string;
}

export interface KeysView {
  readonly requests: readonly AccessRequest[];
  readonly keys: readonly KeyInfo[];
  /** The account's access activity (owners only). */
  readonly activity: readonly AuditEntry[] | undefined;
  readonly format: Format;
  readonly now: Date;
  /** A key made by this very request: shown once. */
  readonly revealed?: RevealedKey;
  readonly error?: string;
  readonly message?: string;
  /** What was typed into the request form, kept after a refusal. */
  readonly form?: RequestForm;
  /** A revocation asked for, shown for a confirmation before anything is done. */
  readonly confirmRevoke?: KeyInfo;
}

const STATE_WORDS: Readonly<Record<string, string>> = { pending: 'Waiting for the team', approved: 'Approved', denied: 'Not approved', withdrawn: 'Withdrawn' };

function requestState(request: AccessRequest, now: Date, f: Format): Html {
  const grant = grantState(request, now);
  if (grant === 'ready') return html`<strong>Approved</strong>: reveal the key by ${f.dateTime(request.revealBy!)}`;
  if (grant === 'revealed') return html`Approved; key revealed ${f.date(request.revealedAt!)}`;
  if (grant === 'lapsed') return html`Approved, but lapsed: the key was not revealed within ${REVEAL_DAYS} days. Request again.`;
  if (request.state === 'denied') return html`<strong>Not approved</strong> ${f.date(request.decidedAt!)}. The team's reason: “${request.reason ?? ''}”`;
  return html`${STATE_WORDS[request.state] ?? request.state}${request.decidedAt ? html` (${f.date(request.decidedAt)})` : ''}`;
}

function keyState(key: KeyInfo, now: Date, f: Format): string {
  if (key.revokedAt) return `Revoked ${f.date(key.revokedAt)}`;
  if (!keyActive(key, now)) return `Expired ${f.date(key.expiresAt!)}`;
  if (key.replacedBy) return `Rolled: works until ${f.dateTime(key.expiresAt!)}`;
  return key.expiresAt ? `Active until ${f.date(key.expiresAt)}` : 'Active';
}

function revealedNotice(view: KeysView): Html {
  const r = view.revealed;
  if (!r) return html``;
  const f = view.format;
  return html`<div class="notice success key-once" role="status">
<h2 id="new-key-heading">Your new API key${r.info.name ? html` for ${r.info.name}` : ''}</h2>
<p><strong>Copy it now and store it where your integration keeps its secrets. It is shown only this once:</strong> optmark keeps only a digest of it, and nobody, the team included, can show it again.</p>
<p class="copy-row"><input id="new-key" type="text" readonly value="${r.key}" aria-label="The new API key" autocomplete="off" spellcheck="false"> <button type="button" class="secondary" data-copy="new-key">Copy</button></p>
<p class="note">Scopes: ${r.info.scopes.join(', ')}${r.info.expiresAt ? html`; expires ${f.date(r.info.expiresAt)}` : ''}. Use it as <code>Authorization: Bearer …</code>.</p>
${
  r.rolledFrom
    ? html`<p>The key it replaces (<code>${r.rolledFrom.prefix}…</code>) ${r.rolledFrom.endsAt > view.now ? html`keeps working until ${f.dateTime(r.rolledFrom.endsAt)}: move your integration to the new key before then.` : 'has stopped working.'}</p>`
    : ''
}
</div>`;
}

function grantsToReveal(view: KeysView, userId: string, csrf: string): Html {
  const ready = view.requests.filter((r) => r.userId === userId && grantState(r, view.now) === 'ready');
  if (ready.length === 0) return html``;
  return html`<section aria-labelledby="ready-heading">
<h2 id="ready-heading">Approved: reveal your key</h2>
${ready.map(
  (r) => html`<div class="notice info">
<p><strong>${r.name}</strong> is approved with the scopes ${r.grantedScopes!.join(', ')}${r.keyDays ? html`; the key will last ${view.format.number(r.keyDays)} days` : ''}.
The key is made when you reveal it and shown once; reveal it by ${view.format.dateTime(r.revealBy!)}.</p>
<form method="post" action="/keys/reveal" class="inline">
<input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="request" value="${r.id}">
<button type="submit">Reveal the key for ${r.name}</button>
</form>
</div>`,
)}
</section>`;
}

function keyRow(key: KeyInfo, view: KeysView, canAct: boolean, canRoll: boolean, csrf: string): Html {
  const f = view.format;
  const live = keyActive(key, view.now);
  const actions =
    canAct && live
      ? html`${
          key.replacedBy || !canRoll
            ? ''
            : html`<form method="post" action="/keys/roll" class="inline">
<input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="key" value="${key.id}">
<label for="overlap-${key.id}">Old key works for</label>
<select id="overlap-${key.id}" name="overlapDays">${Array.from({ length: MAX_OVERLAP_DAYS + 1 }, (_, d) => html`<option value="${d}"${d === 1 ? html` selected` : ''}>${d === 0 ? 'no time (stops now)' : `${d} day${d === 1 ? '' : 's'}`}</option>`)}</select>
<button type="submit" class="secondary">Roll <span class="visually-hidden">${key.prefix}</span></button>
</form>`
        }
<form method="post" action="/keys/revoke" class="inline">
<input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="key" value="${key.id}">
<button type="submit" class="danger">Revoke <span class="visually-hidden">${key.prefix}</span></button>
</form>`
      : html``;
  return html`<tr><th scope="row"><code>${key.prefix}…</code>${key.name ? html`<br>${key.name}` : ''}</th><td data-label="Person">${key.userEmail ?? 'no user yet'}</td><td data-label="Scopes">${key.scopes.join(', ')}</td><td data-label="Created">${f.date(key.createdAt)}</td><td data-label="Last used">${key.lastUsedAt ? f.date(key.lastUsedAt) : 'never'}</td><td data-label="State">${keyState(key, view.now, f)}</td><td class="actions">${actions}</td></tr>`;
}

function requestForm(view: KeysView, email: string, csrf: string): Html {
  const form = view.form;
  const scopes = form?.scopes ?? ['protect', 'verify'];
  return html`<form class="stack narrow" method="post" action="/keys/requests" id="request">
<input type="hidden" name="csrf" value="${csrf}">
<label for="request-name">Integration name</label>
<input id="request-name" name="name" type="text" maxlength="100" required value="${form?.name ?? ''}" aria-describedby="request-name-note">
<p id="request-name-note" class="note">What calls the API, e.g. “Upload pipeline” or “Shop images”. One pending request per name.</p>
<label for="request-purpose">What it does with the API</label>
<textarea id="request-purpose" name="purpose" maxlength="2000" rows="4" required>${form?.purpose ?? ''}</textarea>
<label for="request-volume">Expected calls per month</label>
<input id="request-volume" name="monthlyVolume" type="number" inputmode="numeric" min="0" max="1000000000" step="1" required value="${form?.monthlyVolume ?? ''}">
<fieldset>
<legend>What the key may call</legend>
<label class="check"><input type="checkbox" name="scopes" value="protect"${scopes.includes('protect') ? html` checked` : ''}> protect: write the opt-out into images</label>
<label class="check"><input type="checkbox" name="scopes" value="verify"${scopes.includes('verify') ? html` checked` : ''}> verify: read the opt-out and other signals</label>
</fieldset>
<label for="request-contact">How the team can reach you</label>
<input id="request-contact" name="contact" type="text" maxlength="254" required value="${form?.contact ?? email}">
<button type="submit">Request access</button>
</form>`;
}

const ACTION_WORDS: Readonly<Record<string, string>> = {
  'access.requested': 'requested access',
  'access.withdrawn': 'withdrew a request',
  'access.approved': 'approved a request',
  'access.denied': 'denied a request',
  'key.issued': 'revealed a new key',
  'key.rolled': 'rolled a key',
  'key.revoked': 'revoked a key',
  'scans.paused': 'paused repository scans for everyone',
  'scans.resumed': 'resumed repository scans',
  'scans.ceiling-set': "changed today's scan ceiling",
  'account.created': 'opened an account',
  'account.plan-set': "changed an account's plan",
  'account.limits-set': "changed an account's limits",
  'account.renamed': 'renamed an account',
  'account.deleted': 'deleted an account',
};

/** An audit line's actor that is not a person, in words: the command line, or the server itself. */
export const actorWords = (actor: string): string | undefined => (actor === 'cli' ? 'an operator (command line)' : actor === 'system' ? 'the server' : undefined);

/** Whether the entry is one of API access, keys or scans, which activityLine says in words. */
export const isAccessActivity = (entry: AuditEntry): boolean => Object.hasOwn(ACTION_WORDS, entry.action);

export function activityLine(entry: AuditEntry, f: Format): Html {
  const d = entry.detail as Record<string, unknown>;
  const what = [
    d.name ? `“${String(d.name)}”` : '',
    entry.action === 'account.plan-set' || entry.action === 'account.renamed' ? `from ${String(d.from)} to ${String(d.to)}` : '',
    d.prefix ? `${String(d.prefix)}…` : '',
    d.reason ? `reason: ${String(d.reason)}` : '',
    entry.action === 'scans.ceiling-set' ? `from ${String(d.from)} to ${String(d.to)}` : '',
    entry.action === 'scans.paused' || entry.action === 'scans.resumed' ? `${String(d.today)} of ${String(d.ceiling)} today` : '',
  ]
    .filter(Boolean)
    .join(', ');
  const by = String(d.by ?? entry.actor);
  const who = actorWords(by) ?? by;
  // A key issued from the command line was never requested nor revealed on a page.
  const words = entry.action === 'key.issued' && d.request === undefined ? 'issued a key' : (ACTION_WORDS[entry.action] ?? entry.action);
  return html`<li><time datetime="${entry.at.toISOString()}">${f.dateTime(entry.at)}</time>: ${who} ${words}${what ? html` (${what})` : ''}${entry.address ? html` <span class="note">from ${entry.address}</span>` : ''}</li>`;
}

/** "Revoke this key?": what it does, the confirming button, and the way back (the keys page's, or the operator console's with `at`). */
export function revokeConfirmation(key: KeyInfo | undefined, format: Format, csrf: string, at = { action: '/keys/revoke', back: '/keys', account: false }): Html {
  if (!key) return html``;
  const whose = key.userEmail ? html` of ${key.userEmail}` : '';
  const where = at.account ? html` (account ${key.accountName})` : '';
  return html`<div class="notice warning" role="group" aria-labelledby="confirm-revoke">
<h2 id="confirm-revoke" tabindex="-1" autofocus>Revoke the key <code>${key.prefix}…</code>${key.name ? html` (${key.name})` : ''}${whose}${where}?</h2>
<p>Every call with it is refused from now on (401): the integration using it stops working until it is given another key. This cannot be undone.${key.lastUsedAt ? html` It was last used ${format.dateTime(key.lastUsedAt)}.` : ' It has never been used.'}</p>
<div class="actions-row"><form class="inline" method="post" action="${at.action}">
<input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="key" value="${key.id}"><input type="hidden" name="confirm" value="yes">
<button type="submit" class="danger">Revoke <code>${key.prefix}…</code></button>
</form> <a class="button secondary" href="${at.back}">Keep it</a></div>
</div>`;
}

export function keysPage(context: PageContext, view: KeysView): string {
  const { user, account, session } = context.signedIn!;
  const csrf = session.formToken;
  const owner = user.role === 'owner';
  const paid = API_PLANS.includes(account.plan);
  const f = view.format;
  const withdrawable = (r: AccessRequest) => r.state === 'pending' && (owner || r.userId === user.id);
  return layout(
    context,
    { title: 'API keys', current: 'keys', scripts: ['copy.js'] },
    html`<h1>API keys</h1>
<p>Integrations call the <a href="/api">optmark API</a> with a key. You request a key for an integration; the service's team approves it; you reveal the key once and store it. ${owner ? 'As an owner you see every key and request of the account.' : 'You see your own keys and requests.'}</p>
${notice('error', view.error, { focus: true })}${notice('success', view.message, { focus: true })}
${revokeConfirmation(view.confirmRevoke, view.format, csrf)}
${revealedNotice(view)}
${grantsToReveal(view, user.id, csrf)}

<section aria-labelledby="keys-heading">
<h2 id="keys-heading">Keys</h2>
${
  view.keys.length
    ? html`<div class="table-scroll" tabindex="0" role="region" aria-labelledby="keys-heading keys-heading-table"><span id="keys-heading-table" hidden>table</span><table class="cards">
<thead><tr><th scope="col">Key</th><th scope="col">Person</th><th scope="col">Scopes</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">State</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>${view.keys.map((k) => keyRow(k, view, owner || k.userId === user.id, k.userId === null || k.userId === user.id, csrf))}</tbody>
</table></div>
<p class="note">${owner ? 'As an owner you may revoke any key of the account; you roll only your own keys and those bound to no one (a member rolls their own). ' : ''}Rolling makes a new key, shown once; the old one keeps working for the time you choose (up to ${MAX_OVERLAP_DAYS} days), then stops. Revoking stops a key at once.</p>`
    : html`<p>No keys yet.</p>`
}
</section>

<section aria-labelledby="requests-heading">
<h2 id="requests-heading">Requests</h2>
${
  view.requests.length
    ? html`<div class="table-scroll" tabindex="0" role="region" aria-labelledby="requests-heading requests-heading-table"><span id="requests-heading-table" hidden>table</span><table class="cards">
<thead><tr><th scope="col">Integration</th><th scope="col">Asked by</th><th scope="col">Scopes</th><th scope="col">Asked</th><th scope="col">State</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>${view.requests.map(
        (r) => html`<tr><th scope="row">${r.name}</th><td data-label="Asked by">${r.userEmail}</td><td data-label="Scopes">${r.scopes.join(', ')}</td><td data-label="Asked">${f.date(r.createdAt)}</td><td data-label="State">${requestState(r, view.now, f)}</td><td>${
          withdrawable(r)
            ? html`<form method="post" action="/keys/requests/withdraw" class="inline"><input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="request" value="${r.id}"><button type="submit" class="secondary">Withdraw <span class="visually-hidden">${r.name}</span></button></form>`
            : ''
        }</td></tr>`,
      )}</tbody>
</table></div>`
    : html`<p>No requests yet.</p>`
}
</section>

<section aria-labelledby="request-heading">
<h2 id="request-heading">Request access</h2>
${
  paid
    ? html`<p>The service's team reads each request. You will see the decision here (and by mail when the service sends mail); an approval lets you reveal the key for ${REVEAL_DAYS} days.</p>${requestForm(view, user.email, csrf)}`
    : html`<p>The ${planName(account.plan)} plan does not include the API: keys are for Pro and Lifetime accounts. Nothing is stored if you try. Ask the service's team about upgrading.</p>`
}
</section>
${
  view.activity
    ? html`<section aria-labelledby="activity-heading">
<h2 id="activity-heading">Access activity</h2>
${view.activity.length ? html`<ul class="activity">${view.activity.map((e) => activityLine(e, f))}</ul>` : html`<p>Nothing yet.</p>`}
</section>`
    : ''
}`,
  );
}
