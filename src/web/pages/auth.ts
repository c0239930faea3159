/**
 * Pages of people who are not signed in yet: sign-in, a one-time link
 * (set a first password, accept an invitation, choose a new password, set up
 * an account's first owner), asking for a reset link by mail, and a
 * visitor's own sign-up where the deployment allows it. Every form
 * carries its pre-session token; a refused form comes back with what was
 * typed (never the password) and the reason in words.
 */
import type { LinkView } from '../../app/people/users.js';
import { ACCOUNT_NAME_PATTERN } from '../../app/admin.js';
import { PASSWORD_MIN } from '../../app/people/users.js';
import { html, type Html } from '../html.js';
import { layout, notice, type PageContext } from '../layout.js';

export interface SignInView {
  readonly pre: string;
  readonly email?: string;
  readonly next?: string;
  readonly error?: string;
  readonly message?: string;
  /** Mail is configured: offer "forgot your password". */
  readonly canMailResets: boolean;
  /** Visitors may create a Free account themselves (OPTMARK_SIGNUP=open). */
  readonly canSignUp?: boolean;
}

export function signInPage(context: PageContext, view: SignInView): string {
  return layout(
    context,
    { title: 'Sign in' },
    html`<h1>Sign in</h1>
${notice('error', view.error, { id: 'sign-in-error' })}${notice('success', view.message)}
<form class="stack narrow" method="post" action="/sign-in">
<input type="hidden" name="pre" value="${view.pre}">
${view.next ? html`<input type="hidden" name="next" value="${view.next}">` : ''}
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${view.email ?? ''}"${view.error ? '' : html` autofocus`}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${view.error ? html` autofocus aria-invalid="true" aria-describedby="sign-in-error"` : ''}>
<button type="submit">Sign in</button>
</form>
<p class="note">${
      view.canMailResets
        ? html`Forgot your password? <a href="/forgot-password">Get a link to choose a new one.</a>`
        : html`Forgot your password? Ask an owner of your account, or the service's team, for a reset link.`
    }</p>
${view.canSignUp ? html`<p class="note">No account yet? <a href="/sign-up">Create a Free account</a>.</p>` : ''}
<p class="note">Integrations call the API with an API key, not with a password: see <a href="/api">the API page</a>, where keys are requested.</p>`,
  );
}

export interface LinkPageView {
  readonly pre: string;
  readonly token: string;
  readonly link: LinkView;
  readonly error?: string;
  readonly email?: string;
  readonly displayName?: string;
}

const TITLES: Readonly<Record<LinkView['purpose'], (account: string) => string>> = {
  setup: () => 'Set your password',
  invitation: (account) => `Join ${account}`,
  reset: () => 'Choose a new password',
  'account-setup': (account) => `Set up ${account}`,
};

function passwordFields(autofocus: boolean): Html {
  return html`<label for="password">New password</label>
<input id="password" name="password" type="password" autocomplete="new-password" minlength="${PASSWORD_MIN}" maxlength="256" required aria-describedby="password-rule"${autofocus ? html` autofocus` : ''}>
<p id="password-rule" class="note">At least ${PASSWORD_MIN} characters. A few unrelated words make a password that is long and easy to remember.</p>`;
}

export function linkPage(context: PageContext, view: LinkPageView): string {
  const { link } = view;
  const title = TITLES[link.purpose](link.accountName);
  const intro: Record<LinkView['purpose'], Html> = {
    setup: html`<p>You have a user in <strong>${link.accountName}</strong>: <strong>${link.email}</strong>. Choose a password to sign in.</p>`,
    invitation: html`<p>You are invited to <strong>${link.accountName}</strong> as <strong>${link.email}</strong>. Choose the name others see and a password.</p>`,
    reset: html`<p>Choose a new password for <strong>${link.email}</strong>. Your other sessions end when it is set.</p>`,
    'account-setup': html`<p>The account <strong>${link.accountName}</strong> has no users yet. You become its owner: give your email and choose a password.</p>`,
  };
  return layout(
    context,
    { title },
    html`<h1>${title}</h1>
${notice('error', view.error)}
${intro[link.purpose]}
<form class="stack narrow" method="post" action="/link">
<input type="hidden" name="pre" value="${view.pre}">
<input type="hidden" name="token" value="${view.token}">
${link.email ? html`<input type="hidden" name="username" value="${link.email}" autocomplete="username">` : ''}
${
  link.purpose === 'account-setup'
    ? html`<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="email" required value="${view.email ?? ''}" autofocus>`
    : ''
}
${
  link.purpose !== 'reset'
    ? html`<label for="display-name">Your name <span class="optional">(optional)</span></label>
<input id="display-name" name="displayName" type="text" autocomplete="name" maxlength="100" value="${view.displayName ?? link.displayName}">`
    : ''
}
${passwordFields(link.purpose === 'reset' || link.purpose === 'setup')}
<button type="submit">${link.purpose === 'reset' ? 'Set the new password' : 'Set the password and sign in'}</button>
</form>
<p class="note">This link works once, until ${link.expiresAt.toISOString().replace('T', ' ').slice(0, 16)} UTC.</p>`,
  );
}

export function linkNotValidPage(context: PageContext, message: string): string {
  return layout(
    context,
    { title: 'Link not valid' },
    html`<h1>This link cannot be used</h1>
${notice('error', message)}
<p>Links to set a password work once, for 24 hours. Ask an owner of your account (or the service's team) for a new one, or <a href="/sign-in">sign in</a> if your password is set.</p>`,
  );
}

export interface ForgotView {
  readonly pre: string;
  readonly email?: string;
  readonly sent?: boolean;
  readonly error?: string;
}

export function forgotPasswordPage(context: PageContext, view: ForgotView): string {
  return layout(
    context,
    { title: 'Forgot your password' },
    html`<h1>Forgot your password?</h1>
${notice('error', view.error)}
${
  view.sent
    ? notice('success', 'If this email belongs to a user, a link to choose a new password is on its way. It works once, for 24 hours.')
    : html`<p>Give your email: we send a link to choose a new password.</p>
<form class="stack narrow" method="post" action="/forgot-password">
<input type="hidden" name="pre" value="${view.pre}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${view.email ?? ''}" autofocus>
<button type="submit">Send the link</button>
</form>`
}
<p><a href="/sign-in">Back to sign-in</a></p>`,
  );
}

export interface SignUpView {
  readonly pre: string;
  readonly email?: string;
  readonly sent?: boolean;
  readonly error?: string;
}

/** A visitor asks for a Free account (OPTMARK_SIGNUP=open): their email first, which a mailed link confirms. */
export function signUpPage(context: PageContext, view: SignUpView): string {
  return layout(
    context,
    { title: 'Create an account' },
    html`<h1>Create an account</h1>
${notice('error', view.error)}
${
  view.sent
    ? html`${notice('success', html`A link is on its way to <strong>${view.email ?? ''}</strong>. Open it within 24 hours to choose your account's name and your password.`)}
<p>Nothing there? Look in the spam folder, or <a href="/sign-up">ask again</a>: a new link replaces the old one.</p>`
    : html`<p>A Free account lets you sign in, see what the plans include and invite others. Marking and checking images are part of the Pro and Lifetime plans, which the service's team sets up.</p>
<p>Give your email: we mail you a link to confirm it and go on.</p>
<form class="stack narrow" method="post" action="/sign-up">
<input type="hidden" name="pre" value="${view.pre}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="email" required maxlength="254" value="${view.email ?? ''}" autofocus>
<button type="submit">Mail me the link</button>
</form>`
}
<p class="note">Have an account? <a href="/sign-in">Sign in</a>.</p>`,
  );
}

export interface SignUpConfirmView {
  readonly pre: string;
  readonly token: string;
  readonly email: string;
  readonly expiresAt: Date;
  readonly accountName?: string;
  readonly displayName?: string;
  readonly error?: string;
}

/** The mailed link: the account's name and the owner's password; the account is made on the Free plan. */
export function signUpConfirmPage(context: PageContext, view: SignUpConfirmView): string {
  return layout(
    context,
    { title: 'Set up your account' },
    html`<h1>Set up your account</h1>
${notice('error', view.error)}
<p>Your email <strong>${view.email}</strong> is confirmed. Name the account (your team or business: others you invite join it) and choose your password.</p>
<form class="stack narrow" method="post" action="/sign-up/confirm">
<input type="hidden" name="pre" value="${view.pre}">
<input type="hidden" name="token" value="${view.token}">
<input type="hidden" name="username" value="${view.email}" autocomplete="username">
<label for="account-name">Account name</label>
<input id="account-name" name="accountName" type="text" required maxlength="100" pattern="${ACCOUNT_NAME_PATTERN}" autocomplete="organization" value="${view.accountName ?? ''}" aria-describedby="account-name-rule" autofocus>
<p id="account-name-rule" class="note">Letters, digits, ".", "_" or "-", starting with a letter or digit; for example acme or studio-ria.</p>
<label for="display-name">Your name <span class="optional">(optional)</span></label>
<input id="display-name" name="displayName" type="text" autocomplete="name" maxlength="100" value="${view.displayName ?? ''}">
${passwordFields(false)}
<button type="submit">Create the account and sign in</button>
</form>
<p class="note">This link works once, until ${view.expiresAt.toISOString().replace('T', ' ').slice(0, 16)} UTC.</p>`,
  );
}
