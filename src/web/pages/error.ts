/**
 * The page a person gets when something fails outside a form that could
 * show the problem itself: what happened in words, and the request id to
 * quote when reporting it.
 */
import { html } from '../html.js';
import { layout } from '../layout.js';

export interface ErrorView {
  readonly status: number;
  readonly message: string;
  readonly code: string;
  readonly requestId: string;
}

/** Built-asset URLs without their version (this page is made where the asset list is not at hand; the stylesheet is then cached for minutes). */
const plainAsset = (name: string) => `/assets/${name}`;

export function errorPage(view: ErrorView): string {
  return layout(
    { asset: plainAsset },
    { title: 'Error' },
    html`<h1>That did not work</h1>
<div class="notice error" role="alert"><p>${view.message}</p></div>
<p class="note">HTTP ${view.status} · <code>${view.code}</code> · request ${view.requestId}</p>
<p><a href="/overview">Back to the overview</a></p>`,
  );
}
