/**
 * A scan's fix confirmation. A zip is fetched by the page rather than by
 * the form: the page then says what was done (how many images were marked,
 * how many could not be) and offers the zip again from the browser's memory,
 * so that getting the file twice never marks (and counts) the images twice.
 * A form left to the browser answers with a download and leaves the page as
 * it was: a person could not tell it had worked, and a second click marked
 * everything again. A push answers with a page, so its form is sent as it
 * is; either way the button is disabled once the form is sent.
 */

import { download, element } from './common.js';

const STATUS_ID = 'fix-status';

function setUp(): void {
  const form = document.querySelector<HTMLFormElement>('form.fix-form');
  const button = form?.querySelector<HTMLButtonElement>('button[type="submit"]');
  if (!form || !button) return;
  const say = (text: string) => {
    const status = document.getElementById(STATUS_ID);
    if (status) status.textContent = text;
  };
  form.addEventListener('submit', (event) => {
    if (button.disabled) {
      event.preventDefault();
      return;
    }
    const zip = new FormData(form).get('mode') !== 'push';
    if (!zip) {
      // Disabled after this turn: a button disabled before the form is sent would leave its name out.
      setTimeout(() => {
        button.disabled = true;
        button.textContent = 'Pushing…';
        say('Marking the images and pushing the branch. This takes a moment for many images.');
      }, 0);
      return;
    }
    event.preventDefault();
    button.disabled = true;
    button.textContent = 'Marking…';
    say('Marking the images: the zip downloads when they are ready. This takes a moment for many images.');
    void sendForZip(form, button, say);
  });
}

async function sendForZip(form: HTMLFormElement, button: HTMLButtonElement, say: (text: string) => void): Promise<void> {
  let response: Response;
  let answer: Blob | string;
  try {
    response = await fetch(form.action, { method: 'POST', body: new URLSearchParams(new FormData(form) as unknown as Record<string, string>), headers: { Accept: 'application/zip, text/html' } });
    const zip = response.ok && (response.headers.get('content-type') ?? '').startsWith('application/zip');
    answer = zip ? await response.blob() : await response.text();
  } catch {
    // Before the answer, or while it came: the marking may have been done either way.
    button.disabled = false;
    button.textContent = 'Try again';
    say('The connection failed before the whole answer came. The images may have been marked: the Records page lists every marked file. Try again only if they are not there.');
    return;
  }
  if (answer instanceof Blob) {
    showDone(form, button, response, answer);
    return;
  }
  // A refusal is the confirmation page again, with why: shown in place of this one.
  const page = new DOMParser().parseFromString(answer, 'text/html');
  const main = page.querySelector('main');
  if (!main) {
    button.disabled = false;
    say(`The fix failed (HTTP ${response.status}); nothing was marked. Reload the page to try again.`);
    return;
  }
  document.title = page.title;
  document.querySelector('main')?.replaceWith(document.adoptNode(main));
  setUp();
  const alert = document.querySelector<HTMLElement>('[role="alert"]');
  if (alert) {
    alert.tabIndex = -1;
    alert.focus();
  }
}

function showDone(form: HTMLFormElement, button: HTMLButtonElement, response: Response, zip: Blob): void {
  const name = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '')?.[1] ?? 'fix.zip';
  const marked = Number(response.headers.get('x-optmark-fix-marked') ?? 0);
  const failed = Number(response.headers.get('x-optmark-fix-failed') ?? 0);
  download(zip, name);
  button.textContent = 'Marked';
  // The zip is kept for the life of the page: downloading it again costs nothing.
  const again = element('a', { href: '#' }, 'Download the zip again');
  again.addEventListener('click', (event) => {
    event.preventDefault();
    download(zip, name);
  });
  const words = element(
    'div',
    { class: 'notice success', role: 'status', tabindex: '-1' },
    `${marked === 1 ? 'One image is' : `${marked} images are`} marked, each with a dated service record, and the zip ${name} is downloading.`,
    failed > 0 ? ` ${failed === 1 ? 'One image' : `${failed} images`} could not be marked: FIX-REPORT.txt in the zip says why.` : '',
    ' ',
    again,
    ' · ',
    element('a', { href: '/history' }, 'Records'),
  );
  document.getElementById(STATUS_ID)!.textContent = '';
  form.replaceWith(words);
  // The page now tells what was done, not what would be: its heading, its title and the list's name; the words
  // asking for the confirmation go (the answer above says it all), and the way back to the scan stays.
  const done = `${marked === 1 ? 'One image' : `${marked} images`} marked`;
  const heading = document.querySelector('h1');
  if (heading) heading.textContent = failed > 0 ? `${done}, ${failed} not` : done;
  document.title = `${done} · optmark`;
  document.getElementById('confirm-words')?.remove();
  const list = document.getElementById('paths-heading');
  if (list) list.textContent = failed > 0 ? 'The images of the fix' : marked === 1 ? 'The image marked' : 'The images marked';
  const scan = document.querySelector<HTMLAnchorElement>('.breadcrumb a:last-of-type');
  if (scan) words.after(element('p', {}, element('a', { href: scan.getAttribute('href') ?? '/scans' }, 'Back to the scan')));
  words.focus();
}

setUp();
