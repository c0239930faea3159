/**
 * The API page's interactive reference: this deployment's OpenAPI document,
 * fetched from this site, rendered by Swagger UI (bundled with optmark, see
 * scripts/build-web.mjs). Nothing is asked of another site: no validator
 * badge, no fonts, and "Try it out" calls this page's own origin, whatever
 * address the document's `servers` names (the page's policy, connect-src
 * 'self', allows no other anyway).
 */
import SwaggerUI from 'swagger-ui-dist/swagger-ui-es-bundle.js';

document.documentElement.classList.add('js');

// Swagger UI has a dark theme under `html.dark-mode`: follow the reader's setting, as the rest of the page does.
const dark = matchMedia('(prefers-color-scheme: dark)');
const followScheme = () => document.documentElement.classList.toggle('dark-mode', dark.matches);
followScheme();
dark.addEventListener('change', followScheme);

/**
 * Names Swagger UI leaves out, given as its controls appear (axe-core finds
 * them; test/http/api-page.test.ts holds the page to it): the fields of
 * "Try it out" (named by their parameter), the examples menu of an answer,
 * the close button of the Authorize dialog (an icon alone),
 * and the dialog's buttons whose names do not contain the words they show.
 * Attributes that React does not manage stay as set here.
 */
function nameControls(root: HTMLElement): void {
  for (const field of root.querySelectorAll<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>('input:not([type="hidden"]), select, textarea')) {
    if (field.labels?.length || field.hasAttribute('aria-label') || field.hasAttribute('aria-labelledby')) continue;
    // A parameter's or a form part's field is named by its row; an answer's examples menu is a choice of example.
    const row = field.closest('tr');
    const parameter = row?.querySelector('.parameter__name')?.firstChild?.textContent?.trim() || row?.dataset.paramName;
    field.setAttribute('aria-label', field.closest('.examples-select') ? 'Example' : parameter ? `Value of ${parameter}` : 'Value');
  }
  for (const button of root.querySelectorAll<HTMLButtonElement>('button.close-modal:not([aria-label])')) button.setAttribute('aria-label', 'Close');
  for (const button of root.querySelectorAll<HTMLButtonElement>('.modal-ux button[aria-label]')) {
    const shown = button.textContent?.trim() ?? '';
    const name = button.getAttribute('aria-label') ?? '';
    if (shown && !name.toLowerCase().includes(shown.toLowerCase())) button.setAttribute('aria-label', `${shown}: ${name.toLowerCase()}`);
  }
}

/**
 * The reference's title (Swagger UI writes it as an h1) is a heading of the
 * page's "Reference" section (an h2): level 3, as the operations' groups
 * under it are, so the page keeps one outline (axe-core's heading-order).
 */
function levelHeadings(root: HTMLElement): void {
  for (const title of root.querySelectorAll<HTMLElement>('.info .title:not([aria-level])')) title.setAttribute('aria-level', '3');
}

/** What a Swagger UI plugin is given: the React it renders with. */
interface SwaggerSystem {
  React: { createElement: (type: unknown, props?: object | null, ...children: unknown[]) => unknown };
}
/** What Swagger UI hands a layout: its components, and the document's selectors. */
interface LayoutProps {
  getComponent: (name: string, container?: boolean) => unknown;
  specSelectors: { securityDefinitions: () => unknown };
}

/**
 * The reference's layout: Swagger UI's parts (its document's description,
 * the Authorize button, the operations, the schemas) in the page's own
 * landmarks. Its base layout puts the operations in a <main> of their own,
 * which would sit inside the page's <main> (axe-core: a second main, not at
 * the top level); here they are in a <div>.
 */
function referenceLayout({ React }: SwaggerSystem) {
  const h = React.createElement;
  function ReferenceLayout({ getComponent, specSelectors }: LayoutProps) {
    const part = (name: string, container = true) => getComponent(name, container);
    const [Row, Col] = [part('Row', false), part('Col', false)];
    const whole = (child: unknown) => h(Row, null, h(Col, { mobile: 12, desktop: 12 }, child));
    return h(
      'div',
      { className: 'swagger-ui' },
      h(part('SvgAssets', false)),
      h(part('errors')),
      h(Row, { className: 'information-container' }, h(Col, { mobile: 12 }, h(part('InfoContainer')))),
      specSelectors.securityDefinitions() ? h('div', { className: 'scheme-container' }, h(Col, { className: 'schemes wrapper', mobile: 12 }, h(part('AuthorizeBtnContainer')))) : null,
      h('div', { id: 'operations' }, whole(h(part('operations'))), whole(h(part('Models')))),
    );
  }
  return { components: { ReferenceLayout } };
}

const mount = document.getElementById('reference');
const status = document.getElementById('reference-status');

/** Swagger UI's stylesheet (with the page's rules for it), linked only where the reference is shown, and loaded before it is. */
function loadStylesheet(href: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const link = Object.assign(document.createElement('link'), { rel: 'stylesheet', href });
    link.addEventListener('load', () => resolve());
    link.addEventListener('error', () => reject(new Error('its stylesheet did not load')));
    document.head.append(link);
  });
}

async function start(into: HTMLElement): Promise<void> {
  const address = into.dataset.document ?? '/api/v1/openapi.json';
  const [response] = await Promise.all([
    fetch(address, { headers: { Accept: 'application/json' }, credentials: 'omit' }),
    into.dataset.stylesheet ? loadStylesheet(into.dataset.stylesheet) : undefined,
  ]);
  if (!response.ok) throw new Error(`the document answered ${response.status}`);
  const spec = (await response.json()) as { servers?: unknown };
  // "Try it out" calls this page's own origin: without servers, the document's
  // paths are relative to it (and no one-choice server menu is shown).
  delete spec.servers;
  SwaggerUI({
    domNode: into,
    spec,
    plugins: [referenceLayout],
    layout: 'ReferenceLayout',
    deepLinking: false,
    validatorUrl: null,
    queryConfigEnabled: false,
    persistAuthorization: false,
    displayOperationId: true,
    docExpansion: 'list',
    defaultModelsExpandDepth: 0,
    syntaxHighlight: false,
    onComplete: () => {
      into.setAttribute('aria-busy', 'false');
      if (status) status.textContent = '';
    },
  });
}

if (mount) {
  const fit = () => {
    nameControls(mount);
    levelHeadings(mount);
  };
  fit();
  new MutationObserver(fit).observe(mount, { childList: true, subtree: true });
  start(mount).catch((error: unknown) => {
    mount.setAttribute('aria-busy', 'false');
    if (status) {
      status.className = 'notice error';
      status.textContent = `The reference could not be shown (${error instanceof Error ? error.message : String(error)}). The OpenAPI document itself is at /api/v1/openapi.json.`;
    }
  });
}
