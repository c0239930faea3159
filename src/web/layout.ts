/**
 * The frame of every page of the people's side: language, viewport, the one
 * stylesheet, the page's script modules (no inline script or style: the
 * Content-Security-Policy forbids both), a skip link, the navigation of a
 * signed-in person, and the note every page of an opt-out service owes its
 * readers.
 */
import type { SignedIn } from '../app/people/sessions.js';
import { API_PLANS } from '../app/ports.js';
import { html, type Html } from './html.js';

export type Section = 'overview' | 'mark' | 'check' | 'scans' | 'records' | 'vault' | 'keys' | 'account' | 'operator';

export interface PageContext {
  /** The URL of a built asset (`style.css`, `mark.js`), with its version for caching. */
  readonly asset: (name: string) => string;
  readonly signedIn?: SignedIn | undefined;
}

export interface LayoutOptions {
  readonly title: string;
  readonly current?: Section;
  /** Script modules of the page (built from src/web/client/). */
  readonly scripts?: readonly string[];
}

const SECTIONS: ReadonlyArray<[Section, string, string]> = [
  ['overview', '/overview', 'Overview'],
  ['mark', '/mark', 'Mark'],
  ['check', '/check', 'Check'],
  ['scans', '/scans', 'Scans'],
  ['records', '/history', 'Records'],
  ['vault', '/vault', 'Vault'],
  ['keys', '/keys', 'API keys'],
  ['account', '/account', 'Account'],
];

const PLAN_NAMES: Readonly<Record<string, string>> = { free: 'Free', pro: 'Pro', lifetime: 'Lifetime' };
export const planName = (plan: string) => PLAN_NAMES[plan] ?? plan;

function navigation(context: PageContext, current: Section | undefined): Html {
  const signedIn = context.signedIn;
  if (!signedIn) return html``;
  const { user, account, session } = signedIn;
  // Repository scans are part of the paid plans: a Free account finds the page's explanation at /scans, not a link.
  const own = SECTIONS.filter(([id]) => id !== 'scans' || API_PLANS.includes(account.plan));
  const sections: ReadonlyArray<[Section, string, string]> = user.operator ? [...own, ['operator', '/operator', 'Operator']] : own;
  const links = sections.map(
    ([id, href, label]) => html`<li><a href="${href}"${id === current ? html` aria-current="page"` : ''}>${label}</a></li>`,
  );
  return html`<nav aria-label="Main"><ul>${links}</ul></nav>
<form class="who" method="post" action="/sign-out">
<input type="hidden" name="csrf" value="${session.formToken}">
<span><span class="name">${user.displayName || user.email}</span> <span class="plan">${account.name} · ${planName(account.plan)}</span></span>
<button type="submit" class="secondary">Sign out</button>
</form>`;
}

export function layout(context: PageContext, options: LayoutOptions, main: Html): string {
  const formToken = context.signedIn?.session.formToken;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${formToken ? html`<meta name="csrf-token" content="${formToken}">` : ''}
<title>${options.title} · optmark</title>
<link rel="icon" href="${context.asset('icon.svg')}" type="image/svg+xml">
<link rel="stylesheet" href="${context.asset('style.css')}">
${(options.scripts ?? []).map((name) => html`<script type="module" src="${context.asset(name)}"></script>`)}
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header>
<a class="brand" href="${context.signedIn ? '/overview' : '/'}">optmark</a>
${navigation(context, options.current)}
</header>
<main id="main" tabindex="-1">
${main}
</main>
<footer><p>The opt-out is a machine-readable rights reservation (IPTC/PLUS Data Mining). It may deter some reuse; it does not guarantee that AI systems comply.</p>
<p><a href="/api">The API, for developers</a></p></footer>
</body>
</html>
`.text;
}

/**
 * A message for the person, announced to screen readers: `alert` for what
 * went wrong, `status` for what happened. `focus`: the page answers a form
 * far down it (at phone width the answer would load scrolled to the top,
 * the message out of sight), so the message takes the focus, and the view.
 */
export function notice(kind: 'error' | 'success' | 'info', text: Html | string | undefined, options: { readonly focus?: boolean; readonly id?: string } = {}): Html {
  if (text === undefined || text === '') return html``;
  return html`<div class="notice ${kind}" role="${kind === 'error' ? 'alert' : 'status'}"${options.id ? html` id="${options.id}"` : ''}${options.focus ? html` tabindex="-1" autofocus` : ''}>${text}</div>`;
}
