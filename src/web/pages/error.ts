/**
 * The page a person gets when something fails outside a form that could
 * show the problem itself: what happened in words, and the request id to
 * quote when reporting it.
 */
import type { SignedIn } from '../../app/people/sessions.js';
import { html } from '../html.js';
import { layout } from '../layout.js';

export interface ErrorView {
  readonly status: number;
  readonly message: string;
  readonly code: string;
  readonly requestId: string;
  /** The person, when signed in: the page keeps the site's navigation and sign-out, and is no dead end. */
  readonly signedIn?: SignedIn | undefined;
  /** A form was sent (a POST): its page is one step back. */
  readonly fromForm?: boolean;
}

/** Built-asset URLs without their version (this page is made where the asset list is not at hand; the stylesheet is then cached for minutes). */
const plainAsset = (name: string) => `/assets/${name}`;

export function errorPage(view: ErrorView): string {
  return layout(
    { asset: plainAsset, signedIn: view.signedIn },
    { title: 'Error' },
    html`<h1>That did not work</h1>
<div class="notice error" role="alert"><p>${view.message}</p></div>
<p class="note">HTTP ${view.status} · <code>${view.code}</code> · request ${view.requestId}</p>
<p>${view.signedIn && view.fromForm ? html`Your browser's Back button returns to the form as you left it; or go to <a href="/overview">the overview</a>.` : html`<a href="/overview">Back to the overview</a>`}</p>`,
  );
}
