/**
 * The public API page (`GET /api`, no sign-in): what the API does and does
 * not do, in words first; its operations, limits and plans (the limits read
 * from the limits table, the upload limit from the server's settings); a
 * curl and a TypeScript example; how a key is had; then the interactive
 * reference, rendered in the browser from /api/v1/openapi.json
 * (src/web/client/api-reference.ts).
 */
import type { AccountLimits, Plan } from '../../app/ports.js';
import type { Format } from '../format.js';
import { html, type Html } from '../html.js';
import { layout, planName, type PageContext } from '../layout.js';

export interface ApiPageView {
  /** The limits table's row of each plan (an account may have its own limits on top). */
  readonly planLimits: Readonly<Record<Plan, AccountLimits>>;
  /** The plans whose keys may call the API. */
  readonly apiPlans: readonly Plan[];
  readonly maxUploadBytes: number;
  /** This deployment's address, for the examples. */
  readonly baseUrl: string;
  readonly format: Format;
}

const PLANS: readonly Plan[] = ['free', 'pro', 'lifetime'];

function plansTable(view: ApiPageView): Html {
  const f = view.format;
  const rows = PLANS.map((plan) => {
    const limits = view.planLimits[plan];
    const included = view.apiPlans.includes(plan);
    return html`<tr><th scope="row">${planName(plan)}</th><td>${included ? 'Included' : 'Not included'}</td><td>${included && limits ? f.number(limits.protectPerMonth) : '–'}</td><td>${included && limits ? f.number(limits.verifyPerMonth) : '–'}</td></tr>`;
  });
  return html`<div class="table-scroll" tabindex="0" role="region" aria-labelledby="plans-heading plans-heading-table"><span id="plans-heading-table" hidden>table</span>
<table>
<thead><tr><th scope="col">Plan</th><th scope="col">API</th><th scope="col">Protect calls a month</th><th scope="col">Verify calls a month</th></tr></thead>
<tbody>${rows}</tbody>
</table>
</div>`;
}

export function apiPage(context: PageContext, view: ApiPageView): string {
  const f = view.format;
  const size = `${f.bytes(view.maxUploadBytes)} (${f.number(view.maxUploadBytes)} bytes)`;
  const base = view.baseUrl;
  const curl = `export OPTMARK_API_KEY=omk_...   # your key

# Mark photo.jpg; the answer is JSON, the marked image in imageBase64
curl -sS -H "Authorization: Bearer $OPTMARK_API_KEY" -F image=@photo.jpg \\
  ${base}/api/v1/protect | jq -r .imageBase64 | base64 -d > photo-optout.jpg

# Check it: "optedOut": true, and the signals found
curl -sS -H "Authorization: Bearer $OPTMARK_API_KEY" -F image=@photo-optout.jpg ${base}/api/v1/verify

# This month's usage of your account (free of charge)
curl -sS -H "Authorization: Bearer $OPTMARK_API_KEY" ${base}/api/v1/usage`;
  const typescript = `import { readFile } from 'node:fs/promises';
import { createClient, OptmarkError } from 'optmark/client';
import { saveResult } from 'optmark/client/node';

const client = createClient({ baseUrl: '${base}', apiKey: process.env.OPTMARK_API_KEY! });

try {
  const marked = await client.protect(new File([await readFile('photo.jpg')], 'photo.jpg'));
  console.log(marked.optOut);                    // { action: 'written', value: 'DMI-PROHIBITED-AIMLTRAINING' }
  await saveResult(marked, 'marked/');           // marked/photo-optout.jpg

  const report = await client.verify(marked.bytes);
  console.log(report.optedOut, report.signals);  // true, [...]

  const usage = await client.usage();
  console.log(\`\${usage.protect.remaining} protect calls left until \${usage.resetsAt}\`);
} catch (error) {
  if (error instanceof OptmarkError) console.error(error.code, error.message, error.requestId);
  else throw error;
}`;
  return layout(
    context,
    { title: 'The API', scripts: ['api-reference.js'] },
    html`<h1>The optmark API</h1>
<p class="lead">Programs can mark images with the AI-training opt-out, and check images for it, through optmark's HTTP API: the same work as the Mark and Check pages, for your own software.</p>

<section aria-labelledby="does">
<h2 id="does">What it does</h2>
<ul>
<li><strong>Protect</strong> writes the IPTC/PLUS Data Mining opt-out (the XMP field <code>plus:DataMining</code>, by default "prohibited for AI/ML training") into the image's metadata, losslessly: every pixel and every other byte of the file stays as it was. It also adds a provenance tag signed by this service, which anyone can check with the public keys at <a href="/.well-known/jwks.json">/.well-known/jwks.json</a>.</li>
<li><strong>Verify</strong> reads an image and says whether it opts out, and which other signals it carries: a TDMRep reservation, C2PA or CAWG training-and-data-mining assertions, this service's provenance tag.</li>
</ul>
<h2 id="does-not">What it does not do</h2>
<p>The opt-out is a machine-readable reservation of rights. It may deter some reuse, but it guarantees nothing: AI systems and the people who build them may ignore it, and a copy of the image can lose its metadata. optmark does not watch the web for your images and cannot remove them from data sets or models.</p>
</section>

<section aria-labelledby="operations">
<h2 id="operations">Operations</h2>
<dl class="facts">
<dt><code>POST /api/v1/protect</code></dt><dd>Write the opt-out into one image. The marked image comes back in the answer. Counts one protect call.</dd>
<dt><code>POST /api/v1/verify</code></dt><dd>Check one image for the opt-out and the other signals. Counts one verify call.</dd>
<dt><code>GET /api/v1/usage</code></dt><dd>This month's usage of your account: used, limit and what is left of each. Free of charge.</dd>
</dl>
<p>Each call sends one image as <code>multipart/form-data</code> (the part <code>image</code>) and the key in <code>Authorization: Bearer</code>. Every answer is JSON; a failure says what went wrong in words and in a code.</p>
<h3 id="limits">Limits</h3>
<ul>
<li>Images of up to ${size} each: JPEG, PNG and WebP.</li>
<li>A number of protect and verify calls per account each calendar month (UTC), below. A call that fails does not count, and sending the same image again with the same <code>Idempotency-Key</code> within 24 hours counts once. An account may have limits of its own: <code>GET /api/v1/usage</code> says yours.</li>
</ul>
<h3 id="plans-heading">Plans</h3>
${plansTable(view)}
<p class="note">The Free plan has no API access: its keys are refused (<code>403 plan_not_allowed</code>).</p>
</section>

<section aria-labelledby="examples">
<h2 id="examples">Examples</h2>
<h3 id="example-curl">With curl</h3>
<pre tabindex="0" aria-labelledby="example-curl"><code>${curl}</code></pre>
<h3 id="example-ts">In TypeScript, with the typed client</h3>
<p><code>optmark/client</code> comes with the optmark package (ask the service's team for it). It runs on Node.js 20.19 or later and in browsers, has the API's types, retries only what is safe to retry, and sends every image call with an <code>Idempotency-Key</code>, so a retry is never counted twice.</p>
<pre tabindex="0" aria-labelledby="example-ts"><code>${typescript}</code></pre>
</section>

<section aria-labelledby="keys">
<h2 id="keys">Getting a key</h2>
<p>API keys are issued by the service's team for approved integrations, to accounts on a plan with API access.</p>
<ol>
<li>Sign in and request access: say what your integration does.</li>
<li>The service's team reviews the request, and approves or declines it.</li>
<li>Once approved, the key is shown to you once, when it is issued. Store it at once in a secret store: optmark keeps only a digest of it and cannot show it again. A lost key is revoked and replaced by a new one.</li>
</ol>
<p><a class="button" href="/keys">Request access</a></p>
</section>

<section aria-labelledby="reference-heading">
<h2 id="reference-heading">Reference</h2>
<p>Every operation, parameter, answer and error code, from this deployment's OpenAPI 3.1 document (<a href="/api/v1/openapi.json">/api/v1/openapi.json</a>, from which any generator makes a client). With a key, "Try it out" calls this deployment.</p>
<p id="reference-status" class="note" role="status"><span class="js-only">Loading the reference…</span><span class="no-js">The interactive reference needs JavaScript; the document itself is at <a href="/api/v1/openapi.json">/api/v1/openapi.json</a>.</span></p>
<div id="reference" class="reference" aria-busy="true" data-document="/api/v1/openapi.json" data-stylesheet="${context.asset('api-reference.css')}"></div>
<p class="note">The reference is rendered by Swagger UI, served by this site (<a href="${context.asset('api-reference.licenses.txt')}">licences</a>).</p>
</section>`,
  );
}
