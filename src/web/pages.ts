/**
 * The dashboard's pages: plain HTML forms that work without JavaScript.
 * Protect answers with the marked file as a download (the page stays where
 * it is); verify answers with a result page. Every form carries the
 * session's form token in its action, so a page of another site cannot post
 * one (src/http/routes/dashboard.ts checks it before any work is done).
 */
import type { VerifyDetails, VerifyResult } from '../app/verify-image.js';
import type { Principal } from '../app/ports.js';
import type { UsageReport } from '../app/usage.js';
import { DATA_MINING_LABELS, DEFAULT_CODE, PROHIBITED_CODES } from '../core/xmp/vocabulary.js';
import { html, type Html } from './html.js';

export const STYLE_PATH = '/dashboard/style.css';

function page(title: string, main: Html, header?: Html): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · optmark</title>
<link rel="stylesheet" href="${STYLE_PATH}">
</head>
<body>
<header><a class="brand" href="/dashboard">optmark</a>${header}</header>
<main>
${main}
</main>
<footer>The opt-out records a machine-readable rights reservation (IPTC/PLUS Data Mining). It may deter some reuse; it does not guarantee that AI systems comply.</footer>
</body>
</html>
`.text;
}

function signOutForm(formToken: string, principal: Principal): Html {
  return html`<form class="who" method="post" action="/dashboard/sign-out?form=${formToken}">
<span>${principal.accountName} · ${principal.plan}</span> <button type="submit">Sign out</button>
</form>`;
}

export function signInPage(): string {
  return page(
    'Sign in',
    html`<h1>Sign in</h1>
<p>Sign in with one of your account's API keys. The dashboard uses the same monthly limits as the API: what you mark or check here counts like an API call.</p>
<form method="post" action="/dashboard/sign-in">
<label for="key">API key</label>
<input id="key" name="key" type="password" autocomplete="current-password" spellcheck="false" required>
<button type="submit">Sign in</button>
</form>`,
  );
}

function allowanceRow(name: string, a: UsageReport['protect']): Html {
  return html`<tr><th scope="row">${name}</th><td>${a.used}</td><td>${a.limit}</td><td>${a.remaining}</td></tr>`;
}

export interface DashboardView {
  readonly principal: Principal;
  readonly usage: UsageReport;
  readonly formToken: string;
}

export function dashboardPage(view: DashboardView): string {
  const { principal, usage, formToken } = view;
  // The first choice asks for no value: a file that already opts out keeps its own (app/protect-image.ts).
  const options = [
    html`<option value="" selected>The image's own opt-out if it has one, otherwise ${DATA_MINING_LABELS[DEFAULT_CODE]} (${DEFAULT_CODE})</option>`,
    ...PROHIBITED_CODES.map((code) => html`<option value="${code}">${DATA_MINING_LABELS[code]} (${code})</option>`),
  ];
  return page(
    'Dashboard',
    html`<h1>Dashboard</h1>
<section aria-labelledby="usage">
<h2 id="usage">This month</h2>
<table>
<thead><tr><th></th><th>Used</th><th>Limit</th><th>Left</th></tr></thead>
<tbody>${allowanceRow('Marked', usage.protect)}${allowanceRow('Checked', usage.verify)}</tbody>
</table>
<p class="note">The limits reset at <time datetime="${usage.resetsAt}">${usage.resetsAt.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}</time>.</p>
</section>

<section aria-labelledby="protect">
<h2 id="protect">Mark an image</h2>
<p>Writes the opt-out into the image's metadata and signs it. Every pixel and every other byte of the file stay as they are. Your browser downloads the marked copy; its name and type may differ from the file you chose.</p>
<p class="note">An image that already opts out keeps the value it carries unless you choose another one below; the download's <code>Optmark-Opt-Out</code> header says <code>kept</code> and the value when it did, <code>written</code> otherwise.</p>
<p class="note">An image with Content Credentials (a C2PA manifest) loses their validity when marked: the manifest's signature covers bytes that marking changes. Check such an image first; the check says whether it carries a manifest.</p>
<form method="post" action="/dashboard/protect?form=${formToken}" enctype="multipart/form-data">
<label for="value">Opt-out</label>
<select id="value" name="value">${options}</select>
<label class="check"><input type="checkbox" name="fingerprint" value="on"> Also add the experimental in-pixel fingerprint</label>
<p class="note">The fingerprint is an invisible mark in the pixels that can survive the metadata being stripped, re-compression and resizing. Adding it re-encodes the image (PNG and lossless WebP stay lossless; JPEG and lossy WebP are written at high quality), so the file is no longer byte-for-byte your original; a file that already carries the mark is not marked again. It is evidence for this service's key, not proof of authorship, and it does not survive rotation, heavy crops or regeneration by AI models.</p>
<label for="protect-image">Image (JPEG, PNG or WebP)</label>
<input id="protect-image" name="image" type="file" accept="image/jpeg,image/png,image/webp" required>
<button type="submit">Mark and download</button>
</form>
</section>

<section aria-labelledby="verify">
<h2 id="verify">Check an image</h2>
<p>Reads the opt-out and the other signals an image carries, checks our signature and looks for the fingerprint.</p>
<form method="post" action="/dashboard/verify?form=${formToken}" enctype="multipart/form-data">
<label for="verify-image">Image (JPEG, PNG or WebP)</label>
<input id="verify-image" name="image" type="file" accept="image/jpeg,image/png,image/webp" required>
<button type="submit">Check</button>
</form>
</section>`,
    signOutForm(formToken, principal),
  );
}

function fingerprintText(f: VerifyResult['fingerprint']): string {
  // No block: too small, too flat, or not decodable: nothing was examined, so nothing is claimed either way.
  if (f.blocks === 0) return 'not examined: the image is too small or too flat to carry it, or its pixels cannot be decoded';
  return `${f.present ? 'found' : 'not found'}: ${Math.round(f.confidence * 1000) / 10} % of ${f.blocks} blocks match`;
}

/** Every signal found; those the API's `signals` leaves out (no plus:DataMining field) say so. */
function signalsText(result: VerifyResult, details: VerifyDetails): string {
  if (details.signals.length === 0) return 'none';
  const outside = details.signals.filter((s) => !result.signals.includes(s));
  if (outside.length === 0) return details.signals.join(', ');
  return `${details.signals.join(', ')} (the API's signals lists none of them: the file has no IPTC Data Mining field)`;
}

export interface VerifyView {
  readonly principal: Principal;
  readonly formToken: string;
  readonly filename: string | undefined;
  readonly result: VerifyResult;
  readonly details: VerifyDetails;
}

export function verifyPage(view: VerifyView): string {
  const { result, details } = view;
  const { provenance, fingerprint } = result;
  const values = details.dataMining.map((d) => html`<li><code>${d.value}</code>${d.label ? html` (${d.label})` : ''}</li>`);
  return page(
    'Check result',
    html`<h1>${view.filename ?? 'The image'}: ${result.optedOut ? 'opted out' : 'not opted out'}</h1>
<table class="result">
<tbody>
<tr><th scope="row">Opt-out (IPTC Data Mining)</th><td>${result.optedOut ? 'yes: AI training is reserved' : 'no'}</td></tr>
<tr><th scope="row">Data Mining values</th><td>${values.length ? html`<ul>${values}</ul>` : 'none'}</td></tr>
<tr><th scope="row">Signals</th><td>${signalsText(result, details)}</td></tr>
<tr><th scope="row">Our signature</th><td>${provenance.present ? (provenance.verifiable ? (provenance.valid ? 'present and valid' : 'present, not valid (the file or the tag was changed)') : 'present, cannot be checked (a key this service does not know, or an unreadable tag)') : 'absent'}</td></tr>
<tr><th scope="row">Fingerprint (experimental)</th><td>${fingerprintText(fingerprint)}</td></tr>
<tr><th scope="row">Format</th><td>${details.mimeType}</td></tr>
<tr><th scope="row">C2PA manifest</th><td>${details.c2pa.present ? 'yes: marking this file would invalidate its signature' : 'no'}</td></tr>
<tr><th scope="row">SHA-256</th><td><code>${result.sha256}</code></td></tr>
</tbody>
</table>
${details.warnings.length ? html`<h2>Warnings</h2><ul>${details.warnings.map((w) => html`<li>${w}</li>`)}</ul>` : ''}
<p class="note">The fingerprint's match share is a statistic, not a guarantee of authorship: "found" means an unmarked image would match this well less than once in a million.</p>
<h2>As the API answers</h2>
<pre>${JSON.stringify(result, null, 2)}</pre>
<p><a href="/dashboard">Back to the dashboard</a></p>`,
    signOutForm(view.formToken, view.principal),
  );
}

export interface ErrorView {
  readonly status: number;
  readonly message: string;
  readonly code: string;
  readonly requestId: string;
}

export function errorPage(view: ErrorView): string {
  return page(
    'Error',
    html`<h1>That did not work</h1>
<p class="error" role="alert">${view.message}</p>
<p class="note">HTTP ${view.status} · <code>${view.code}</code> · request ${view.requestId}</p>
<p><a href="/dashboard">Back to the dashboard</a></p>`,
  );
}
