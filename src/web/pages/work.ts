/**
 * The mark and check pages. With JavaScript (src/web/client/mark.ts,
 * check.ts) each takes a batch of up to 25 images with progress per file;
 * without it, the same form sends one image: marking answers with the marked
 * file, checking with a result page.
 */
import type { UsageReport } from '../../app/usage.js';
import type { Verdict } from '../../app/verdict.js';
import type { VerifyDetails, VerifyResult } from '../../app/verify-image.js';
import { MAX_OTHER_CONSTRAINTS_CHARACTERS, SEE_CONSTRAINT } from '../../core/xmp/other-constraints.js';
import { DATA_MINING_LABELS } from '../../core/xmp/vocabulary.js';
import type { Format } from '../format.js';
import { html, type Html } from '../html.js';
import { layout, notice, type PageContext } from '../layout.js';
import { meter } from './overview.js';

/**
 * The values the chooser offers (the two that point to a rights expression
 * are left out: optmark writes none). DMI-PROHIBITED-SEECONSTRAINT comes
 * with the constraints text it points to, written into plus:OtherConstraints.
 */
export const OFFERED_VALUES = ['DMI-PROHIBITED-AIMLTRAINING', 'DMI-PROHIBITED-GENAIMLTRAINING', 'DMI-PROHIBITED-EXCEPTSEARCHENGINEINDEXING', 'DMI-PROHIBITED', SEE_CONSTRAINT] as const;
export const BATCH_SIZE = 25;

export interface WorkView {
  readonly usage: UsageReport;
  readonly format: Format;
  readonly maxUploadBytes: number;
  readonly error?: string;
  /** The mark form as it was sent, shown again with an error (the file itself cannot be). */
  readonly markForm?: MarkForm;
}

/** The mark form's choices. */
export interface MarkForm {
  readonly value?: string;
  readonly otherConstraints?: string;
  readonly overwrite?: boolean;
  readonly fingerprint?: boolean;
}

/** Where files are picked or dropped, with the limits said before anything is sent. */
function dropZone(view: WorkView): Html {
  return html`<div class="drop" id="drop">
<label for="files">Images</label>
<input id="files" name="image" type="file" accept="image/jpeg,image/png,image/webp" multiple required aria-describedby="files-rule">
<p class="drop-hint" aria-hidden="true">or drop them here</p>
<p class="note" id="files-rule">Up to ${BATCH_SIZE} images at a time, ${view.format.bytes(view.maxUploadBytes)} each at most: JPEG, PNG or WebP.</p>
</div>`;
}

/** The live region the page scripts speak through, and the list of files they fill. */
function rowsList(): Html {
  return html`<div id="status" class="visually-hidden" role="status" aria-live="polite"></div>
<ol id="rows" class="rows" aria-label="Files"></ol>`;
}

function freePlan(): Html {
  return html`<p>Your account is on the Free plan, which does not include marking or checking images: they are part of the Pro and Lifetime plans. Ask the service's team to upgrade.</p>`;
}

function usageMeters(view: WorkView): Html {
  return html`<section aria-labelledby="usage" class="usage compact"><h2 id="usage" class="visually-hidden">This month</h2>
${meter('usage-protect', 'Marked this month', view.usage.protect, view.format)}
${meter('usage-verify', 'Checked this month', view.usage.verify, view.format)}</section>`;
}

export function markPage(context: PageContext, view: WorkView): string {
  const { account, session } = context.signedIn!;
  if (account.plan === 'free') return layout(context, { title: 'Mark images', current: 'mark' }, html`<h1>Mark images</h1>${freePlan()}`);
  const form = view.markForm ?? {};
  const chosen = OFFERED_VALUES.find((code) => code === form.value) ?? OFFERED_VALUES[0];
  const options = OFFERED_VALUES.map((code) => html`<option value="${code}"${code === chosen ? html` selected` : ''}>${DATA_MINING_LABELS[code]}</option>`);
  const checked = (on: boolean | undefined) => (on ? html` checked` : '');
  return layout(
    context,
    { title: 'Mark images', current: 'mark', scripts: ['mark.js'] },
    html`<h1>Mark images</h1>
<p>Marking writes the opt-out into each image's metadata and signs it. Every pixel and every other byte of the file stay as they are, unless you add the experimental fingerprint below, which changes the pixels invisibly and so saves the image again. Files that already carry the opt-out are found first, in your browser, and skipped unless you ask.</p>
${usageMeters(view)}
${notice('error', view.error)}
<form id="work-form" class="stack" method="post" action="/mark" enctype="multipart/form-data" data-max-bytes="${view.maxUploadBytes}" data-batch-size="${BATCH_SIZE}">
<input type="hidden" name="csrf" value="${session.formToken}">
<label for="value">Opt-out to write</label>
<select id="value" name="value" aria-describedby="value-note">${options}</select>
<p id="value-note" class="note">The IPTC Data Mining values. A file that already carries one of them keeps it, unless you choose another here and tick "Write my choice".</p>
<div class="field" id="constraints-field">
<label for="other-constraints">Constraints text</label>
<input id="other-constraints" name="otherConstraints" type="text" maxlength="${MAX_OTHER_CONSTRAINTS_CHARACTERS}" value="${form.otherConstraints ?? ''}" aria-describedby="other-constraints-note">
<p id="other-constraints-note" class="note">Needed with "${DATA_MINING_LABELS[SEE_CONSTRAINT]}", and only with it: the terms that value points to, written into each image's plus:OtherConstraints. One line, at most ${MAX_OTHER_CONSTRAINTS_CHARACTERS.toLocaleString('en')} characters. A file that keeps its own opt-out keeps its own text.</p>
</div>
<label class="check"><input type="checkbox" name="overwrite" value="on"${checked(form.overwrite)}> Write my choice even where a file carries another opt-out</label>
<fieldset>
<legend>Optional layers</legend>
<label class="check"><input type="checkbox" name="fingerprint" value="on" aria-describedby="fingerprint-note"${checked(form.fingerprint)}> Experimental in-pixel fingerprint</label>
<p id="fingerprint-note" class="note">An invisible mark in the pixels that can survive the metadata being stripped; adding it re-encodes the image, so the file's size changes (shown for each file).</p>
</fieldset>
${dropZone(view)}
<label class="check js-only"><input type="checkbox" id="include-marked"> Mark files that already carry the opt-out too</label>
<div class="actions"><button type="submit" id="start">Mark</button> <button type="button" id="download-all" class="secondary js-only" disabled>Download all (zip)</button></div>
<p class="note no-js">Without JavaScript, the first image is marked and downloaded; turn JavaScript on for batches.</p>
</form>
${rowsList()}`,
  );
}

export function checkPage(context: PageContext, view: WorkView): string {
  const { account, session } = context.signedIn!;
  if (account.plan === 'free') return layout(context, { title: 'Check images', current: 'check' }, html`<h1>Check images</h1>${freePlan()}`);
  return layout(
    context,
    { title: 'Check images', current: 'check', scripts: ['check.js'] },
    html`<h1>Check images</h1>
<p>Checking reads whether each image carries the opt-out and the other signals, whether this service signed it, and looks for the fingerprint in its pixels.</p>
${usageMeters(view)}
${notice('error', view.error)}
<form id="work-form" class="stack" method="post" action="/check" enctype="multipart/form-data" data-max-bytes="${view.maxUploadBytes}" data-batch-size="${BATCH_SIZE}">
<input type="hidden" name="csrf" value="${session.formToken}">
${dropZone(view)}
<div class="actions"><button type="submit" id="start">Check</button></div>
<p class="note no-js">Without JavaScript, the first image is checked; turn JavaScript on for batches.</p>
</form>
${rowsList()}`,
  );
}

export interface CheckResultView {
  readonly filename: string | undefined;
  readonly result: VerifyResult;
  readonly details: VerifyDetails;
  readonly verdict: Verdict;
  /** The account's record of this file (it is that marking's output, or its original), if any. */
  readonly record: RecordLink | null;
  readonly format: Format;
}

/** How a check links a file to the account's record of it (http/web/app-routes.ts, recordLink). */
export interface RecordLink {
  readonly recordId: string;
  readonly createdAt: string;
  readonly as: 'marked' | 'original';
  readonly fileName: string;
  readonly certificate: string;
  readonly page: string;
}

/** The sentence and links a check shows for a file the account has a record of. */
export function recordNote(record: RecordLink, f: Format): Html {
  const what = record.as === 'marked' ? 'This is the file your account marked' : 'This is the original of a file your account marked';
  return html`<p class="record-link">${what} on ${f.dateTime(record.createdAt)}${record.fileName ? html` (${record.fileName})` : ''}: <a href="${record.page}">its record</a> · <a href="${record.certificate}" download>certificate (PDF)</a></p>`;
}

/** One image's check without JavaScript: the verdict in words first, then the detail. */
export function checkResultPage(context: PageContext, view: CheckResultView): string {
  const { result, details, verdict } = view;
  return layout(
    context,
    { title: 'Check result', current: 'check', scripts: ['copy.js'] },
    html`<h1>${view.filename ?? 'The image'}</h1>
${verdictBlock(verdict)}
<dl class="facts">
<dt>Signature</dt><dd>${verdict.signature}</dd>
<dt>Fingerprint (experimental)</dt><dd>${verdict.fingerprint}</dd>
${verdict.otherSignals.length ? html`<dt>Other signals</dt><dd><ul>${verdict.otherSignals.map((s) => html`<li>${s}</li>`)}</ul></dd>` : ''}
${details.dataMining.length ? html`<dt>Data Mining values</dt><dd><ul>${details.dataMining.map((d) => html`<li>${d.label ?? d.value}</li>`)}</ul></dd>` : ''}
${details.otherConstraints !== null ? html`<dt>Constraints (plus:OtherConstraints)</dt><dd>${details.otherConstraints}</dd>` : ''}
<dt>Content Credentials (C2PA)</dt><dd>${details.c2pa.present ? 'Present: marking this file would invalidate their signature.' : 'None.'}</dd>
<dt>SHA-256</dt><dd class="copy-row"><code id="sha256">${result.sha256}</code> <button type="button" class="secondary" data-copy="sha256">Copy</button></dd>
<dt>Service record</dt><dd>${view.record ? recordNote(view.record, view.format) : 'None of your account’s records has this SHA-256.'}</dd>
</dl>
${details.warnings.length ? html`<h2>Warnings</h2><ul>${details.warnings.map((w) => html`<li>${w}</li>`)}</ul>` : ''}
<details><summary>As the API answers</summary><pre>${JSON.stringify(result, null, 2)}</pre></details>
<p><a href="/check">Check another image</a></p>`,
  );
}

export function verdictBlock(verdict: Verdict): Html {
  return html`<div class="verdict ${verdict.kind}"><p class="headline">${verdict.headline}</p><p>${verdict.explanation}</p></div>`;
}
