/**
 * What the mark and check pages share in the browser: the session's form
 * token, uploads with progress (XMLHttpRequest: fetch reports no upload
 * progress), a bounded pool of parallel uploads, file checks before
 * anything is sent, thumbnails, the usage meters, and numbers in the
 * reader's locale.
 */
import { usedUpWords } from '../../core/quota/used-up.js';

export let csrfToken = document.querySelector<HTMLMetaElement>('meta[name="csrf-token"]')?.content ?? '';

/** A refusal that says the page's session is over (signed out elsewhere, ended, or a new session whose form token this page does not hold). */
export const sessionEnded = (error: ApiError) => error.code === 'not_signed_in' || error.code === 'cross_site_request';

/**
 * The form token of the browser's session now, read from this page's own
 * address: after the person signed in again in another tab, the page goes
 * on without a reload (which would lose its list of files). False while
 * still signed out.
 */
export async function renewFormToken(): Promise<boolean> {
  const response = await fetch(window.location.pathname, { headers: { Accept: 'text/html' }, cache: 'no-store' }).catch(() => undefined);
  if (!response?.ok || new URL(response.url).pathname === '/sign-in') return false;
  const token = new DOMParser().parseFromString(await response.text(), 'text/html').querySelector<HTMLMetaElement>('meta[name="csrf-token"]')?.content;
  if (!token) return false;
  csrfToken = token;
  return true;
}

/**
 * A Stop button beside the page's Start while a run goes on: pressed, the
 * files being sent finish and no other is sent; those stay in the list,
 * ready. The keyboard goes back to Start when the run ends.
 */
export function stopControl(start: HTMLButtonElement): { begin(): void; end(): void; readonly stopped: boolean } {
  const stop = element('button', { type: 'button', class: 'secondary', id: 'stop', hidden: '' }, 'Stop');
  start.after(stop);
  start.after(' ');
  let stopped = false;
  stop.addEventListener('click', () => {
    if (stopped) return;
    stopped = true;
    // Not disabled: a disabled button drops the keyboard's focus to the page's start.
    stop.setAttribute('aria-disabled', 'true');
    stop.textContent = 'Stopping…';
    announce('Stopping: the files being sent finish, and the rest stay here.');
  });
  return {
    begin() {
      stopped = false;
      stop.removeAttribute('aria-disabled');
      stop.textContent = 'Stop';
      stop.hidden = false;
    },
    end() {
      const hadFocus = document.activeElement === stop;
      stop.hidden = true;
      if (hadFocus) start.focus();
    },
    get stopped() {
      return stopped;
    },
  };
}

/** What the pages say when a run stopped because the session ended: what to do, and that nothing is lost. */
export const SIGNED_OUT = 'You are signed out (here or in another tab, or the session ended). Sign in again in another tab, then press the button again: the files not sent are kept here.';
const locale = navigator.language || 'en';
const number = new Intl.NumberFormat(locale);
const oneDecimal = new Intl.NumberFormat(locale, { maximumFractionDigits: 1 });

export const formatNumber = (n: number) => number.format(n);

/** Units of 1,024, as the server states its limit (25 MB = 26,214,400 bytes). */
export function formatBytes(n: number): string {
  if (n < 1024) return `${number.format(n)} bytes`;
  if (n < 1024 ** 2) return `${oneDecimal.format(n / 1024)} KB`;
  return `${oneDecimal.format(n / 1024 ** 2)} MB`;
}

export function element<K extends keyof HTMLElementTagNameMap>(tag: K, attributes: Record<string, string> = {}, ...children: Array<Node | string>): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

/** Say something to screen readers (the page's polite live region). */
export function announce(text: string): void {
  const status = document.getElementById('status');
  if (status) status.textContent = text;
}

/**
 * A long run's progress, said now and then (every fifth file of a batch of
 * more than five): the rows' own states are not spoken, and a person who
 * cannot see the bars hears otherwise nothing until the end. Call the
 * function returned once per file finished.
 */
export function progressTeller(total: number): () => void {
  let finished = 0;
  return () => {
    finished++;
    if (total > 5 && finished % 5 === 0 && finished < total) announce(`Progress: ${formatNumber(finished)} of ${formatNumber(total)} files done`);
  };
}

export interface ApiError {
  readonly status: number;
  readonly error: string;
  readonly code: string;
  /** Retry-After, in seconds, when the answer had one (a quota_exceeded: until the month's end). */
  readonly retryAfter?: number;
}

/** The answer of a form posted with `upload`: the body (a Blob), and the headers asked for. */
export interface Answer {
  readonly body: Blob;
  header(name: string): string | null;
}

/**
 * POST a form with upload progress; resolves with the answer's body as a
 * Blob (a marked file stays binary: no base64, no copy), rejects with an
 * ApiError in words (the body of a refusal is JSON).
 */
export function upload(url: string, form: FormData, headers: Record<string, string>, onProgress: (fraction: number) => void): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', url);
    for (const [name, value] of Object.entries({ 'X-CSRF-Token': csrfToken, ...headers })) xhr.setRequestHeader(name, value);
    xhr.responseType = 'blob';
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(event.loaded / event.total);
    };
    xhr.onload = () => {
      const body = xhr.response as Blob;
      if (xhr.status === 200) return resolve({ body, header: (name) => xhr.getResponseHeader(name) });
      void body.text().then((text) => {
        let parsed: Record<string, unknown> = {};
        try {
          parsed = JSON.parse(text) as Record<string, unknown>;
        } catch {
          // not JSON: a proxy's page, say
        }
        const retryAfter = Number(xhr.getResponseHeader('Retry-After') ?? Number.NaN);
        reject({
          status: xhr.status,
          error: typeof parsed.error === 'string' ? parsed.error : `The server answered ${xhr.status}`,
          code: typeof parsed.code === 'string' ? parsed.code : 'unknown',
          ...(Number.isFinite(retryAfter) ? { retryAfter } : {}),
        } satisfies ApiError);
      });
    };
    xhr.onerror = () => reject({ status: 0, error: 'The connection failed: check your network and try again', code: 'network' } satisfies ApiError);
    xhr.send(form);
  });
}

export async function json(answer: Answer): Promise<Record<string, unknown>> {
  return JSON.parse(await answer.body.text()) as Record<string, unknown>;
}

/** What a marking did, from its answer's Optmark-Result header (the body is the file). */
export function markFacts(answer: Answer): Record<string, unknown> {
  return JSON.parse(decodeURIComponent(answer.header('Optmark-Result') ?? '%7B%7D')) as Record<string, unknown>;
}

export async function postJson(url: string): Promise<Record<string, unknown>> {
  const response = await fetch(url, { method: 'POST', headers: { 'X-CSRF-Token': csrfToken, Accept: 'application/json' } });
  const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  if (!response.ok) throw { status: response.status, error: String(body.error ?? `The server answered ${response.status}`), code: String(body.code ?? 'unknown') } satisfies ApiError;
  return body;
}

/** Run `tasks` with at most `limit` at a time; a limit given as a function may fall while they run (each lane past it stops taking items). */
export async function inParallel<T>(items: readonly T[], limit: number | (() => number), task: (item: T) => Promise<void>): Promise<void> {
  const lanes = () => (typeof limit === 'number' ? limit : limit());
  let next = 0;
  const worker = async (lane: number) => {
    while (next < items.length && lane < lanes()) await task(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(lanes(), items.length) }, (_, lane) => worker(lane)));
}

/**
 * The server refuses an upload slower than its minimum average (a client
 * that trickles could hold a place for minutes). Several at once share a
 * slow link: after such a refusal a page sends one file at a time, and
 * sends the refused file again, once, after the others.
 */
export const tooSlow = (error: ApiError) => error.code === 'request_timeout';

/**
 * A run's rows sent, at most `lanes()` at once; those an upload too slow
 * sent back (left 'queued') go again after the others, one at a time.
 * `tell` once per row finished.
 */
export async function sendRun<R extends { readonly status: string }>(rows: readonly R[], lanes: () => number, send: (row: R) => Promise<void>, tell: () => void): Promise<void> {
  await inParallel(rows, lanes, async (row) => {
    await send(row);
    if (row.status !== 'queued') tell();
  });
  for (const row of rows.filter((r) => r.status === 'queued')) {
    await send(row);
    tell();
  }
}

/** The format by the first bytes, as the server judges it (not the name or the declared type). */
export async function imageKind(file: File): Promise<'jpeg' | 'png' | 'webp' | undefined> {
  const b = new Uint8Array(await file.slice(0, 16).arrayBuffer());
  if (b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg';
  if (b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47) return 'png';
  if (String.fromCharCode(...b.subarray(0, 4)) === 'RIFF' && String.fromCharCode(...b.subarray(8, 12)) === 'WEBP') return 'webp';
  return undefined;
}

/** Why a file cannot go, in words, or undefined when it can. */
export async function refusal(file: File, maxBytes: number): Promise<string | undefined> {
  if (file.size === 0) return `${file.name} is empty`;
  if (file.size > maxBytes) return `${file.name} is ${formatBytes(file.size)}; the limit is ${formatBytes(maxBytes)} per image`;
  if (!(await imageKind(file))) return `${file.name} is not a JPEG, PNG or WebP image`;
  return undefined;
}

/** A small thumbnail, decoded at its small size where the browser can (createImageBitmap with resizeWidth), never shown at full size. */
export async function thumbnail(file: File): Promise<HTMLElement> {
  const canvas = element('canvas', { class: 'thumb', 'aria-hidden': 'true' });
  try {
    const bitmap = await createImageBitmap(file, { resizeWidth: 96, resizeQuality: 'low' });
    canvas.width = bitmap.width;
    canvas.height = bitmap.height;
    canvas.getContext('2d')?.drawImage(bitmap, 0, 0);
    bitmap.close();
  } catch {
    canvas.width = canvas.height = 1;
  }
  return canvas;
}

/** The usage meters of the page, set from GET /app/usage after each action. */
export async function refreshUsage(): Promise<void> {
  const response = await fetch('/app/usage', { headers: { Accept: 'application/json' } });
  if (!response.ok) return;
  const usage = (await response.json()) as Record<'protect' | 'verify', { used: number; limit: number; remaining: number }>;
  for (const [id, a] of [['usage-protect', usage.protect], ['usage-verify', usage.verify]] as const) {
    const box = document.getElementById(id);
    if (!box) continue;
    const meter = box.querySelector('meter');
    if (meter) {
      meter.max = Math.max(a.limit, 1);
      meter.value = a.used;
      meter.setAttribute('aria-label', `${box.querySelector('.meter-label span')?.textContent ?? ''}: ${formatNumber(a.used)} of ${formatNumber(a.limit)} used`);
    }
    const text = box.querySelector('.meter-text');
    if (text) text.textContent = `${formatNumber(a.used)} of ${formatNumber(a.limit)} used · ${formatNumber(a.remaining)} left`;
    box.dataset.used = String(a.used);
    box.dataset.limit = String(a.limit);
  }
}

/** What a meter of the page says is left this month (data-used, data-limit), or undefined without one. */
export function leftOnMeter(id: 'usage-protect' | 'usage-verify'): number | undefined {
  const box = document.getElementById(id);
  const used = Number(box?.dataset.used);
  const limit = Number(box?.dataset.limit);
  return Number.isFinite(used) && Number.isFinite(limit) ? Math.max(limit - used, 0) : undefined;
}

/** Dates as the server's pages write them (src/web/format.ts: long, UTC). */
const day = new Intl.DateTimeFormat(locale, { dateStyle: 'long', timeZone: 'UTC' });

/**
 * When the month's allowance starts again: a refusal's Retry-After counted
 * from now, rounded to the hour (the month starts at 00:00 UTC, and this
 * clock may be a little off the server's); without one, the next month's
 * first day, UTC.
 */
export function allowanceReturns(error?: ApiError): Date {
  if (error?.retryAfter !== undefined) return new Date(Math.round((Date.now() + error.retryAfter * 1000) / 3_600_000) * 3_600_000);
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
}

/** The month's allowance used up, in words: "this month's markings are used up; they start again on 1 December 2026". */
export function usedUp(operation: 'protect' | 'verify', returns: Date): string {
  return usedUpWords(operation, day.format(returns));
}

/**
 * Ask, in the page (not a browser dialog), whether to go on: `question`
 * above a button that goes on (`goOn`) and one that does not; the
 * keyboard goes to the first, which the question describes. Resolves with
 * the answer; the box is gone then.
 */
export function confirmInPage(after: Element, question: string, goOn: string): Promise<boolean> {
  return new Promise((resolve) => {
    const text = element('p', { id: 'confirm-question' }, question);
    const yes = element('button', { type: 'button', 'aria-describedby': 'confirm-question' }, goOn);
    const no = element('button', { type: 'button', class: 'secondary' }, 'Cancel');
    const box = element('div', { class: 'notice info confirm', role: 'group', 'aria-labelledby': 'confirm-question' }, text, element('div', { class: 'actions' }, yes, ' ', no));
    const answer = (value: boolean) => {
      box.remove();
      resolve(value);
    };
    yes.addEventListener('click', () => answer(true));
    no.addEventListener('click', () => answer(false));
    // Escape says no, as in a dialog.
    box.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') answer(false);
    });
    after.after(box);
    yes.focus();
  });
}

/** What a page lends `withinAllowance`: its Mark or Check button and list, and how it shows what is not sent. */
export interface AllowancePage<R> {
  readonly operation: 'protect' | 'verify';
  readonly start: HTMLButtonElement;
  /** While the question is open (the page's Start waits for the answer). */
  setConfirming(asking: boolean): void;
  /** The Start button as the page's state says, once the question is closed. */
  updateStart(): void;
  /** Whether a row may still be sent (it was not removed, nor sent, while the question was open). */
  stillSendable(row: R): boolean;
  showUsedUp(row: R, returns: Date): void;
  showErrors(messages: readonly string[]): void;
}

/**
 * Before a batch the meter says the month's allowance will not reach: say
 * how many files will be done, and ask. Resolves with the rows to send
 * (none when the person says no); those beyond are shown as not sent.
 */
export async function withinAllowance<R>(selected: R[], page: AllowancePage<R>): Promise<R[]> {
  const left = leftOnMeter(page.operation === 'protect' ? 'usage-protect' : 'usage-verify');
  if (left === undefined || selected.length <= left) return selected;
  const returns = allowanceReturns();
  if (left === 0) {
    page.showErrors([`Nothing was sent: ${usedUp(page.operation, returns)}.`]);
    return [];
  }
  const [one, many, done, verb] = page.operation === 'protect' ? ['one marking is', 'markings are', 'marked', 'Mark'] : ['one check is', 'checks are', 'checked', 'Check'];
  page.setConfirming(true);
  page.start.disabled = true;
  const n = selected.length;
  const goOn = await confirmInPage(
    page.start.parentElement!,
    `Only ${left === 1 ? one : `${formatNumber(left)} ${many}`} left this month, for ${formatNumber(n)} files: the first ${left === 1 ? 'file' : formatNumber(left)} will be ${done}, the other ${n - left === 1 ? 'file' : formatNumber(n - left)} not sent. Go on?`,
    `${verb} ${formatNumber(left)} of ${formatNumber(n)}`,
  );
  page.setConfirming(false);
  page.updateStart();
  if (!goOn) {
    page.start.focus();
    return [];
  }
  const still = selected.filter((r) => page.stillSendable(r));
  for (const row of still.slice(left)) page.showUsedUp(row, returns);
  return still.slice(0, left);
}

/** Hand a blob to the browser as a download named `name`. */
export function download(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = element('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** `name (2).ext` for the second file of the same name, and so on. */
export function uniqueNames(names: readonly string[]): string[] {
  const seen = new Map<string, number>();
  return names.map((name) => {
    const key = name.toLowerCase();
    const count = (seen.get(key) ?? 0) + 1;
    seen.set(key, count);
    if (count === 1) return name;
    const dot = name.lastIndexOf('.');
    return dot > 0 ? `${name.slice(0, dot)} (${count})${name.slice(dot)}` : `${name} (${count})`;
  });
}

/** The page works without JavaScript; with it, the no-JS notes hide and the batch controls show. */
export function enhance(): void {
  document.documentElement.classList.add('js');
}

/** The batch page's parts, as the server renders them (src/web/pages/work.ts). */
export interface BatchPage {
  readonly form: HTMLFormElement;
  readonly input: HTMLInputElement;
  readonly rows: HTMLOListElement;
  readonly start: HTMLButtonElement;
  readonly maxBytes: number;
  readonly batchSize: number;
  /** Show what was refused (one message, or a list), announced; none hides it. */
  showErrors(messages: readonly string[]): void;
}

/**
 * Take over a batch page: the file input no longer required (files come
 * from the list), an error notice above the form, and files picked or
 * dropped handed to `onFiles`.
 */
export function batchPage(onFiles: (files: File[]) => Promise<void>): BatchPage {
  enhance();
  const form = document.getElementById('work-form') as HTMLFormElement;
  const input = document.getElementById('files') as HTMLInputElement;
  const drop = document.getElementById('drop') as HTMLElement;
  input.required = false;
  const errorBox = element('div', { class: 'notice error', role: 'alert', hidden: '', id: 'batch-errors' });
  form.before(errorBox);
  // The picker names the box that says what it refused.
  input.setAttribute('aria-describedby', [input.getAttribute('aria-describedby'), 'batch-errors'].filter(Boolean).join(' '));
  input.addEventListener('change', () => {
    void onFiles([...(input.files ?? [])]).then(() => (input.value = ''));
  });
  for (const type of ['dragenter', 'dragover'] as const) {
    drop.addEventListener(type, (event) => {
      event.preventDefault();
      drop.classList.add('over');
    });
  }
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (event) => {
    event.preventDefault();
    drop.classList.remove('over');
    void onFiles([...(event.dataTransfer?.files ?? [])]);
  });
  const start = document.getElementById('start') as HTMLButtonElement;
  start.disabled = true;
  return {
    form,
    input,
    rows: document.getElementById('rows') as HTMLOListElement,
    start,
    maxBytes: Number(form.dataset.maxBytes),
    batchSize: Number(form.dataset.batchSize),
    showErrors(messages) {
      errorBox.replaceChildren(...(messages.length === 1 ? [messages[0]!] : [element('p', {}, 'These files were not added:'), element('ul', {}, ...messages.map((m) => element('li', {}, m)))]));
      errorBox.hidden = messages.length === 0;
      // Above the form: at phone width it would be off the screen, over the picker the person is at.
      if (messages.length > 0) errorBox.scrollIntoView({ block: 'nearest' });
    },
  };
}

/** A file that may join the list: its bytes, read once, and their SHA-256 (hex). */
export interface Admitted {
  readonly file: File;
  readonly bytes: Uint8Array<ArrayBuffer>;
  readonly sha256: string;
}

/** The SHA-256 of some bytes, in hex: how the page knows the same file picked twice, whatever its name. */
export async function sha256Hex(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * The files of a pick that may join the list: at most `room` more, each
 * under the size limit, an image by its bytes, and not already in the list
 * (`inList` names the file of the list with those bytes: the same bytes
 * would be marked and counted twice); the others named, with why, in words
 * (`verb`: what the page does with them, "mark" or "check").
 */
export async function admissible(files: readonly File[], room: number, maxBytes: number, batchSize: number, verb: string, inList: (sha256: string) => string | undefined): Promise<{ accepted: Admitted[]; problems: string[] }> {
  const accepted: Admitted[] = [];
  const problems: string[] = [];
  for (const file of files) {
    const why = await refusal(file, maxBytes);
    if (why) {
      problems.push(why);
      continue;
    }
    const bytes = new Uint8Array(await file.arrayBuffer());
    const sha256 = await sha256Hex(bytes);
    // The same bytes twice in one pick count as already in the list too.
    const twin = inList(sha256) ?? accepted.find((a) => a.sha256 === sha256)?.file.name;
    if (twin !== undefined) {
      problems.push(twin === file.name ? `${file.name} is already in the list` : `${file.name} is already in the list, as ${twin}`);
      continue;
    }
    if (accepted.length >= room) {
      problems.push(`${file.name}: a batch takes ${batchSize} images at most; ${verb} these first, then add more`);
      continue;
    }
    accepted.push({ file, bytes, sha256 });
  }
  return { accepted, problems };
}

/** A row's Remove button, named with its file for a screen reader (every row has one). */
export function removeButton(name: string, onRemove: () => void): HTMLButtonElement {
  const button = element('button', { type: 'button', class: 'secondary' }, 'Remove', element('span', { class: 'visually-hidden' }, ` ${name}`));
  button.addEventListener('click', onRemove);
  return button;
}

/**
 * Take a row out of the list, and put the keyboard where the person can go
 * on: the next row's file line, else the one before, else the file picker
 * (focus would otherwise fall to the page's start with the removed button).
 */
export function removeRow(li: HTMLLIElement, name: string): void {
  const next = (li.nextElementSibling ?? li.previousElementSibling) as HTMLElement | null;
  li.remove();
  const target = next?.querySelector<HTMLElement>('.file') ?? document.getElementById('files');
  target?.focus();
  announce(`${name} removed from the list`);
}
