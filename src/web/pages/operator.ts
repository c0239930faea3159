/**
 * The operator console: pending requests for API access first (oldest
 * first), each with its account, plan, requester and the account's earlier
 * requests, to approve (scopes granted, an optional expiry) or deny with a
 * reason the requester reads; then decided requests, every key of the
 * service (revoke; never the key itself, which nobody but its requester
 * ever sees), a form that opens an account with its owner, and the access,
 * account and scan lines of the audit log.
 */
import { grantState, keyActive } from '../../app/access/access.js';
import type { AccessRequest, KeyInfo } from '../../app/access/ports.js';
import type { AuditEntry } from '../../app/people/ports.js';
import { ACCOUNT_NAME_PATTERN } from '../../app/admin.js';
import { PLANS } from '../../app/ports.js';
import type { Format } from '../format.js';
import { html, type Html } from '../html.js';
import { layout, notice, planName, type PageContext } from '../layout.js';
import { activityLine, revokeConfirmation } from './keys.js';

export interface OperatorView {
  readonly pending: readonly AccessRequest[];
  readonly decided: readonly AccessRequest[];
  /** Each pending request's account's other requests, by account id. */
  readonly history: ReadonlyMap<string, readonly AccessRequest[]>;
  readonly keys: readonly KeyInfo[];
  readonly audit: readonly AuditEntry[];
  readonly format: Format;
  readonly now: Date;
  readonly error?: string;
  readonly message?: string;
  /** A revocation asked for, shown for a confirmation before anything is done. */
  readonly confirmRevoke?: KeyInfo;
  /** The request a refused decision was about, and what was typed. */
  readonly failed?: {
    readonly request: string;
    readonly reason?: string;
    readonly days?: string;
    readonly scopes?: readonly string[];
    readonly ceiling?: string;
    readonly account?: { readonly name: string; readonly plan: string; readonly email: string };
  };
  /** An account just opened, whose owner's set-up link is to be handed over (no mail configured). */
  readonly opened?: { readonly account: string; readonly plan: string; readonly email: string; readonly url: string };
  /** Repository scans, service-wide: today's count against the ceiling, and whether new ones are paused. */
  readonly scans?: { readonly today: number; readonly ceiling: number; readonly paused: boolean };
}

function decidedState(r: AccessRequest, now: Date, f: Format): string {
  const grant = grantState(r, now);
  const when = r.decidedAt ? ` ${f.date(r.decidedAt)} by ${r.decidedBy ?? ''}` : '';
  if (grant === 'ready') return `approved${when}; not revealed yet`;
  if (grant === 'revealed') return `approved${when}; key revealed ${f.date(r.revealedAt!)}`;
  if (grant === 'lapsed') return `approved${when}; lapsed (not revealed)`;
  if (r.state === 'denied') return `denied${when}: ${r.reason ?? ''}`;
  return `${r.state}${when}`;
}

function pendingCard(r: AccessRequest, view: OperatorView, csrf: string): Html {
  const f = view.format;
  const failed = view.failed?.request === r.id ? view.failed : undefined;
  const scopes = failed?.scopes ?? r.scopes;
  const earlier = (view.history.get(r.accountId) ?? []).filter((h) => h.id !== r.id);
  return html`<article class="card" aria-labelledby="req-${r.id}">
<h3 id="req-${r.id}">${r.name} <span class="note">${r.accountName} · ${planName(r.plan)}</span></h3>
<dl class="facts">
<dt>Asked by</dt><dd>${r.userEmail}, ${f.dateTime(r.createdAt)}</dd>
<dt>Contact</dt><dd>${r.contact}</dd>
<dt>Purpose</dt><dd>${r.purpose}</dd>
<dt>Calls per month</dt><dd>about ${f.number(r.monthlyVolume)}</dd>
<dt>Scopes asked</dt><dd>${r.scopes.join(', ')}</dd>
<dt>Earlier requests</dt><dd>${earlier.length ? html`<ul>${earlier.slice(0, 10).map((h) => html`<li>${h.name}: ${decidedState(h, view.now, f)}</li>`)}</ul>` : 'none'}</dd>
</dl>
${failed ? notice('error', view.error, { focus: true }) : ''}
<div class="decide">
<form method="post" action="/operator/requests/approve" class="stack">
<input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="request" value="${r.id}">
<fieldset><legend>Scopes granted</legend>
<label class="check"><input type="checkbox" name="scopes" value="protect"${scopes.includes('protect') ? html` checked` : ''}> protect</label>
<label class="check"><input type="checkbox" name="scopes" value="verify"${scopes.includes('verify') ? html` checked` : ''}> verify</label>
</fieldset>
<label for="days-${r.id}">Key expires after (days) <span class="optional">optional</span></label>
<input id="days-${r.id}" name="expiresInDays" type="number" min="1" max="3650" step="1" inputmode="numeric" value="${failed?.days ?? ''}">
<button type="submit">Approve ${r.name}</button>
</form>
<form method="post" action="/operator/requests/deny" class="stack">
<input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="request" value="${r.id}">
<label for="reason-${r.id}">Reason (the requester reads it)</label>
<textarea id="reason-${r.id}" name="reason" rows="2" maxlength="1000" required>${failed?.reason ?? ''}</textarea>
<button type="submit" class="danger">Deny ${r.name}</button>
</form>
</div>
</article>`;
}

/** Open an account for someone: its name, its plan, its owner, who gets a one-time set-up link (mailed, or shown here to hand over). */
function accountsSection(view: OperatorView, csrf: string): Html {
  const failed = view.failed?.request === 'new-account' ? view.failed : undefined;
  const typed = failed?.account;
  const plans = PLANS.map((plan) => html`<option value="${plan}"${(typed?.plan ?? 'pro') === plan ? html` selected` : ''}>${planName(plan)}</option>`);
  return html`<section aria-labelledby="accounts-heading">
<h2 id="accounts-heading">Open an account</h2>
<p>For a customer: the account, its plan, and its owner, who chooses a password with a one-time link and can then invite the others. Plans and limits of existing accounts are changed from the command line (<code>optmark accounts</code>).</p>
${
  view.opened
    ? html`<div class="notice success" role="status"><p>The account <strong>${view.opened.account}</strong> (${planName(view.opened.plan)}) is open. Send this link to its owner <strong>${view.opened.email}</strong> (it works once, for 24 hours):</p>
<p class="copy-row"><input id="setup-link" type="text" readonly value="${view.opened.url}" aria-label="Set-up link of ${view.opened.email}"> <button type="button" class="secondary" data-copy="setup-link">Copy</button></p></div>`
    : ''
}
${failed ? notice('error', view.error, { focus: true }) : ''}
<form method="post" action="/operator/accounts" class="stack">
<input type="hidden" name="csrf" value="${csrf}">
<label for="account-name">Account name</label>
<input id="account-name" name="name" type="text" required maxlength="100" pattern="${ACCOUNT_NAME_PATTERN}" autocomplete="off" value="${typed?.name ?? ''}" aria-describedby="account-name-note">
<p class="note" id="account-name-note">Letters, digits, ".", "_" or "-", starting with a letter or digit.</p>
<label for="account-plan">Plan</label>
<select id="account-plan" name="plan">${plans}</select>
<label for="account-owner">Owner's email</label>
<input id="account-owner" name="email" type="email" required maxlength="254" autocomplete="off" value="${typed?.email ?? ''}">
<button type="submit">Open the account</button>
</form>
</section>`;
}

/** Scans for the whole service: today's count, the ceiling, paused or not; pause or resume, and change today's ceiling. No account's scans or reports. */
function scansSection(view: OperatorView, csrf: string): Html {
  const scans = view.scans;
  if (!scans) return html``;
  const f = view.format;
  const failed = view.failed?.request === 'scans-ceiling' ? view.failed : undefined;
  return html`<section aria-labelledby="scans-heading" class="operator-scans">
<h2 id="scans-heading">Repository scans</h2>
<div class="meter" id="scans-today">
<div class="meter-label"><span>Scans today, all accounts</span> <span class="meter-text">${f.number(scans.today)} of ${f.number(scans.ceiling)} (the day's ceiling, UTC)</span></div>
<meter min="0" max="${Math.max(1, scans.ceiling)}" value="${Math.min(scans.today, Math.max(1, scans.ceiling))}" aria-label="Scans today: ${f.number(scans.today)} of ${f.number(scans.ceiling)}"></meter>
</div>
<p id="scans-state">${
    scans.paused
      ? html`<strong>Paused:</strong> new scans are refused for everyone, who are told it is service-wide and temporary. Scans already running finish.`
      : html`<strong>Open:</strong> people start scans, each within their own daily limit, until the service reaches the ceiling.`
  }</p>
<form method="post" action="/operator/scans/${scans.paused ? 'resume' : 'pause'}" class="inline">
<input type="hidden" name="csrf" value="${csrf}">
<button type="submit"${scans.paused ? '' : html` class="danger"`}>${scans.paused ? 'Resume scans' : 'Pause scans'}</button>
</form>
${failed ? notice('error', view.error, { focus: true }) : ''}
<form method="post" action="/operator/scans/ceiling" class="stack ceiling">
<input type="hidden" name="csrf" value="${csrf}">
<label for="ceiling">Today's ceiling (scans, all accounts together)</label>
<input id="ceiling" name="ceiling" type="text" inputmode="numeric" required value="${failed?.ceiling ?? String(scans.ceiling)}"${failed ? html` aria-invalid="true"` : ''}>
<button type="submit" class="secondary">Set the ceiling</button>
</form>
<p class="note">Operators see only these counts: never an account's scans or reports.</p>
</section>`;
}

export function operatorPage(context: PageContext, view: OperatorView): string {
  const csrf = context.signedIn!.session.formToken;
  const f = view.format;
  return layout(
    context,
    { title: 'Operator console', current: 'operator', scripts: ['copy.js'] },
    html`<h1>Operator console</h1>
${view.failed ? '' : notice('error', view.error, { focus: true })}${notice('success', view.message, { focus: true })}
${revokeConfirmation(view.confirmRevoke, f, csrf, { action: '/operator/keys/revoke', back: '/operator#keys-heading', account: true })}
<section aria-labelledby="pending-heading">
<h2 id="pending-heading">Requests waiting for a decision (${f.number(view.pending.length)})</h2>
${view.pending.length ? view.pending.map((r) => pendingCard(r, view, csrf)) : html`<p>None: every request is decided.</p>`}
</section>

${accountsSection(view, csrf)}

${scansSection(view, csrf)}

<section aria-labelledby="decided-heading">
<h2 id="decided-heading">Decided requests</h2>
${
  view.decided.length
    ? html`<div class="table-scroll" tabindex="0" role="region" aria-labelledby="decided-heading decided-heading-table"><span id="decided-heading-table" hidden>table</span><table class="cards">
<thead><tr><th scope="col">Integration</th><th scope="col">Account</th><th scope="col">Asked by</th><th scope="col">Decision</th></tr></thead>
<tbody>${view.decided.map((r) => html`<tr><th scope="row">${r.name}</th><td data-label="Account">${r.accountName}</td><td data-label="Asked by">${r.userEmail}</td><td data-label="Decision">${decidedState(r, view.now, f)}</td></tr>`)}</tbody>
</table></div>`
    : html`<p>None yet.</p>`
}
</section>

<section aria-labelledby="keys-heading">
<h2 id="keys-heading">Keys</h2>
<p class="note">Only a key's prefix is ever shown: its requester revealed the key once, and optmark keeps a digest.</p>
${
  view.keys.length
    ? html`<div class="table-scroll" tabindex="0" role="region" aria-labelledby="keys-heading keys-heading-table"><span id="keys-heading-table" hidden>table</span><table class="cards">
<thead><tr><th scope="col">Key</th><th scope="col">Account</th><th scope="col">Person</th><th scope="col">Scopes</th><th scope="col">Last used</th><th scope="col">State</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>${view.keys.map((k) => {
        const live = keyActive(k, view.now);
        const state = k.revokedAt ? `revoked ${f.date(k.revokedAt)}` : !live ? `expired ${f.date(k.expiresAt!)}` : k.replacedBy ? `rolled, ends ${f.dateTime(k.expiresAt!)}` : 'active';
        return html`<tr><th scope="row"><code>${k.prefix}…</code>${k.name ? html`<br>${k.name}` : ''}</th><td data-label="Account">${k.accountName}</td><td data-label="Person">${k.userEmail ?? 'no user'}</td><td data-label="Scopes">${k.scopes.join(', ')}</td><td data-label="Last used">${k.lastUsedAt ? f.date(k.lastUsedAt) : 'never'}</td><td data-label="State">${state}</td><td>${
          live
            ? html`<form method="post" action="/operator/keys/revoke" class="inline"><input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="key" value="${k.id}"><button type="submit" class="danger">Revoke <span class="visually-hidden">${k.prefix}</span></button></form>`
            : ''
        }</td></tr>`;
      })}</tbody>
</table></div>`
    : html`<p>No keys.</p>`
}
</section>

<section aria-labelledby="audit-heading">
<h2 id="audit-heading">Audit log: access, keys, accounts and scans</h2>
${view.audit.length ? html`<ul class="activity">${view.audit.map((e) => activityLine(e, f))}</ul>` : html`<p>Nothing yet.</p>`}
</section>`,
  );
}
