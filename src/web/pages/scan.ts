/**
 * One scan's page. While it is queued or running: its progress (a page
 * script polls and updates it; without JavaScript, a refresh link) and a
 * Cancel button. Once it has ended: the summary in words, the coverage
 * meter, the report table with a filter by status, its exports (CSV and
 * JSON, as the API's report), and the fix: the images without the opt-out
 * marked after a confirmation page that says how many and what they use of
 * the month's protections, as a zip keeping the repository's paths or as a
 * branch pushed to the repository.
 */
import { API_PLANS } from '../../app/ports.js';
import { FINISHED_STATES, type ItemStatus, type Scan, type ScanItem } from '../../app/scans/ports.js';
import type { UsageReport } from '../../app/usage.js';
import { DATA_MINING_LABELS, type DataMiningCode } from '../../core/xmp/vocabulary.js';
import type { Format } from '../format.js';
import { breakable, html, type Html } from '../html.js';
import { layout, notice, type PageContext } from '../layout.js';
import { coveragePercent, coverageWords, repositoryName, repositoryNameHtml, stateWords } from './scans.js';

/** Report rows the page shows at most; the exports hold every one. */
export const REPORT_ROWS = 500;

export const ITEM_STATUS_WORDS: Readonly<Record<ItemStatus, string>> = {
  optedOut: 'Carries the opt-out',
  notOptedOut: 'No opt-out',
  failed: 'Could not be read',
  skipped: 'Skipped',
};
const ITEM_STATUSES = Object.keys(ITEM_STATUS_WORDS) as ItemStatus[];
export const isItemStatus = (text: string): text is ItemStatus => (ITEM_STATUSES as string[]).includes(text);

export interface Pushed {
  readonly branch: string;
  readonly commit: string | null;
  readonly marked: number;
  readonly failed: ReadonlyArray<{ readonly path: string; readonly reason: string }>;
}

export interface ScanView {
  readonly scan: Scan;
  /** The report (once ended), all of it; the page filters and shows the first REPORT_ROWS. */
  readonly items: readonly ScanItem[];
  /** The status the table is filtered by, or '' for every image. */
  readonly filter: ItemStatus | '';
  readonly format: Format;
  readonly message?: string;
  readonly error?: string;
  readonly pushed?: Pushed;
}

const plural = (n: number, one: string, many: string) => (n === 1 ? one : many);

function valueWords(value: string | null): string {
  if (value === null) return '';
  const code = value.slice(value.lastIndexOf('/') + 1);
  return DATA_MINING_LABELS[code as DataMiningCode] ?? value;
}

function provenanceWords(p: ScanItem['provenance']): string {
  if (p === null) return 'Not read';
  if (!p.present) return 'None';
  if (!p.verifiable) return 'Signed elsewhere (cannot be checked here)';
  return p.valid ? 'Signed by this service, unchanged' : 'Changed after signing';
}

/** The counts in a sentence: what was found, what carries the opt-out, what does not, what could not be read. */
export function summaryWords(scan: Scan, f: Format): string {
  const s = scan.summary;
  const parts = [
    `${f.number(s.optedOut)} ${plural(s.optedOut, 'carries', 'carry')} the opt-out`,
    `${f.number(s.notOptedOut)} ${plural(s.notOptedOut, 'does', 'do')} not`,
    ...(s.failed ? [`${f.number(s.failed)} could not be read`] : []),
    ...(s.skipped ? [`${f.number(s.skipped)} ${plural(s.skipped, 'was', 'were')} skipped`] : []),
  ];
  const found = s.images === 0 ? 'No images' : `${f.number(s.images)} ${plural(s.images, 'image', 'images')}`;
  const others = s.otherFiles ? ` ${f.number(s.otherFiles)} other ${plural(s.otherFiles, 'file was not an image', 'files were not images')}.` : '';
  if (scan.state === 'done') return s.images === 0 ? `No images found in this repository.${others}` : `${found} found: ${parts.join(', ')}.${others}`;
  return s.images === 0 ? 'No images were checked.' : `Before it ended, ${found.toLowerCase()} ${plural(s.images, 'was', 'were')} looked at: ${parts.join(', ')}.`;
}

/** What the progress says (the page script says the same, from the progress JSON). */
export function progressWords(scan: Pick<Scan, 'state' | 'total' | 'processed' | 'summary'>, f: Format): string {
  if (scan.state === 'queued') return 'Waiting for a place to run: scans start in the order they were made.';
  if (scan.total === null) return 'Fetching the repository…';
  return `Looked at ${f.number(scan.processed)} of ${f.number(scan.total)} ${plural(scan.total, 'file', 'files')}; ${f.number(scan.summary.images)} ${plural(scan.summary.images, 'image', 'images')} checked so far.`;
}

function facts(scan: Scan, f: Format): Html {
  return html`<dl class="facts">
<dt>Repository</dt><dd><code>${breakable(scan.repository)}</code></dd>
<dt>Branch or tag</dt><dd>${scan.ref ?? 'the default branch'}</dd>
${scan.commit ? html`<dt>Commit</dt><dd><code class="hash">${scan.commit}</code></dd>` : ''}
<dt>Started</dt><dd><time datetime="${scan.createdAt.toISOString()}">${f.dateTime(scan.createdAt)}</time></dd>
${scan.finishedAt ? html`<dt>Ended</dt><dd><time datetime="${scan.finishedAt.toISOString()}">${f.dateTime(scan.finishedAt)}</time></dd>` : ''}
${scan.withToken ? html`<dt>Read token</dt><dd>used for the scan, not kept</dd>` : ''}
<dt>Report kept until</dt><dd>${f.date(scan.expiresAt)}</dd>
</dl>`;
}

function progressSection(context: PageContext, scan: Scan, f: Format): Html {
  const csrf = context.signedIn!.session.formToken;
  const bar = scan.total === null || scan.state === 'queued' ? html`<progress id="scan-bar" aria-labelledby="progress-heading"></progress>` : html`<progress id="scan-bar" aria-labelledby="progress-heading" max="${Math.max(1, scan.total)}" value="${scan.processed}"></progress>`;
  return html`<section aria-labelledby="progress-heading" class="scan-progress" data-progress="/scans/${scan.id}/progress">
<h2 id="progress-heading">Progress</h2>
${bar}
<p id="scan-counts">${progressWords(scan, f)}</p>
<p id="scan-announce" class="visually-hidden" role="status" aria-live="polite"></p>
<p class="note" id="scan-refresh"><a href="/scans/${scan.id}">Refresh to see the progress</a>. The page follows it by itself when JavaScript runs.</p>
${
  API_PLANS.includes(context.signedIn!.account.plan)
    ? html`<form method="post" action="/scans/${scan.id}/cancel" class="inline"><input type="hidden" name="csrf" value="${csrf}"><button type="submit" class="danger">Cancel the scan</button></form>`
    : ''
}
</section>`;
}

/**
 * What an ended scan shows under its summary. With no image checked there is
 * no coverage to show (a full meter saying 100 % of nothing read as a success
 * on a scan that failed), and a scan that failed or was cancelled before any
 * image has no report either: its summary and reason say it all.
 */
function endedSections(context: PageContext, scan: Scan, view: ScanView, fixable: number): Html {
  if (scan.summary.images === 0) return scan.state === 'done' ? reportSection(scan, view) : html``;
  return html`${coverageSection(scan, view.format)}${fixSection(context, scan, fixable, view.pushed)}${reportSection(scan, view)}`;
}

function coverageSection(scan: Scan, f: Format): Html {
  const s = scan.summary;
  return html`<section aria-labelledby="coverage-heading" class="coverage">
<h2 id="coverage-heading">Coverage</h2>
<div class="meter">
<div class="meter-label"><span id="coverage-words">${coverageWords(s, f)}</span> <span class="meter-text">${coveragePercent(s, f)} · ${f.number(s.optedOut)} / ${f.number(s.images)}</span></div>
<meter min="0" max="${Math.max(1, s.images)}" value="${s.images === 0 ? 1 : s.optedOut}" aria-labelledby="coverage-words"></meter>
</div>
</section>`;
}

function fixSection(context: PageContext, scan: Scan, fixable: number, pushed: Pushed | undefined): Html {
  if (pushed) {
    return html`<section aria-labelledby="fix-heading">
<h2 id="fix-heading">The fix</h2>
<p>The branch <code class="branch">${pushed.branch}</code> is pushed to the repository with ${pushed.marked} marked ${plural(pushed.marked, 'image', 'images')}${pushed.commit ? html` (commit <code>${pushed.commit.slice(0, 12)}</code>)` : ''}. Open a pull request from it to merge the opt-out. Each marked file has a dated service record on the <a href="/history">Records page</a>.</p>
${pushed.failed.length ? html`<p>Not marked:</p><ul>${pushed.failed.map((x) => html`<li><code>${x.path}</code>: ${x.reason}</li>`)}</ul>` : ''}
</section>`;
  }
  if (fixable === 0 || scan.commit === null || (scan.state !== 'done' && scan.state !== 'failed')) return html``;
  if (!API_PLANS.includes(context.signedIn!.account.plan)) return html``;
  return html`<section aria-labelledby="fix-heading">
<h2 id="fix-heading">The fix</h2>
<p>${fixable} ${plural(fixable, 'image has', 'images have')} no opt-out. optmark can mark ${plural(fixable, 'it', 'them')} (the opt-out and this service's provenance tag, written without re-encoding) and give ${plural(fixable, 'it', 'them')} back as a zip keeping the repository's paths, or push a branch with the change.</p>
<p><a class="button" href="/scans/${scan.id}/fix">Mark the ${fixable} ${plural(fixable, 'image', 'images')} without the opt-out</a></p>
</section>`;
}

function reportSection(scan: Scan, view: ScanView): Html {
  const f = view.format;
  const shown = view.filter ? view.items.filter((i) => i.status === view.filter) : view.items;
  const rows = shown.slice(0, REPORT_ROWS);
  const count = `${f.number(shown.length)} ${plural(shown.length, 'image', 'images')}${view.filter ? `: ${ITEM_STATUS_WORDS[view.filter].toLowerCase()}` : ''}`;
  return html`<section aria-labelledby="report-heading">
<h2 id="report-heading">Report</h2>
<div class="report-tools">
<form method="get" action="/scans/${scan.id}" class="inline filter" aria-label="Filter the report">
<label for="status">Show</label>
<select id="status" name="status">
<option value=""${view.filter === '' ? html` selected` : ''}>Every image (${f.number(view.items.length)})</option>
${ITEM_STATUSES.map((s) => html`<option value="${s}"${view.filter === s ? html` selected` : ''}>${ITEM_STATUS_WORDS[s]} (${f.number(scan.summary[s])})</option>`)}
</select>
<button type="submit" class="secondary">Filter</button>
</form>
<p class="exports"><a href="/scans/${scan.id}/report.csv" download>Export CSV</a> <a href="/scans/${scan.id}/report.json" download>Export JSON</a></p>
</div>
<p id="report-count" role="status">${count}${shown.length > REPORT_ROWS ? ` (the first ${f.number(REPORT_ROWS)} are shown; the exports hold every one)` : ''}</p>
${
  rows.length
    ? html`<div class="table-scroll" tabindex="0" role="region" aria-labelledby="report-heading report-heading-table"><span id="report-heading-table" hidden>table</span><table class="cards report">
<thead><tr><th scope="col">Path</th><th scope="col">Status</th><th scope="col">Reason</th><th scope="col">Value</th><th scope="col">Provenance</th></tr></thead>
<tbody>${rows.map(
        (i) => html`<tr data-status="${i.status}"><th scope="row"><code>${i.path}</code></th><td data-label="Status"><span class="state ${i.status}">${ITEM_STATUS_WORDS[i.status]}</span></td><td data-label="Reason">${i.reason ?? ''}</td><td data-label="Value">${valueWords(i.value)}</td><td data-label="Provenance">${provenanceWords(i.provenance)}</td></tr>`,
      )}</tbody>
</table></div>`
    : ''
}
</section>`;
}

export function scanPage(context: PageContext, view: ScanView): string {
  const { scan } = view;
  const f = view.format;
  const ended = FINISHED_STATES.includes(scan.state);
  const fixable = scan.summary.notOptedOut;
  return layout(
    context,
    { title: `Scan of ${repositoryName(scan)}`, current: 'scans', scripts: ended ? [] : ['scan.js'] },
    html`<p class="breadcrumb"><a href="/scans">Scans</a></p>
<h1>Scan of <span class="repo">${repositoryNameHtml(scan)}</span></h1>
${notice('error', view.error)}${notice('success', view.message)}
<p class="scan-state"><span class="state ${scan.state}">${stateWords(scan.state)}</span>${scan.reason ? html`: ${scan.reason}` : ''}</p>
${ended ? html`<p class="summary" id="summary">${summaryWords(scan, f)}</p>` : ''}
${facts(scan, f)}
${ended ? endedSections(context, scan, view, fixable) : progressSection(context, scan, f)}`,
  );
}

export interface FixConfirmView {
  readonly scan: Scan;
  readonly paths: readonly string[];
  readonly usage: UsageReport;
  readonly format: Format;
  readonly error?: string;
  /** What was chosen when the fix was refused (never the token). */
  readonly mode?: 'zip' | 'push';
}

/** The confirmation: how many images, what they use of the month's protections, and how to get them. */
export function fixConfirmPage(context: PageContext, view: FixConfirmView): string {
  const { scan, paths, usage } = view;
  const f = view.format;
  const n = paths.length;
  const csrf = context.signedIn!.session.formToken;
  const enough = usage.protect.remaining >= n;
  const mode = view.mode ?? 'zip';
  return layout(
    context,
    { title: `Mark ${n} ${plural(n, 'image', 'images')}`, current: 'scans', scripts: ['fix.js'] },
    html`<p class="breadcrumb"><a href="/scans">Scans</a> › <a href="/scans/${scan.id}">Scan of ${repositoryNameHtml(scan)}</a></p>
<h1>Mark the ${f.number(n)} ${plural(n, 'image', 'images')} without the opt-out</h1>
${notice('error', view.error)}
<p class="confirm-words" id="confirm-words">This marks <strong>${f.number(n)} ${plural(n, 'image', 'images')}</strong> of <code>${scan.repository}</code> at the scanned commit with the IPTC Data Mining opt-out and this service's provenance tag. <strong>Each uses one of the account's protections this month</strong>: ${f.number(n)} of the ${f.number(usage.protect.remaining)} left (of ${f.number(usage.protect.limit)}; the count starts again on <time datetime="${usage.resetsAt}">${f.dateTime(usage.resetsAt)}</time>). Each marked file gets a dated service record, listed on the Records page.</p>
${
  enough
    ? html`<form method="post" action="/scans/${scan.id}/fix" class="stack fix-form" aria-describedby="confirm-words">
<input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="confirm" value="${n}">
<fieldset><legend>How to get the marked files</legend>
<label class="check"><input type="radio" name="mode" value="zip"${mode === 'zip' ? html` checked` : ''}> Download a zip, keeping the repository's paths</label>
<label class="check"><input type="radio" name="mode" value="push"${mode === 'push' ? html` checked` : ''}> Push a new branch to the repository (needs a token that may write)</label>
</fieldset>
<label for="fix-token">Token <span class="optional">(${scan.withToken ? 'needed: this repository was scanned with a read token' : 'needed only to push'})</span></label>
<input id="fix-token" name="token" type="password" maxlength="1024" autocomplete="off" spellcheck="false" aria-describedby="fix-token-note"${scan.withToken ? html` required` : ''}>
<p class="note" id="fix-token-note">Used for this fix only and never stored. The repository is fetched again at the scanned commit; a file changed since is not marked.</p>
<div class="actions"><button type="submit">Mark ${f.number(n)} ${plural(n, 'image', 'images')}</button> <a class="button secondary" href="/scans/${scan.id}">Back to the scan</a></div>
<p class="note" id="fix-status" role="status" aria-live="polite"></p>
</form>`
    : html`${notice('error', `The account has ${f.number(usage.protect.remaining)} protections left this month, fewer than the ${f.number(n)} this fix needs. Nothing was marked.`)}<p><a href="/scans/${scan.id}">Back to the scan</a></p>`
}
<section aria-labelledby="paths-heading">
<h2 id="paths-heading">The ${plural(n, 'image', 'images')} to mark</h2>
<ul class="paths">${paths.slice(0, REPORT_ROWS).map((p) => html`<li><code>${p}</code></li>`)}</ul>
${n > REPORT_ROWS ? html`<p class="note">And ${f.number(n - REPORT_ROWS)} more (the report's exports list every one).</p>` : ''}
</section>`,
  );
}
