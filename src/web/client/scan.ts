/**
 * A running scan's page: polls the scan's progress JSON (the session's
 * route, the API's view of the scan) and updates the progress bar and the
 * counts; says the changes that matter to screen readers (started, the
 * repository fetched, each quarter, the end) in the page's polite live
 * region, not every count; and once the scan has ended, loads the page
 * again, which then shows the summary and the report. Without JavaScript
 * the page has a refresh link.
 */
import { formatNumber } from './common.js';

interface Progress {
  readonly status: 'queued' | 'running' | 'done' | 'failed' | 'cancelled';
  readonly progress: { readonly files: number | null; readonly processed: number; readonly imagesChecked: number };
}

const POLL_MS = 1000;
const section = document.querySelector<HTMLElement>('[data-progress]');
const bar = document.getElementById('scan-bar') as HTMLProgressElement | null;
const counts = document.getElementById('scan-counts');
const announcer = document.getElementById('scan-announce');

const plural = (n: number, one: string, many: string) => `${formatNumber(n)} ${n === 1 ? one : many}`;

function words(p: Progress): string {
  if (p.status === 'queued') return 'Waiting for a place to run: scans start in the order they were made.';
  const { files, processed, imagesChecked } = p.progress;
  if (files === null) return 'Fetching the repository…';
  return `Looked at ${formatNumber(processed)} of ${plural(files, 'file', 'files')}; ${plural(imagesChecked, 'image', 'images')} checked so far.`;
}

/** The moment worth saying aloud: a state, the fetch done, a quarter of the files. */
function milestone(p: Progress): string {
  const { files, processed } = p.progress;
  if (p.status !== 'running' || files === null) return p.status === 'running' ? 'running' : p.status;
  return `quarter-${files === 0 ? 4 : Math.floor((processed / files) * 4)}`;
}

if (section && bar && counts) {
  const url = section.dataset.progress!;
  let said = '';
  // A form sent from this page (Cancel the scan) takes the person to its answer: a reload of this page,
  // when a poll sees the scan ended (by that very form), must not overtake it and drop what it says.
  let leaving = false;
  document.addEventListener('submit', () => {
    leaving = true;
  });
  const poll = async (): Promise<void> => {
    if (leaving) return;
    let progress: Progress;
    try {
      const response = await fetch(url, { headers: { Accept: 'application/json' }, cache: 'no-store' });
      if (response.status === 401) {
        // Signed out meanwhile (elsewhere, or the session ended): the page itself takes the person to sign in, and back here.
        window.location.reload();
        return;
      }
      if (!response.ok) throw new Error(String(response.status));
      progress = (await response.json()) as Progress;
    } catch {
      // A failed poll is tried again later; the refresh link is there meanwhile.
      window.setTimeout(() => void poll(), POLL_MS * 3);
      return;
    }
    if (leaving) return;
    if (['done', 'failed', 'cancelled'].includes(progress.status)) {
      if (announcer) announcer.textContent = `The scan has ended (${progress.status}). Loading its report…`;
      window.location.reload();
      return;
    }
    const { files, processed } = progress.progress;
    if (files !== null && progress.status === 'running') {
      bar.max = Math.max(1, files);
      bar.value = processed;
    } else {
      bar.removeAttribute('value');
    }
    counts.textContent = words(progress);
    const now = milestone(progress);
    if (now !== said && announcer) {
      said = now;
      announcer.textContent = counts.textContent;
    }
    window.setTimeout(() => void poll(), POLL_MS);
  };
  window.setTimeout(() => void poll(), POLL_MS / 2);
}
