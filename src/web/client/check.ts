/**
 * The check page with JavaScript: a batch of up to 25 images, each checked
 * with upload progress, and its verdict in words first: opted out, not opted
 * out, or not opted out in the metadata though this service's fingerprint is
 * in the pixels (then a button marks it again). The detail follows: the
 * signature and the fingerprint in words, other signals named, the SHA-256
 * with a copy button, and the API's JSON in a disclosure.
 */
import { admissible, allowanceReturns, announce, batchPage, progressTeller, download, element, formatBytes, json, markFacts, postJson, refreshUsage, removeButton, removeRow, renewFormToken, sessionEnded, SIGNED_OUT, sendRun, stopControl, thumbnail, tooSlow, upload, usedUp, withinAllowance, type ApiError } from './common.js';

const PARALLEL = 3;

interface Row {
  readonly file: File;
  /** Its bytes' SHA-256: the same bytes picked again do not make a second row. */
  readonly sha256: string;
  readonly key: string;
  readonly li: HTMLLIElement;
  readonly progress: HTMLProgressElement;
  readonly state: HTMLElement;
  readonly result: HTMLElement;
  readonly actions: HTMLElement;
  /** `unsent`: the month's checks ran out before this file was checked; it waits for the next month, without a retry. */
  status: 'ready' | 'queued' | 'working' | 'done' | 'failed' | 'unsent';
  /** Sent again once, alone, after the server found its upload too slow. */
  sentAlone?: boolean;
}

const { form, rows: rowsList, start, maxBytes, batchSize, showErrors } = batchPage(addFiles);
const rows: Row[] = [];
let running = false;
/** A question of the page is open (the month's checks would not reach every file): nothing starts meanwhile. */
let confirming = false;
/** Set in a run once the server says the month's checks are used up: when they start again. The rest of the batch is not sent. */
let usedUpUntil: Date | undefined;
/** Set once the server says the session is over: the rest of the run is not sent, and the next run first takes the new session's form token. */
let signedOut = false;
/** Uploads at once: one after an upload too slow for the server. */
let lanes = PARALLEL;
/** The Stop button of a running batch. */
const stop = stopControl(start);

function setState(row: Row, status: Row['status'], text: string): void {
  row.status = status;
  row.state.textContent = text;
  row.li.dataset.state = status;
}

async function addFiles(files: readonly File[]): Promise<void> {
  const room = batchSize - rows.filter((r) => r.status !== 'done').length;
  const { accepted, problems } = await admissible(files, room, maxBytes, batchSize, 'check', (sha256) => rows.find((r) => r.sha256 === sha256)?.file.name);
  for (const { file, sha256 } of accepted) {
    const progress = element('progress', { max: '1', value: '0', 'aria-label': `Upload of ${file.name}` });
    // Focusable by script, as on the mark page.
    const state = element('span', { class: 'state', tabindex: '-1' }, 'Ready');
    const result = element('div', { class: 'result' });
    const actions = element('div', { class: 'row-actions' });
    const li = element('li', { class: 'row', 'data-state': 'ready' }, await thumbnail(file), element('div', { class: 'row-main' }, element('p', { class: 'file', tabindex: '-1' }, element('span', { class: 'name' }, file.name), ` · ${formatBytes(file.size)}`), progress, state, result), actions);
    rowsList.append(li);
    const row: Row = { file, sha256, key: crypto.randomUUID(), li, progress, state, result, actions, status: 'ready' };
    rows.push(row);
    offerRemove(row);
  }
  showErrors(problems);
  updateStart();
}

/** Check is there for rows that can go, and not while a batch runs. */
function updateStart(): void {
  start.disabled = running || !rows.some((r) => r.status === 'ready' || r.status === 'failed');
}

/** A row that has not gone (ready or failed) may leave the list, and its bytes be picked again. */
function offerRemove(row: Row): void {
  row.actions.replaceChildren(
    removeButton(row.file.name, () => {
      rows.splice(rows.indexOf(row), 1);
      removeRow(row.li, row.file.name);
      updateStart();
    }),
  );
}

function fact(term: string, ...value: Array<Node | string>): [HTMLElement, HTMLElement] {
  return [element('dt', {}, term), element('dd', {}, ...value)];
}

function showVerdict(row: Row, answer: Record<string, unknown>): void {
  const verdict = answer.verdict as { kind: string; headline: string; explanation: string; signature: string; fingerprint: string; otherSignals: string[] };
  const result = answer.result as Record<string, unknown>;
  const constraints = (answer.details as { otherConstraints?: string | null } | undefined)?.otherConstraints;
  const sha = element('code', {}, String(result.sha256));
  const copy = element('button', { type: 'button', class: 'secondary' }, 'Copy');
  copy.addEventListener('click', () => void navigator.clipboard.writeText(String(result.sha256)).then(() => (copy.textContent = 'Copied')));
  const facts = element(
    'dl',
    { class: 'facts' },
    ...fact('Signature', verdict.signature),
    ...fact('Fingerprint (experimental)', verdict.fingerprint),
    ...(verdict.otherSignals.length ? fact('Other signals', element('ul', {}, ...verdict.otherSignals.map((s) => element('li', {}, s)))) : []),
    ...(typeof constraints === 'string' ? fact('Constraints (plus:OtherConstraints)', constraints) : []),
    ...fact('SHA-256', sha, ' ', copy),
    ...fact('Service record', ...recordNote(answer.record as RecordLink | null)),
  );
  const json = element('details', {}, element('summary', {}, 'As the API answers'), element('pre', {}, JSON.stringify(result, null, 2)));
  const parts: HTMLElement[] = [element('div', { class: `verdict ${verdict.kind}` }, element('p', { class: 'headline' }, verdict.headline), element('p', {}, verdict.explanation)), facts, json];
  if (verdict.kind === 'stripped') parts.splice(1, 0, remarkButton(row));
  row.result.replaceChildren(...parts);
}

interface RecordLink {
  readonly createdAt: string;
  readonly as: 'marked' | 'original';
  readonly fileName: string;
  readonly certificate: string;
  readonly page: string;
}

const when = new Intl.DateTimeFormat(navigator.language || 'en', { dateStyle: 'long', timeStyle: 'short', timeZone: 'UTC' });

/** The account's record of this file, linked: it is the file a marking made, or that marking's original. */
function recordNote(record: RecordLink | null): Array<Node | string> {
  if (!record) return ['None of your account’s records has this SHA-256.'];
  const what = record.as === 'marked' ? 'This is the file your account marked' : 'This is the original of a file your account marked';
  return [
    `${what} on ${when.format(new Date(record.createdAt))} UTC${record.fileName ? ` (${record.fileName})` : ''}: `,
    element('a', { href: record.page }, 'its record'),
    ' · ',
    element('a', { href: record.certificate, download: '' }, 'certificate (PDF)'),
  ];
}

/** A file whose metadata was stripped: mark it again (a protect call, counted as one) and offer the new file. */
function remarkButton(row: Row): HTMLElement {
  // Focusable by script: the button gives way to what happens, and the keyboard stays here rather than falling to the page's start.
  const box = element('p', { tabindex: '-1', class: 'remark' });
  const button = element('button', { type: 'button' }, 'Mark it again', element('span', { class: 'visually-hidden' }, `: ${row.file.name}`));
  button.addEventListener('click', async () => {
    box.replaceChildren('Marking it again…');
    box.focus();
    try {
      const batch = String((await postJson('/app/batches')).id);
      const body = new FormData();
      body.append('image', row.file, row.file.name);
      const answer = await upload('/app/mark', body, { 'X-Batch-Id': batch, 'Idempotency-Key': `${row.key}-remark` }, () => {});
      const facts = markFacts(answer);
      const save = element('button', { type: 'button', class: 'secondary' }, `Download ${String(facts.filename)}`);
      save.addEventListener('click', () => download(answer.body, String(facts.filename)));
      box.replaceChildren('Marked again: the opt-out is back in its metadata. ', save);
      void refreshUsage();
    } catch (error) {
      const refusal = error as ApiError;
      // Tried again, it may go through, unless the month's markings are used up.
      if (refusal.code === 'quota_exceeded') box.replaceChildren(`Not marked: ${usedUp('protect', allowanceReturns(refusal))}.`);
      else box.replaceChildren(`Not marked: ${refusal.error} `, button);
    }
  });
  box.append(button);
  return box;
}

async function checkOne(row: Row, batch: string): Promise<void> {
  const body = new FormData();
  body.append('image', row.file, row.file.name);
  setState(row, 'working', 'Uploading…');
  row.actions.replaceChildren();
  try {
    const answer = await upload('/app/check', body, { 'X-Batch-Id': batch, 'Idempotency-Key': row.key }, (fraction) => {
      row.progress.value = fraction;
      if (fraction >= 1) row.state.textContent = 'Checking…';
    });
    row.progress.value = 1;
    setState(row, 'done', 'Checked');
    showVerdict(row, await json(answer));
  } catch (error) {
    const refusal = error as ApiError;
    if (refusal.code === 'quota_exceeded') {
      usedUpUntil ??= allowanceReturns(refusal);
      showUsedUp(row, true, usedUpUntil);
      return;
    }
    if (sessionEnded(refusal)) {
      signedOut = true;
      showSignedOut(row);
      return;
    }
    if (tooSlow(refusal) && !row.sentAlone) {
      // Sent again after the others, alone (the run does): the files still going share the link until they end.
      lanes = 1;
      row.sentAlone = true;
      row.progress.value = 0;
      setState(row, 'queued', 'The link is slow: this file goes again after the others, one file at a time.');
      return;
    }
    setState(row, 'failed', `Not checked: ${refusal.error}`);
    row.progress.value = 0;
    offerRemove(row);
  }
}

/** A file not sent, or refused, because the session ended: ready to go once the person has signed in again. */
function showSignedOut(row: Row): void {
  setState(row, 'ready', 'Not sent: you are signed out. Sign in again, then press Check.');
  row.progress.value = 0;
  offerRemove(row);
}

/** A file the month's checks did not reach (refused, or never sent): a retry would be refused the same until the month's end. */
function showUsedUp(row: Row, sent: boolean, returns: Date): void {
  setState(row, 'unsent', `${sent ? 'Not checked' : 'Not sent'}: ${usedUp('verify', returns)}.`);
  row.progress.value = 0;
  offerRemove(row);
}

/** The rows of a batch the month's allowance reaches, asking first when the meter says it will not reach them all (common.ts). */
const withinAllowanceOf = (selected: Row[]) =>
  withinAllowance(selected, {
    operation: 'verify',
    start,
    setConfirming: (asking) => (confirming = asking),
    updateStart,
    // A row removed while the question was open stays out.
    stillSendable: (r) => rows.includes(r) && (r.status === 'ready' || r.status === 'failed'),
    showUsedUp: (row, returns) => showUsedUp(row, false, returns),
    showErrors,
  });

form.addEventListener('submit', (event) => {
  event.preventDefault();
  void (async () => {
    const chosen = rows.filter((r) => r.status === 'ready' || r.status === 'failed');
    if (running || confirming || chosen.length === 0) return;
    const selected = await withinAllowanceOf(chosen);
    if (running || selected.length === 0) return;
    // Signed out during the last run: the session now (signed in again in another tab) has a form token of its own.
    if (signedOut) {
      if (!(await renewFormToken())) {
        showErrors([SIGNED_OUT]);
        return;
      }
      signedOut = false;
    }
    running = true;
    usedUpUntil = undefined;
    lanes = PARALLEL;
    start.disabled = true;
    start.textContent = 'Checking…';
    stop.begin();
    form.setAttribute('aria-busy', 'true');
    // Rows on their way lose their Remove button: a file in a batch that runs is sent.
    for (const row of selected) {
      setState(row, 'queued', 'Waiting to be sent…');
      row.actions.replaceChildren();
    }
    try {
      const batch = String((await postJson('/app/batches')).id);
      const tell = progressTeller(selected.length);
      // The keyboard follows the run to its first file (the button it pressed is disabled while it runs).
      selected[0]!.state.focus();
      const send = async (row: Row) => {
        // The month's checks ran out in this batch: the rest would only be refused. Nor is anything sent once signed out.
        if (usedUpUntil) showUsedUp(row, false, usedUpUntil);
        else if (signedOut) showSignedOut(row);
        else if (stop.stopped) {
          setState(row, 'ready', 'Not sent: the run was stopped.');
          offerRemove(row);
        } else {
          await checkOne(row, batch);
          await refreshUsage();
        }
      };
      await sendRun(selected, () => lanes, send, tell);
      const done = selected.filter((r) => r.status === 'done').length;
      const failed = selected.filter((r) => r.status === 'failed').length;
      const unsent = selected.filter((r) => r.status === 'unsent').length;
      const held = stop.stopped ? selected.filter((r) => r.status === 'ready').length : 0;
      announce(`${done} checked${failed ? `, ${failed} failed: see each file for the reason` : ''}${unsent && usedUpUntil ? `; ${unsent} not checked: ${usedUp('verify', usedUpUntil)}` : ''}${held ? `; stopped: ${held} not sent, still in the list` : ''}.`);
      if (signedOut) showErrors([SIGNED_OUT]);
      // After a run of several files, the keyboard, if still where the run put it, goes to the first file that needs a look.
      else if (selected.length > 1 && [document.body, selected[0]!.state].includes(document.activeElement as HTMLElement)) selected.find((r) => r.status === 'failed')?.state.focus();
    } catch (error) {
      const refusal = error as ApiError;
      if (sessionEnded(refusal)) signedOut = true;
      showErrors([sessionEnded(refusal) ? SIGNED_OUT : (refusal.error ?? String(error))]);
    } finally {
      // The batch itself could not be made: nothing of it was sent.
      for (const row of selected) {
        if (row.status !== 'queued') continue;
        setState(row, 'ready', 'Ready');
        offerRemove(row);
      }
      running = false;
      start.textContent = 'Check';
      updateStart();
      stop.end();
      form.removeAttribute('aria-busy');
    }
  })();
});

