/**
 * The overview: the account's plan and this month's usage as meters (used,
 * left, when it resets), and what happened in the account lately. A Free
 * account is told, in words, what its plan does not include.
 */
import type { AuditEntry, User } from '../../app/people/ports.js';
import type { UsageReport } from '../../app/usage.js';
import type { Format } from '../format.js';
import { html, type Html } from '../html.js';
import { layout, notice, planName, type PageContext } from '../layout.js';
import { activityLine as accessActivityLine, actorWords, isAccessActivity } from './keys.js';

export interface OverviewView {
  readonly usage: UsageReport;
  readonly activity: readonly AuditEntry[];
  readonly members: readonly User[];
  readonly format: Format;
  readonly message?: string;
}

export function meter(id: string, label: string, a: UsageReport['protect'], f: Format): Html {
  return html`<div class="meter" id="${id}" data-used="${a.used}" data-limit="${a.limit}">
<div class="meter-label"><span>${label}</span> <span class="meter-text">${f.number(a.used)} of ${f.number(a.limit)} used · ${f.number(a.remaining)} left</span></div>
<meter min="0" max="${Math.max(a.limit, 1)}" value="${a.used}" aria-label="${label}: ${f.number(a.used)} of ${f.number(a.limit)} used"></meter>
</div>`;
}

/** What an audit entry says, in words (the actor named by email where known). */
function activityLine(entry: AuditEntry, members: readonly User[], f: Format): Html {
  // An account opened on the sign-up page was made by its visitor, before they were a member.
  const who = (id: unknown) => members.find((m) => m.id === id)?.email ?? (id === 'sign-up' ? 'signing up' : actorWords(String(id))) ?? 'someone';
  const d = entry.detail as Record<string, string | undefined>;
  const texts: Record<string, string> = {
    'user.created': `${d.email ?? 'a user'} was added as ${d.role ?? 'member'}`,
    'user.disabled': `${d.email ?? 'a user'} was disabled`,
    'user.reset-link': `a password reset link was made for ${d.email ?? 'a user'}`,
    'user.password-set': `${who(d.user)} set their password`,
    'user.password-reset': `${who(d.user)} chose a new password`,
    'user.password-changed': `${who(d.user)} changed their password`,
    'member.invited': `${d.email ?? 'someone'} was invited as ${d.role ?? 'member'}`,
    'member.reinvited': `${d.email ?? 'someone'} was sent a new invitation`,
    'member.role-changed': `${d.email ?? 'a user'} is now ${d.role ?? 'a member'}`,
    'member.removed': `${d.email ?? 'a user'} was removed from the account`,
    'account.created': `the account was created on the ${planName(String(d.plan))} plan`,
    'account.plan-set': `the account moved from the ${planName(String(d.from))} plan to ${planName(String(d.to))}`,
    'account.limits-set': "the account's own limits were changed",
    'account.renamed': `the account was renamed from ${d.from ?? '?'} to ${d.to ?? '?'}`,
    'vault.settings': String(d.enabled) === 'true' ? 'the Private Vault was turned on' : 'the Private Vault was turned off',
    'vault.removed': `files were removed from the Private Vault`,
    'records.public-lookup': String(d.enabled) === 'true' ? 'public lookup of service records was turned on' : 'public lookup of service records was turned off',
  };
  // API access and keys are said as the API keys page says them.
  if (texts[entry.action] === undefined && isAccessActivity(entry)) return accessActivityLine(entry, f);
  const text = texts[entry.action] ?? entry.action;
  const by = entry.actor === d.user ? '' : ` (by ${who(entry.actor)})`;
  return html`<li><time datetime="${entry.at.toISOString()}">${f.dateTime(entry.at)}</time>: ${text}${by}</li>`;
}

export function overviewPage(context: PageContext, view: OverviewView): string {
  const { account } = context.signedIn!;
  const f = view.format;
  const free = account.plan === 'free';
  return layout(
    context,
    { title: 'Overview', current: 'overview' },
    html`<h1>Overview</h1>
${notice('success', view.message)}
<section aria-labelledby="plan">
<h2 id="plan">${account.name} · ${planName(account.plan)} plan</h2>
${
  free
    ? html`<p>Marking and checking images are part of the Pro and Lifetime plans; the Free plan lets you sign in and see your account. To upgrade, ask the service's team.</p>`
    : html`<p>What you mark or check here, and what your integrations do with the API, count together against the account's monthly limits.</p>`
}
</section>
${
  // A Free account has no monthly markings or checks: no meters of nothing, nor a date they start again.
  free
    ? ''
    : html`<section aria-labelledby="usage" class="usage">
<h2 id="usage">This month</h2>
${meter('usage-protect', 'Marked', view.usage.protect, f)}
${meter('usage-verify', 'Checked', view.usage.verify, f)}
<p class="note">The limits start again on <time datetime="${view.usage.resetsAt}">${f.dateTime(view.usage.resetsAt)}</time>.</p>
<p><a class="button" href="/mark">Mark images</a> <a class="button secondary" href="/check">Check images</a></p>
</section>`
}
<section aria-labelledby="activity">
<h2 id="activity">Recent activity</h2>
${view.activity.length ? html`<ul class="activity">${view.activity.map((e) => activityLine(e, view.members, f))}</ul>` : html`<p>Nothing yet.</p>`}
</section>`,
  );
}
