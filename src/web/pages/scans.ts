/**
 * The Scans page: a form to scan a repository (its URL, a branch or tag, a
 * read token used for that scan only), the person's scans of the day
 * against their daily limit, and the account's recent scans with their
 * coverage in words first. A Free account is told why it cannot scan.
 * What one scan's page and the list share (words for states and coverage)
 * lives here too.
 */
import { API_PLANS } from '../../app/ports.js';
import { FINISHED_STATES, type Scan, type ScanState, type ScanSummary } from '../../app/scans/ports.js';
import type { Format } from '../format.js';
import { breakable, html, type Html } from '../html.js';
import { layout, notice, planName, type PageContext } from '../layout.js';

export interface ScanForm {
  readonly repository: string;
  readonly ref: string;
}

export interface ScansView {
  readonly scans: readonly Scan[];
  /** The person's scans of the UTC day; undefined on a Free plan. */
  readonly today?: { readonly used: number; readonly limit: number; readonly resetsAt: Date };
  readonly now: Date;
  readonly format: Format;
  /** What was typed, kept when the scan was refused (never the token). */
  readonly form?: ScanForm;
  readonly error?: string;
  /** The refusal's code, to say more where it helps (when the day's limit resets). */
  readonly errorCode?: string;
  /** The field the refusal is about, marked invalid. */
  readonly errorField?: 'repository' | 'ref' | 'token';
  readonly message?: string;
}

const STATE_WORDS: Readonly<Record<ScanState, string>> = {
  queued: 'Waiting to start',
  running: 'Running',
  done: 'Done',
  failed: 'Failed',
  cancelled: 'Cancelled',
};
export const stateWords = (state: ScanState) => STATE_WORDS[state];

const plural = (n: number, one: string, many: string) => (n === 1 ? one : many);

/** "5 of 7 images carry the opt-out", the words before the numbers. */
export function coverageWords(summary: ScanSummary, f: Format): string {
  if (summary.images === 0) return 'No images found';
  return `${f.number(summary.optedOut)} of ${f.number(summary.images)} ${plural(summary.images, 'image', 'images')} ${summary.optedOut === 1 && summary.images === 1 ? 'carries' : 'carry'} the opt-out`;
}

/** The share of images opted out, as a percentage in the reader's locale (100 % when there are none). */
export function coveragePercent(summary: ScanSummary, f: Format): string {
  const ratio = summary.images === 0 ? 1 : summary.optedOut / summary.images;
  return new Intl.NumberFormat(f.locale, { style: 'percent', maximumFractionDigits: 0 }).format(ratio);
}

/** The repository as people read it: its URL, and the branch or tag when one was named. */
export function repositoryName(scan: Pick<Scan, 'repository' | 'ref'>): string {
  return scan.ref ? `${scan.repository} (${scan.ref})` : scan.repository;
}

/** repositoryName for a page: breaking, on a narrow screen, after a slash (breakable). */
export function repositoryNameHtml(scan: Pick<Scan, 'repository' | 'ref'>): Html {
  return breakable(repositoryName(scan));
}

/** The coverage cell of a scan: in words once it has ended, what it has checked so far before. */
function coverageCell(scan: Scan, f: Format): Html {
  if (!FINISHED_STATES.includes(scan.state)) {
    return html`${scan.state === 'queued' ? 'Not started yet' : `${f.number(scan.summary.images)} ${plural(scan.summary.images, 'image', 'images')} checked so far`}`;
  }
  if (scan.summary.images === 0) return html`${scan.state === 'done' ? 'No images found' : 'No images checked'}`;
  return html`${coverageWords(scan.summary, f)} <span class="note">(${coveragePercent(scan.summary, f)}; ${f.number(scan.summary.notOptedOut)} without)</span>`;
}

function hoursUntil(now: Date, then: Date): string {
  const minutes = Math.max(1, Math.ceil((then.getTime() - now.getTime()) / 60_000));
  if (minutes < 60) return `${minutes} ${plural(minutes, 'minute', 'minutes')}`;
  const hours = Math.floor(minutes / 60);
  return `${hours} ${plural(hours, 'hour', 'hours')}${minutes % 60 ? ` ${minutes % 60} min` : ''}`;
}

function scanForm(context: PageContext, view: ScansView): Html {
  const csrf = context.signedIn!.session.formToken;
  const form = view.form ?? { repository: '', ref: '' };
  const invalid = (name: NonNullable<ScansView['errorField']>) => (view.error && view.errorField === name ? html` aria-invalid="true" aria-describedby="scan-error ${name}-note"` : html` aria-describedby="${name}-note"`);
  const today = view.today!;
  const resets = html`<time datetime="${today.resetsAt.toISOString()}">${view.format.dateTime(today.resetsAt)}</time>`;
  let error: Html | undefined;
  if (view.error) {
    const more =
      view.errorCode === 'scan_limit_reached'
        ? html` That is in ${hoursUntil(view.now, today.resetsAt)} (${resets}).`
        : view.errorCode === 'scans_paused'
          ? html` Your input is kept below: try again later.`
          : html``;
    error = html`<span id="scan-error">${view.error}${/[.!?]$/.test(view.error) ? '' : '.'}${more}</span>`;
  }
  return html`<section aria-labelledby="new-heading">
<h2 id="new-heading">Scan a repository</h2>
<p>optmark fetches the repository (the latest commit of its default branch, or the branch or tag you name), checks every JPEG, PNG and WebP image in it for the opt-out, and reports each one. Each image checked uses one of the account's checks of the month.</p>
<p class="today" id="scans-today"><strong>${view.format.number(today.used)} of ${view.format.number(today.limit)} scans today</strong> <span class="note">(yours; the count starts again at midnight UTC, ${resets})</span></p>
${error ? notice('error', error) : ''}
<form method="post" action="/scans" class="stack" aria-labelledby="new-heading">
<input type="hidden" name="csrf" value="${csrf}">
<label for="repository">Repository URL</label>
<input id="repository" name="repository" type="text" inputmode="url" required maxlength="2048" autocomplete="url" spellcheck="false" value="${form.repository}"${invalid('repository')}>
<p class="note" id="repository-note">For example https://github.com/owner/name.git. Only the sources this service allows can be scanned.</p>
<label for="ref">Branch or tag <span class="optional">(optional)</span></label>
<input id="ref" name="ref" type="text" maxlength="255" autocomplete="off" spellcheck="false" value="${form.ref}"${invalid('ref')}>
<p class="note" id="ref-note">Empty: the repository's default branch.</p>
<label for="token">Read token <span class="optional">(optional, for a private repository)</span></label>
<input id="token" name="token" type="password" maxlength="1024" autocomplete="off" spellcheck="false"${invalid('token')}>
<p class="note" id="token-note">Used for this scan only and never stored: it stays in the server's memory until the scan ends. It is never shown again, so you type it each time.</p>
<button type="submit">Scan the repository</button>
</form>
</section>`;
}

function scansTable(view: ScansView): Html {
  const f = view.format;
  if (view.scans.length === 0) return html`<p>No scans yet.</p>`;
  return html`<div class="table-scroll" tabindex="0" role="region" aria-labelledby="recent-heading recent-heading-table"><span id="recent-heading-table" hidden>table</span><table class="cards scans">
<thead><tr><th scope="col">Repository</th><th scope="col">Status</th><th scope="col">When</th><th scope="col">Coverage</th></tr></thead>
<tbody>${view.scans.map(
    (s) => html`<tr data-scan="${s.id}"><th scope="row"><a href="/scans/${s.id}">${repositoryNameHtml(s)}</a></th><td data-label="Status"><span class="state ${s.state}">${stateWords(s.state)}</span></td><td data-label="When"><time datetime="${s.createdAt.toISOString()}">${f.dateTime(s.createdAt)}</time></td><td data-label="Coverage">${coverageCell(s, f)}</td></tr>`,
  )}</tbody>
</table></div>`;
}

export function scansPage(context: PageContext, view: ScansView): string {
  const { account } = context.signedIn!;
  const paid = API_PLANS.includes(account.plan);
  return layout(
    context,
    { title: 'Scans', current: 'scans' },
    html`<h1>Repository scans</h1>
${notice('success', view.message)}
${
  paid
    ? scanForm(context, view)
    : html`<section aria-labelledby="new-heading"><h2 id="new-heading">Scan a repository</h2>
<p>Scanning a repository for images without the opt-out is part of the Pro and Lifetime plans; ${account.name} is on the ${planName(account.plan)} plan. To upgrade, ask the service's team.</p></section>`
}
<section aria-labelledby="recent-heading">
<h2 id="recent-heading">Recent scans of ${account.name}</h2>
<p class="note">Everyone of the account sees its scans and their reports; a report is kept for the plan's retention period.</p>
${scansTable(view)}
</section>`,
  );
}
