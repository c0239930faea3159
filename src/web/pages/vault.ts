/**
 * The Private Vault's page: how much of the account's room it uses (a
 * meter), the owner's switch (off, with the choice to delete what it holds),
 * a search by file name or hash, and the files kept, each with a preview of
 * its original and marked image, its downloads, and a box to choose it for
 * one ZIP or for deletion. Works without JavaScript: a deletion asks
 * first, on the page (vault.js asks in a dialog instead, and adds "choose
 * all" and the count chosen).
 */
import type { VaultFile, VaultStatus } from '../../app/vault/ports.js';
import type { Format } from '../format.js';
import { html, type Html } from '../html.js';
import { layout, notice, type PageContext } from '../layout.js';

export interface VaultView {
  readonly status: VaultStatus;
  readonly files: readonly VaultFile[];
  readonly total: number;
  readonly page: number;
  readonly pageSize: number;
  readonly query: { readonly q: string };
  readonly format: Format;
  readonly error?: string;
  readonly message?: string;
  /** A deletion asked for without its confirmation: the chosen files, or everything the vault holds. */
  readonly confirmDelete?: { readonly kind: 'chosen'; readonly files: readonly VaultFile[] } | { readonly kind: 'all'; readonly turnOff: boolean };
}

const fileUrl = (id: string, which: 'original' | 'marked', download = false) => `/vault/${id}/${which}${download ? '?download=1' : ''}`;

function meterSection(view: VaultView): Html {
  const f = view.format;
  const { used, limit, files } = view.status;
  const left = Math.max(0, limit - used);
  // A plan without room (Free) that still holds what it kept before: no "of 0 bytes".
  const text = limit === 0 ? `${f.bytes(used)} kept · this plan keeps nothing new` : `${f.bytes(used)} of ${f.bytes(limit)} used · ${f.bytes(left)} left`;
  return html`<section aria-labelledby="room-heading" class="usage">
<h2 id="room-heading">Room</h2>
<div class="meter" id="vault-meter" data-used="${used}" data-limit="${limit}">
<div class="meter-label"><span>Stored</span> <span class="meter-text">${text}</span></div>
<meter min="0" max="${Math.max(limit, used, 1)}" value="${used}" aria-label="Private Vault: ${text}"></meter>
</div>
<p class="note">${f.number(files)} marking${files === 1 ? '' : 's'} kept. Each distinct file counts once, exactly in bytes (${limit === 0 ? f.number(used) : `${f.number(used)} of ${f.number(limit)}`}): an original and its marked file are two.</p>
</section>`;
}

function settingsSection(context: PageContext, view: VaultView): Html {
  const { user, session, account } = context.signedIn!;
  const on = view.status.enabled;
  if (account.plan === 'free') {
    const kept = view.status.files;
    // An account moved to the Free plan keeps what its vault held: its owner may delete it.
    const leftOver =
      kept > 0 && user.role === 'owner'
        ? html`<p>This account's vault still holds ${view.format.number(kept)} marking${kept === 1 ? '' : 's'} kept before it moved to the Free plan: they stay until you delete them (or the account moves back to Pro or Lifetime).</p>
<form method="post" action="/vault/settings" class="inline">
<input type="hidden" name="csrf" value="${session.formToken}"><input type="hidden" name="enabled" value="off"><input type="hidden" name="files" value="delete">
<button type="submit" class="secondary" id="vault-delete-all">Delete the ${view.format.number(kept)} marking${kept === 1 ? '' : 's'} kept, bytes and all</button>
</form>`
        : html``;
    return html`<section aria-labelledby="settings-heading"><h2 id="settings-heading">Off</h2>
<p>The Private Vault is part of the Pro and Lifetime plans, with marking on the dashboard.</p>${leftOver}</section>`;
  }
  const state = on
    ? html`<p><strong>On.</strong> Every file marked on the Mark page, by anyone in the account, is kept here: the original as uploaded and the marked file. Files marked through the API are not.</p>`
    : html`<p><strong>Off.</strong> Nothing is kept. When an owner turns it on, every file marked on the Mark page is kept here, the original and the marked file, until someone deletes it.</p>`;
  if (user.role !== 'owner') return html`<section aria-labelledby="settings-heading"><h2 id="settings-heading">Private Vault is ${on ? 'on' : 'off'}</h2>${state}<p class="note">The account's owners turn it on or off. You see the files you marked; owners see every file of the account.</p></section>`;
  const control = on
    ? html`<form method="post" action="/vault/settings" class="stack vault-off">
<input type="hidden" name="csrf" value="${session.formToken}"><input type="hidden" name="enabled" value="off">
<fieldset><legend>When it is off, the files already kept</legend>
<div class="choice"><input type="radio" id="files-keep" name="files" value="keep" checked><label for="files-keep">Stay (listed, downloadable, deletable)</label></div>
<div class="choice"><input type="radio" id="files-delete" name="files" value="delete"><label for="files-delete">Are deleted now, bytes and all (${view.format.number(view.status.files)} marking${view.status.files === 1 ? '' : 's'})</label></div>
</fieldset>
<div class="actions"><button type="submit" class="secondary" id="vault-off">Turn the vault off</button></div>
</form>`
    : html`<form method="post" action="/vault/settings" class="inline">
<input type="hidden" name="csrf" value="${session.formToken}"><input type="hidden" name="enabled" value="on">
<button type="submit" id="vault-on">Turn the vault on</button>
</form>`;
  return html`<section aria-labelledby="settings-heading"><h2 id="settings-heading">Private Vault is ${on ? 'on' : 'off'}</h2>${state}${control}
<p class="note">Members see the files they marked; owners see every file of the account. The service's operators never see them.</p></section>`;
}

function searchForm(view: VaultView): Html {
  const { q } = view.query;
  return html`<form method="get" action="/vault" class="stack search" role="search" aria-label="Find files in the vault">
<label for="q">File name or SHA-256 <span class="optional">(original or marked; the first characters of a hash are enough)</span></label>
<input id="q" name="q" type="text" maxlength="200" value="${q}" autocomplete="off" spellcheck="false">
<div class="actions"><button type="submit">Search</button>${q ? html` <a href="/vault">Show all</a>` : ''}</div>
</form>`;
}

function fileRow(file: VaultFile, f: Format): Html {
  const name = file.original.name || file.marked.name || file.id;
  const box = `pick-${file.id}`;
  return html`<tr>
<td class="pick"><input type="checkbox" name="id" value="${file.id}" id="${box}" form="vault-files"><label for="${box}" class="visually-hidden">Choose ${name}</label></td>
<th scope="row"><span class="file-name">${name}</span></th>
<td data-label="Marked"><time datetime="${file.createdAt.toISOString()}">${f.dateTime(file.createdAt)}</time><br><span class="note">by ${file.userEmail}</span></td>
<td data-label="Size">${f.bytes(file.original.size)} → ${f.bytes(file.marked.size)}</td>
<td class="hashes" data-label="SHA-256"><span class="note">Original</span> <code>${file.original.sha256}</code><br><span class="note">Marked</span> <code>${file.marked.sha256}</code></td>
<td class="vault-actions">
<a href="${fileUrl(file.id, 'original', true)}" download>Original<span class="visually-hidden"> of ${name}</span></a>
<a href="${fileUrl(file.id, 'marked', true)}" download>Marked file<span class="visually-hidden"> of ${name}</span></a>
<details class="preview"><summary>Preview<span class="visually-hidden"> of ${name}</span></summary>
<div class="previews">
<figure><img src="${fileUrl(file.id, 'original')}" alt="The original of ${name}" loading="lazy" decoding="async"><figcaption>Original</figcaption></figure>
<figure><img src="${fileUrl(file.id, 'marked')}" alt="The marked file of ${name}" loading="lazy" decoding="async"><figcaption>Marked</figcaption></figure>
</div>
</details>
</td>
</tr>`;
}

function pages(view: VaultView): Html {
  const last = Math.max(1, Math.ceil(view.total / view.pageSize));
  if (last === 1) return html``;
  const link = (page: number) => {
    const params = new URLSearchParams();
    if (view.query.q) params.set('q', view.query.q);
    if (page > 1) params.set('page', String(page));
    const text = params.toString();
    return `/vault${text ? `?${text}` : ''}`;
  };
  return html`<nav class="pages" aria-label="Pages of the vault">
${view.page > 1 ? html`<a href="${link(view.page - 1)}" rel="prev">Newer</a>` : ''}
<span>Page ${view.format.number(view.page)} of ${view.format.number(last)}</span>
${view.page < last ? html`<a href="${link(view.page + 1)}" rel="next">Older</a>` : ''}
</nav>`;
}

/** "Delete these?": how many, that the bytes go, the confirming button and the way back. */
function deleteConfirmation(view: VaultView, csrf: string): Html {
  const asked = view.confirmDelete;
  if (!asked) return html``;
  const f = view.format;
  const markings = (n: number) => `${f.number(n)} marking${n === 1 ? '' : 's'}`;
  const n = asked.kind === 'chosen' ? asked.files.length : view.status.files;
  const question =
    asked.kind === 'chosen' ? `Delete the ${markings(n)} chosen from the vault?` : asked.turnOff ? `Turn the vault off and delete the ${markings(n)} it holds?` : `Delete the ${markings(n)} the vault holds?`;
  const fields =
    asked.kind === 'chosen'
      ? html`${asked.files.map((file) => html`<input type="hidden" name="id" value="${file.id}">`)}`
      : html`<input type="hidden" name="enabled" value="off"><input type="hidden" name="files" value="delete">`;
  return html`<div class="notice warning" role="group" aria-labelledby="confirm-delete">
<h2 id="confirm-delete" tabindex="-1" autofocus>${question}</h2>
${asked.kind === 'chosen' ? html`<ul class="paths">${asked.files.slice(0, 10).map((file) => html`<li>${file.original.name || file.id}</li>`)}</ul>${asked.files.length > 10 ? html`<p class="note">And ${f.number(asked.files.length - 10)} more.</p>` : ''}` : ''}
<p>The originals and the marked files go, and their bytes in storage. This cannot be undone; the service records of the markings stay.</p>
<div class="actions-row"><form class="inline" method="post" action="${asked.kind === 'chosen' ? '/vault/delete' : '/vault/settings'}">
<input type="hidden" name="csrf" value="${csrf}">${fields}<input type="hidden" name="confirm" value="yes">
<button type="submit" class="danger">Delete ${markings(n)}</button>
</form> <a class="button secondary" href="/vault">Keep ${n === 1 ? 'it' : 'them'}</a></div>
</div>`;
}

export function vaultPage(context: PageContext, view: VaultView): string {
  const f = view.format;
  const { session } = context.signedIn!;
  const searching = Boolean(view.query.q);
  const count = `${f.number(view.total)} marking${view.total === 1 ? '' : 's'}${searching ? ' found' : ' kept'}`;
  return layout(
    context,
    { title: 'Private Vault', current: 'vault', scripts: ['vault.js'] },
    html`<h1>Private Vault</h1>
<p>The originals and the marked files of the account's markings on the dashboard, sealed (AES-256-GCM) in this service's storage: nobody who copies the disk or the bucket can read them, and a file deleted here is deleted from storage.</p>
${notice('error', view.error)}${notice('success', view.message)}
${deleteConfirmation(view, session.formToken)}
${meterSection(view)}
${settingsSection(context, view)}
<section aria-labelledby="files-heading">
<h2 id="files-heading">${count}</h2>
${searchForm(view)}
${
  view.files.length
    ? html`<div class="table-scroll" tabindex="0" role="region" aria-labelledby="files-heading files-heading-table"><span id="files-heading-table" hidden>table</span><table class="records vault cards">
<thead><tr><th scope="col" class="pick"><span class="visually-hidden">Choose</span></th><th scope="col">File</th><th scope="col">Marked</th><th scope="col">Size</th><th scope="col">SHA-256</th><th scope="col">Files</th></tr></thead>
<tbody>${view.files.map((file) => fileRow(file, f))}</tbody>
</table></div>
<form method="post" action="/vault/download" id="vault-files" class="vault-files">
<input type="hidden" name="csrf" value="${session.formToken}">
<div class="actions choose-actions">
<button type="submit" formaction="/vault/download" id="download-chosen">Download chosen (zip)</button>
<button type="submit" formaction="/vault/delete" class="danger" id="delete-chosen">Delete chosen</button>
<span id="chosen-count" class="note" role="status"></span>
</div>
</form>
${pages(view)}`
    : html`<p>${searching ? 'No file matches.' : view.status.enabled ? 'Nothing kept yet: mark files on the Mark page.' : 'Nothing kept.'}</p>`
}
</section>`,
  );
}
