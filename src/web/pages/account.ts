/**
 * The account page: the person's own profile and password; the account's
 * members (owners invite, send an invited person a new link, change roles
 * and remove; members see who is there); and the API keys (a member sees
 * their own, an owner every key of the account). Each form says what
 * happened, or what was wrong while keeping what was typed. Removing a
 * person, which cannot be undone, asks first, on this page, without
 * JavaScript.
 */
import type { KeyView } from '../../app/admin.js';
import type { User } from '../../app/people/ports.js';
import { PASSWORD_MIN } from '../../app/people/users.js';
import type { Format } from '../format.js';
import { html, type Html } from '../html.js';
import { layout, notice, type PageContext } from '../layout.js';

export interface AccountView {
  readonly members: readonly User[];
  readonly keys: readonly KeyView[];
  readonly format: Format;
  /** Which form a message belongs to. */
  readonly form?: 'profile' | 'password' | 'invite' | 'members';
  readonly error?: string;
  readonly message?: string;
  /** A removal asked for, shown for a confirmation before anything is done. */
  readonly confirmRemove?: { readonly member: User; readonly activeKeys: number };
  /** An invitation link to hand over (no mail configured). */
  readonly invitation?: { readonly email: string; readonly url: string };
  /** What was typed into the invitation form, kept after a refusal. */
  readonly invite?: { readonly email: string; readonly role: string };
  readonly displayName?: string;
}

function feedback(view: AccountView, form: NonNullable<AccountView['form']>): Html {
  if (view.form !== form) return html``;
  return html`${notice('error', view.error, { focus: true })}${notice('success', view.message, { focus: true })}`;
}

function memberRow(member: User, me: User, owner: boolean, csrf: string, f: Format): Html {
  const state = member.disabledAt ? 'disabled' : member.hasPassword ? 'active' : 'invited (no password yet)';
  const name = member.displayName ? html`${member.displayName} <span class="note">${member.email}</span>` : html`${member.email}`;
  const actions =
    owner && member.id !== me.id
      ? html`<form class="inline" method="post" action="/account/members/role">
<input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="user" value="${member.id}">
<label class="visually-hidden" for="role-${member.id}">Role of ${member.email}</label>
<select id="role-${member.id}" name="role"><option value="member"${member.role === 'member' ? html` selected` : ''}>Member</option><option value="owner"${member.role === 'owner' ? html` selected` : ''}>Owner</option></select>
<button type="submit" class="secondary">Change role</button>
</form>
${
          !member.hasPassword && !member.disabledAt
            ? html`<form class="inline" method="post" action="/account/members/reinvite">
<input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="user" value="${member.id}">
<button type="submit" class="secondary" aria-label="Send ${member.email} a new invitation">New invitation</button>
</form>`
            : ''
        }
<form class="inline" method="post" action="/account/members/remove">
<input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="user" value="${member.id}">
<button type="submit" class="danger" aria-label="Remove ${member.email}">Remove</button>
</form>`
      : html``;
  return html`<tr><th scope="row">${name}${member.id === me.id ? html` <span class="note">(you)</span>` : ''}</th><td data-label="Role">${member.role === 'owner' ? 'Owner' : 'Member'}${member.operator ? ', operator' : ''}</td><td data-label="State">${state}</td><td data-label="Since">${f.date(member.createdAt)}</td><td class="actions">${actions}</td></tr>`;
}

/** "Remove this person?": what it does, the confirming button, and the way back. */
function removeConfirmation(view: AccountView, accountName: string, csrf: string): Html {
  if (!view.confirmRemove) return html``;
  const { member, activeKeys } = view.confirmRemove;
  const keys = activeKeys === 0 ? '' : html`, and ${activeKeys === 1 ? 'their API key is' : html`their ${activeKeys} API keys are`} revoked: the integrations using ${activeKeys === 1 ? 'it' : 'them'} stop working`;
  return html`<div class="notice warning" role="group" aria-labelledby="confirm-remove">
<h3 id="confirm-remove" tabindex="-1" autofocus>Remove ${member.email} from ${accountName}?</h3>
<p>Their sessions end at once${keys}. This cannot be undone: to have them back, invite them again.</p>
<div class="actions-row"><form class="inline" method="post" action="/account/members/remove">
<input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="user" value="${member.id}"><input type="hidden" name="confirm" value="yes">
<button type="submit" class="danger">Remove ${member.email}</button>
</form> <a class="button secondary" href="/account#members">Keep them</a></div>
</div>`;
}

export function accountPage(context: PageContext, view: AccountView): string {
  const { user, account, session } = context.signedIn!;
  const csrf = session.formToken;
  const owner = user.role === 'owner';
  const f = view.format;
  return layout(
    context,
    { title: 'Account', current: 'account', scripts: ['copy.js'] },
    html`<h1>Account</h1>
<section aria-labelledby="profile">
<h2 id="profile">Your profile</h2>
${feedback(view, 'profile')}
<form class="stack narrow" method="post" action="/account/profile">
<input type="hidden" name="csrf" value="${csrf}">
<p>Email: <strong>${user.email}</strong></p>
<label for="display-name">Name</label>
<input id="display-name" name="displayName" type="text" autocomplete="name" maxlength="100" value="${view.form === 'profile' && view.displayName !== undefined ? view.displayName : user.displayName}">
<button type="submit">Save the name</button>
</form>
</section>

<section aria-labelledby="password-heading">
<h2 id="password-heading">Password</h2>
${feedback(view, 'password')}
<form class="stack narrow" method="post" action="/account/password">
<input type="hidden" name="csrf" value="${csrf}">
<input type="hidden" name="username" value="${user.email}" autocomplete="username">
<label for="current-password">Current password</label>
<input id="current-password" name="current" type="password" autocomplete="current-password" required>
<label for="new-password">New password</label>
<input id="new-password" name="password" type="password" autocomplete="new-password" minlength="${PASSWORD_MIN}" maxlength="256" required aria-describedby="new-password-rule">
<p id="new-password-rule" class="note">At least ${PASSWORD_MIN} characters. Your other sessions end when it changes.</p>
<button type="submit">Change the password</button>
</form>
</section>

<section aria-labelledby="members">
<h2 id="members">People in ${account.name}</h2>
${feedback(view, 'members')}
${removeConfirmation(view, account.name, csrf)}
<div class="table-scroll" tabindex="0" role="region" aria-labelledby="members members-table"><span id="members-table" hidden>table</span>
<table class="cards">
<thead><tr><th scope="col">Person</th><th scope="col">Role</th><th scope="col">State</th><th scope="col">Since</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>${view.members.map((m) => memberRow(m, user, owner, csrf, f))}</tbody>
</table>
</div>
${
  owner
    ? html`<h3>Invite someone</h3>
${feedback(view, 'invite')}
${
  view.invitation
    ? html`<div class="notice info" role="status" tabindex="-1" autofocus><p>Send this link to <strong>${view.invitation.email}</strong> (it works once, for 24 hours):</p>
<p class="copy-row"><input id="invitation-link" type="text" readonly value="${view.invitation.url}" aria-label="Invitation link"> <button type="button" class="secondary" data-copy="invitation-link">Copy</button></p></div>`
    : ''
}
<form class="stack narrow" method="post" action="/account/members">
<input type="hidden" name="csrf" value="${csrf}">
<label for="invite-email">Email</label>
<input id="invite-email" name="email" type="email" autocomplete="off" required value="${view.invite?.email ?? ''}">
<label for="invite-role">Role</label>
<select id="invite-role" name="role"><option value="member"${view.invite?.role === 'owner' ? '' : html` selected`}>Member: marks, checks and scans</option><option value="owner"${view.invite?.role === 'owner' ? html` selected` : ''}>Owner: also manages people and keys</option></select>
<button type="submit">Invite</button>
</form>`
    : html`<p class="note">Owners of the account invite and remove people.</p>`
}
</section>

<section aria-labelledby="keys">
<h2 id="keys">API keys</h2>
<p>Integrations call the API with a key: ${owner ? 'the account has' : 'you have'} ${view.keys.filter((k) => k.active).length} active. Request keys, reveal, roll and revoke them on the <a href="/keys">API keys</a> page.</p>
</section>`,
  );
}
