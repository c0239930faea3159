/**
 * The records page (the account's dated service records: search by file
 * name, hash and dates, a CSV export, each record's certificate and its
 * batch's, and the owner's switch for the public lookup), and the public
 * lookup's page (a marked file's hash: when this service marked it, with
 * which value, and the public JWS; nothing else).
 */
import type { PublicRecord, RecordLayer, ServiceRecord } from '../../app/records/ports.js';
import { valueLabel } from '../../app/records/records.js';
import type { Format } from '../format.js';
import { html, type Html } from '../html.js';
import { layout, notice, type PageContext } from '../layout.js';

export interface RecordsQuery {
  readonly q: string;
  readonly from: string;
  readonly to: string;
}

export interface RecordsView {
  readonly records: readonly ServiceRecord[];
  readonly total: number;
  readonly page: number;
  readonly pageSize: number;
  readonly query: RecordsQuery;
  readonly publicLookup: boolean;
  readonly format: Format;
  readonly error?: string;
  readonly message?: string;
}

const certificate = (id: string) => `/history/${id}/certificate.pdf`;
const batchCertificate = (id: string) => `/history/batches/${id}/certificate.pdf`;

function layerText(layers: readonly RecordLayer[]): string {
  return layers.map((l) => `Fingerprint ${l.state === 'added' ? 'added' : 'found'}${l.keyVersion === null ? '' : ` (secret version ${l.keyVersion})`}`).join('; ');
}

/** The query string of a search, with the page (empty parts left out). */
function queryString(query: RecordsQuery, page?: number): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value) params.set(name, value);
  if (page && page > 1) params.set('page', String(page));
  const text = params.toString();
  return text ? `?${text}` : '';
}

function publicLookupSection(context: PageContext, view: RecordsView): Html {
  const { user, session } = context.signedIn!;
  const on = view.publicLookup;
  const explanation = on
    ? html`<p><strong>On.</strong> Anyone who has a file your account marked can look its SHA-256 up at <code>/records/SHA-256</code> and read that this service marked it, when, with which value, and the public signed record. They see no file name, no person and no account, and nothing at all for an original's hash.</p>`
    : html`<p><strong>Off.</strong> Nobody outside the account can look your records up. When it is on, anyone who has a file your account marked can look its SHA-256 up at <code>/records/SHA-256</code> and read that this service marked it, when and with which value (no file name, person or account).</p>`;
  const control =
    user.role === 'owner'
      ? html`<form method="post" action="/history/public-lookup" class="inline">
<input type="hidden" name="csrf" value="${session.formToken}"><input type="hidden" name="enabled" value="${on ? 'off' : 'on'}">
<button type="submit" class="secondary">${on ? 'Turn the public lookup off' : 'Turn the public lookup on'}</button>
</form>`
      : html`<p class="note">The account's owners turn it on or off.</p>`;
  return html`<section aria-labelledby="public-heading">
<h2 id="public-heading">Public lookup</h2>
${explanation}
${control}
</section>`;
}

function searchForm(view: RecordsView): Html {
  const { q, from, to } = view.query;
  return html`<section aria-labelledby="search-heading">
<h2 id="search-heading">Find records</h2>
<form method="get" action="/history" class="stack search" role="search" aria-labelledby="search-heading">
<label for="q">File name or SHA-256 <span class="optional">(original or marked; the first characters of a hash are enough)</span></label>
<input id="q" name="q" type="text" maxlength="200" value="${q}" autocomplete="off" spellcheck="false">
<div class="dates">
<div><label for="from">From</label><input id="from" name="from" type="date" value="${from}" aria-describedby="dates-note"></div>
<div><label for="to">To</label><input id="to" name="to" type="date" value="${to}" aria-describedby="dates-note"></div>
</div>
<p id="dates-note" class="note">Days in UTC, both included.</p>
<div class="actions"><button type="submit">Search</button> <a class="button secondary" href="/history/export.csv${queryString(view.query)}" download>Export CSV</a>${q || from || to ? html` <a href="/history">Show all</a>` : ''}</div>
</form>
</section>`;
}

function recordRow(record: ServiceRecord, f: Format): Html {
  const layers = layerText(record.layers);
  return html`<tr>
<th scope="row"><span class="file-name">${record.fileName || '(no name)'}</span></th>
<td data-label="Marked"><time datetime="${record.createdAt.toISOString()}">${f.dateTime(record.createdAt)}</time></td>
<td data-label="Opt-out">${valueLabel(record.value)}${layers ? html`<br><span class="note">${layers}</span>` : ''}</td>
<td data-label="By">${record.userEmail}</td>
<td class="hashes" data-label="SHA-256"><span class="note">Original</span> <code>${record.sha256Original}</code><br><span class="note">Marked</span> <code>${record.sha256Marked}</code></td>
<td class="certificates"><a href="${certificate(record.id)}" download>Certificate <span class="visually-hidden">of ${record.fileName || record.id} </span>(PDF)</a>${
    record.batchId ? html`<br><a href="${batchCertificate(record.batchId)}" download>Batch certificate <span class="visually-hidden">of the batch of ${record.fileName || record.id} </span>(PDF)</a>` : ''
  }</td>
</tr>`;
}

function pages(view: RecordsView): Html {
  const last = Math.max(1, Math.ceil(view.total / view.pageSize));
  if (last === 1) return html``;
  return html`<nav class="pages" aria-label="Pages of records">
${view.page > 1 ? html`<a href="/history${queryString(view.query, view.page - 1)}" rel="prev">Newer</a>` : ''}
<span>Page ${view.format.number(view.page)} of ${view.format.number(last)}</span>
${view.page < last ? html`<a href="/history${queryString(view.query, view.page + 1)}" rel="next">Older</a>` : ''}
</nav>`;
}

export function recordsPage(context: PageContext, view: RecordsView): string {
  const f = view.format;
  const searching = Boolean(view.query.q || view.query.from || view.query.to);
  const count = `${f.number(view.total)} record${view.total === 1 ? '' : 's'}${searching ? ' found' : ''}`;
  return layout(
    context,
    { title: 'Records', current: 'records' },
    html`<h1>Records</h1>
<p>Every file marked on the Mark page, or by a repository scan's fix on its page, leaves a dated service record: when (UTC), who marked it, the file's name, the SHA-256 of the original and of the marked file, the opt-out written, the layers and the key id. This service signs each record with the same keys as the provenance tags, which anyone can check with its <a href="/.well-known/jwks.json">public keys</a>. Records cannot be changed or removed; they go only with the account. Files marked through the API have no record.</p>
${notice('error', view.error)}${notice('success', view.message)}
${publicLookupSection(context, view)}
${searchForm(view)}
<section aria-labelledby="list-heading">
<h2 id="list-heading">${count}</h2>
${
  view.records.length
    ? html`<div class="table-scroll" tabindex="0" role="region" aria-labelledby="list-heading list-heading-table"><span id="list-heading-table" hidden>table</span><table class="records cards">
<thead><tr><th scope="col">File</th><th scope="col">Marked</th><th scope="col">Opt-out</th><th scope="col">By</th><th scope="col">SHA-256</th><th scope="col">Certificates</th></tr></thead>
<tbody>${view.records.map((r) => recordRow(r, f))}</tbody>
</table></div>
${pages(view)}`
    : html`<p>${searching ? 'No record matches.' : context.signedIn!.account.plan === 'free' ? 'No records: marking images is part of the Pro and Lifetime plans.' : 'No records yet: mark files on the Mark page.'}</p>`
}
</section>`,
  );
}

export interface PublicRecordView {
  readonly sha256: string;
  readonly records: readonly PublicRecord[];
  readonly format: Format;
}

/** What anyone may see of a marked file's record: when, the value, the public JWS, and how to check it. */
export function publicRecordPage(context: PageContext, view: PublicRecordView): string {
  const f = view.format;
  const first = view.records[0]!;
  return layout(
    context,
    { title: 'Marked by this service', scripts: ['copy.js'] },
    html`<h1>Marked by this service</h1>
<p>The file with the SHA-256 <code class="hash">${view.sha256}</code> was marked by this service on <time datetime="${first.createdAt.toISOString()}">${f.dateTime(first.createdAt)}</time> with the IPTC Data Mining opt-out “${valueLabel(first.value)}” (<code>${first.value}</code>).</p>
${
  view.records.length > 1
    ? html`<p>It was marked ${f.number(view.records.length)} times:</p><ul>${view.records.map((r) => html`<li><time datetime="${r.createdAt.toISOString()}">${f.dateTime(r.createdAt)}</time>: ${valueLabel(r.value)}</li>`)}</ul>`
    : ''
}
<h2>The signed record</h2>
${view.records.map(
  (r, i) => html`<p class="note">Marked ${f.dateTime(r.createdAt)}: a compact JWS (EdDSA, Ed25519).</p>
<pre id="jws-${i + 1}" class="jws">${r.publicJws}</pre>
<p><button type="button" class="secondary" data-copy="jws-${i + 1}">Copy the signed record</button></p>`,
)}
<h2>How to check it</h2>
<ol>
<li>Fetch this service's <a href="/.well-known/jwks.json">public keys</a> (a JSON Web Key Set).</li>
<li>Verify the signed record with any JOSE library, with the key its header's <code>kid</code> names.</li>
<li>Compare: its <code>sha256Marked</code> is the SHA-256 of your file (<code>sha256sum FILE</code>).</li>
</ol>`,
  );
}
