/**
 * The mark page with JavaScript: a batch of up to 25 images. Files are
 * checked before anything is sent (count, size, type by their bytes), files
 * already opted out are found in the browser with the same reader verify
 * uses and skipped unless asked; the rest go 3 at a time, each with upload
 * progress, its own Idempotency-Key (so a retry or a double click never
 * marks or counts twice) and the batch's id. Each row ends with what was
 * done, a download and, on failure, the reason and a retry; all marked files
 * download as one zip built in the browser.
 */
import { downloadZip } from 'client-zip';
import { describeEncoding, sizeChange, type FingerprintEncoding } from '../../core/formats/encoding-words.js';
import { readOptOut } from '../../core/opt-out-reader.js';
import { SEE_CONSTRAINT } from '../../core/xmp/other-constraints.js';
import { DATA_MINING_LABELS, type DataMiningCode } from '../../core/xmp/vocabulary.js';
import { admissible, allowanceReturns, announce, batchPage, progressTeller, download, element, formatBytes, markFacts, postJson, refreshUsage, removeButton, removeRow, renewFormToken, sessionEnded, SIGNED_OUT, sendRun, stopControl, thumbnail, tooSlow, uniqueNames, upload, usedUp, withinAllowance, type Admitted, type ApiError } from './common.js';

const PARALLEL = 3;

/** `unsent`: the month's markings ran out before this file was marked; it waits for the next month, without a Retry. */
type State = 'ready' | 'skipped' | 'queued' | 'uploading' | 'working' | 'done' | 'failed' | 'unsent';

interface Row {
  readonly file: File;
  /** Its bytes' SHA-256: the same bytes picked again do not make a second row. */
  readonly sha256: string;
  /** Kept across retries with the same options (the server recognises the same file); new when the options change, since another marking is another call. */
  key: string;
  /** The options the key was sent with. */
  sentWith?: string;
  readonly li: HTMLLIElement;
  readonly progress: HTMLProgressElement;
  readonly state: HTMLElement;
  readonly result: HTMLElement;
  readonly actions: HTMLElement;
  status: State;
  alreadyOptedOut: string | undefined;
  marked?: { blob: Blob; filename: string };
  /** Sent again once, alone, after the server found its upload too slow. */
  sentAlone?: boolean;
}

const page = batchPage(addFiles);
const { form, rows: rowsList, start, maxBytes, batchSize, showErrors } = page;
const downloadAll = document.getElementById('download-all') as HTMLButtonElement;
const includeMarked = document.getElementById('include-marked') as HTMLInputElement;
const valueSelect = document.getElementById('value') as HTMLSelectElement;
const constraintsField = document.getElementById('constraints-field') as HTMLElement;
const constraints = document.getElementById('other-constraints') as HTMLInputElement;
const rows: Row[] = [];
let running = false;
/** A question of the page is open (the month's markings would not reach every file): nothing starts meanwhile. */
let confirming = false;
/** Set in a run once the server says the month's markings are used up: when they start again. The rest of the batch is not sent. */
let usedUpUntil: Date | undefined;
/** Set once the server says the session is over: the rest of the run is not sent, and the next run first takes the new session's form token. */
let signedOut = false;
/** Uploads at once: one after an upload too slow for the server (a slow link shared by three is three times as slow). */
let lanes = PARALLEL;
/** The Stop button of a running batch. */
const stop = stopControl(start);
/** After a run: what was marked in it, and the certificate of its batch. */
const summary = element('p', { class: 'batch-summary', hidden: '', tabindex: '-1' });
rowsList.after(summary);

/** The constraints text is for "Prohibited, see plus:OtherConstraints" only: shown, and required, when that value is chosen. */
function showConstraints(): void {
  const needed = valueSelect.value === SEE_CONSTRAINT;
  constraintsField.hidden = !needed;
  constraints.required = needed;
}
valueSelect.addEventListener('change', showConstraints);
showConstraints();

function setState(row: Row, status: State, text: string): void {
  row.status = status;
  row.state.textContent = text;
  row.li.dataset.state = status;
}

/** Mark is there for rows that can go, and not while a batch runs. */
function updateStart(): void {
  start.disabled = running || !rows.some((r) => r.status === 'ready' || r.status === 'failed');
}

async function addFiles(files: readonly File[]): Promise<void> {
  const room = batchSize - rows.filter((r) => r.status !== 'done').length;
  const { accepted, problems } = await admissible(files, room, maxBytes, batchSize, 'mark', (sha256) => rows.find((r) => r.sha256 === sha256)?.file.name);
  for (const admitted of accepted) rows.push(await newRow(admitted));
  showErrors(problems);
  updateStart();
  announce(`${rows.length} file${rows.length === 1 ? '' : 's'} in the list${problems.length ? `; ${problems.length} not added` : ''}`);
}

async function newRow({ file, bytes, sha256 }: Admitted): Promise<Row> {
  const progress = element('progress', { max: '1', value: '0', 'aria-label': `Upload of ${file.name}` });
  // Focusable by script: where the keyboard goes when the button pressed on this row goes away.
  const state = element('span', { class: 'state', tabindex: '-1' });
  const result = element('div', { class: 'result' });
  const actions = element('div', { class: 'row-actions' });
  const li = element('li', { class: 'row' }, await thumbnail(file), element('div', { class: 'row-main' }, element('p', { class: 'file', tabindex: '-1' }, element('span', { class: 'name' }, file.name), ` · ${formatBytes(file.size)}`), progress, state, result), actions);
  rowsList.append(li);
  const row: Row = { file, sha256, key: crypto.randomUUID(), li, progress, state, result, actions, status: 'ready', alreadyOptedOut: undefined };
  try {
    const reading = readOptOut(bytes);
    if (reading.optedOut) row.alreadyOptedOut = reading.code;
  } catch {
    // Not readable here: the server will say what is wrong with it.
  }
  if (row.alreadyOptedOut && !includeMarked.checked) skip(row);
  else showReady(row);
  return row;
}

function showReady(row: Row): void {
  setState(row, 'ready', 'Ready');
  row.actions.replaceChildren(removeButton(row.file.name, () => remove(row)));
}

/** A row that has not gone (ready, skipped or failed) leaves the list, and its bytes may be picked again. */
function remove(row: Row): void {
  rows.splice(rows.indexOf(row), 1);
  removeRow(row.li, row.file.name);
  updateStart();
}

function skip(row: Row): void {
  const label = DATA_MINING_LABELS[row.alreadyOptedOut as DataMiningCode] ?? 'opted out';
  setState(row, 'skipped', `Already opted out (${label}): skipped, nothing counted.`);
  const again = element('button', { type: 'button', class: 'secondary' }, 'Mark it anyway', element('span', { class: 'visually-hidden' }, `: ${row.file.name}`));
  again.addEventListener('click', () => {
    showReady(row);
    updateStart();
    row.state.focus();
  });
  row.actions.replaceChildren(again, removeButton(row.file.name, () => remove(row)));
}

/** A fingerprint added: how the image was re-encoded, and the size change it made. */
function fingerprintNote(encoding: unknown, before: number, after: number): string {
  if (!encoding || typeof encoding !== 'object') return 'Fingerprint added (the image was re-encoded).';
  return `Fingerprint added: ${describeEncoding(encoding as FingerprintEncoding)}; size ${sizeChange(before, after)}.`;
}

function showResult(row: Row, blob: Blob, answer: Record<string, unknown>): void {
  const filename = String(answer.filename);
  row.marked = { blob, filename };
  const before = Number(answer.sizeBefore);
  const after = Number(answer.sizeAfter);
  const facts = [
    answer.alreadyCarried ? `It already carried this opt-out, kept: ${String(answer.valueLabel)}.` : `Opt-out written: ${String(answer.valueLabel)}.`,
    typeof answer.otherConstraints === 'string' ? `Constraints: “${answer.otherConstraints}”.` : '',
    answer.changed === false ? 'The file already said exactly this: it is unchanged.' : `Size: ${formatBytes(before)} → ${formatBytes(after)}.`,
    answer.fingerprint === 'added' ? fingerprintNote(answer.fingerprintEncoding, before, after) : answer.fingerprint === 'found' ? 'Fingerprint already there: not added again.' : '',
    'Signed by this service.',
    answer.c2paInvalidated ? 'Its Content Credentials (C2PA) no longer validate.' : '',
  ].filter(Boolean);
  // What the Private Vault did with it, when the account's vault is on: kept, or not kept and why.
  const vault = answer.vault as { state?: string; message?: string } | null | undefined;
  row.result.replaceChildren(
    element('p', {}, facts.join(' ')),
    ...(vault?.message ? [element('p', { class: vault.state === 'stored' ? 'vault-note' : 'vault-note warning' }, vault.message)] : []),
  );
  const save = element('button', { type: 'button', class: 'secondary' }, `Download ${filename}`);
  save.addEventListener('click', () => download(row.marked!.blob, filename));
  // The dated service record of this marking: its certificate, for the account's people.
  const certificate = typeof answer.certificate === 'string' ? element('a', { href: answer.certificate, download: '', class: 'certificate' }, 'Certificate (PDF)', element('span', { class: 'visually-hidden' }, ` of ${filename}`)) : undefined;
  row.actions.replaceChildren(save, ...(certificate ? [certificate] : []));
}

/** A file the month's markings did not reach (refused, or never sent): a Retry would be refused the same until the month's end. */
function showUsedUp(row: Row, sent: boolean, returns: Date): void {
  setState(row, 'unsent', `${sent ? 'Not marked' : 'Not sent'}: ${usedUp('protect', returns)}.`);
  row.progress.value = 0;
  row.actions.replaceChildren(removeButton(row.file.name, () => remove(row)));
}

function showFailure(row: Row, error: ApiError): void {
  setState(row, 'failed', `Not marked: ${error.error}`);
  row.progress.value = 0;
  const retry = element('button', { type: 'button', class: 'secondary' }, 'Retry', element('span', { class: 'visually-hidden' }, ` ${row.file.name}`));
  // The buttons go while the file is sent: the keyboard waits on the row's state (an invalid form field takes it instead).
  retry.addEventListener('click', () => {
    row.state.focus();
    void run([row]);
  });
  // A picture that cannot carry the fingerprint gets the same refusal on a Retry: offer what works, this file without it.
  const without = error.code === 'fingerprint_not_possible' ? [element('button', { type: 'button' }, 'Mark without the fingerprint', element('span', { class: 'visually-hidden' }, `: ${row.file.name}`))] : [];
  for (const button of without) {
    button.addEventListener('click', () => {
      row.state.focus();
      void run([row], { withoutFingerprint: true });
    });
  }
  row.actions.replaceChildren(...without, retry, removeButton(row.file.name, () => remove(row)));
}

async function markOne(row: Row, batch: string, fields: FormData): Promise<void> {
  const body = new FormData();
  for (const [name, value] of fields) if (name !== 'image' && name !== 'csrf') body.append(name, value);
  body.append('image', row.file, row.file.name);
  const options = JSON.stringify([...fields].filter(([name, value]) => name !== 'image' && typeof value === 'string'));
  if (row.sentWith !== undefined && row.sentWith !== options) row.key = crypto.randomUUID();
  row.sentWith = options;
  setState(row, 'uploading', 'Uploading…');
  row.actions.replaceChildren();
  try {
    const answer = await upload('/app/mark', body, { 'X-Batch-Id': batch, 'Idempotency-Key': row.key }, (fraction) => {
      row.progress.value = fraction;
      if (fraction >= 1) setState(row, 'working', 'Marking…');
    });
    row.progress.value = 1;
    setState(row, 'done', 'Marked');
    showResult(row, answer.body, markFacts(answer));
  } catch (error) {
    const refusal = error as ApiError;
    if (refusal.code === 'quota_exceeded') {
      usedUpUntil ??= allowanceReturns(refusal);
      showUsedUp(row, true, usedUpUntil);
    } else if (sessionEnded(refusal)) {
      signedOut = true;
      showSignedOut(row);
    } else if (tooSlow(refusal) && !row.sentAlone) {
      // Sent again after the others, alone (run() does): the files still going share the link until they end.
      lanes = 1;
      row.sentAlone = true;
      row.progress.value = 0;
      setState(row, 'queued', 'The link is slow: this file goes again after the others, one file at a time.');
    } else showFailure(row, refusal);
  }
}

/** A file the person stopped the run before: ready, as it was. */
function showStopped(row: Row): void {
  setState(row, 'ready', 'Not sent: the run was stopped.');
  row.progress.value = 0;
  row.actions.replaceChildren(removeButton(row.file.name, () => remove(row)));
}

/** A file not sent, or refused, because the session ended: ready to go once the person has signed in again. */
function showSignedOut(row: Row): void {
  setState(row, 'ready', 'Not sent: you are signed out. Sign in again, then press Mark.');
  row.progress.value = 0;
  row.actions.replaceChildren(removeButton(row.file.name, () => remove(row)));
}

/** The rows of a batch the month's allowance reaches, asking first when the meter says it will not reach them all (common.ts). */
const withinAllowanceOf = (selected: Row[]) =>
  withinAllowance(selected, {
    operation: 'protect',
    start,
    setConfirming: (asking) => (confirming = asking),
    updateStart,
    // A row removed while the question was open stays out.
    stillSendable: (r) => rows.includes(r) && (r.status === 'ready' || r.status === 'failed'),
    showUsedUp: (row, returns) => showUsedUp(row, false, returns),
    showErrors,
  });

/** What a run changes of the form's choices, for its files only: the fingerprint left out (a file that cannot carry it). */
interface RunOptions {
  readonly withoutFingerprint?: boolean;
}

async function run(chosen: Row[], options: RunOptions = {}): Promise<void> {
  if (running || confirming || chosen.length === 0) return;
  // A retry comes here without the form's own check: the constraints text the value needs, asked for in the form.
  if (!form.reportValidity()) return;
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
  start.textContent = 'Marking…';
  stop.begin();
  // Rows on their way lose their Remove button: a file in a batch that runs is sent.
  for (const row of selected) {
    setState(row, 'queued', 'Waiting to be sent…');
    row.actions.replaceChildren();
  }
  form.setAttribute('aria-busy', 'true');
  const fields = new FormData(form);
  // The text goes with its value only (a text typed, then another value chosen, stays in the hidden field).
  if (fields.get('value') !== SEE_CONSTRAINT) fields.delete('otherConstraints');
  // Other options than the file was refused with: markOne gives it a new Idempotency-Key.
  if (options.withoutFingerprint) fields.delete('fingerprint');
  try {
    const batch = String((await postJson('/app/batches')).id);
    const tell = progressTeller(selected.length);
    // The meters follow each file without holding up the next upload.
    // The keyboard follows the run to its first file (the button it pressed is disabled while it runs).
    selected[0]!.state.focus();
    const send = async (row: Row) => {
      // The month's markings ran out in this batch: the rest would only be refused. Nor is anything sent once signed out.
      if (usedUpUntil) showUsedUp(row, false, usedUpUntil);
      else if (signedOut) showSignedOut(row);
      else if (stop.stopped) showStopped(row);
      else {
        await markOne(row, batch, fields);
        void refreshUsage().catch(() => {});
      }
    };
    await sendRun(selected, () => lanes, send, tell);
    await refreshUsage().catch(() => {});
    const done = selected.filter((r) => r.status === 'done').length;
    const failed = selected.filter((r) => r.status === 'failed').length;
    const unsent = selected.filter((r) => r.status === 'unsent').length;
    const held = stop.stopped ? selected.filter((r) => r.status === 'ready').length : 0;
    announce(`${done} marked${failed ? `, ${failed} failed: see each file for the reason` : ''}${unsent && usedUpUntil ? `; ${unsent} not marked: ${usedUp('protect', usedUpUntil)}` : ''}${held ? `; stopped: ${held} not sent, still in the list` : ''}.`);
    if (done > 0) {
      summary.replaceChildren(
        `${done} file${done === 1 ? '' : 's'} marked in this batch, each with a dated service record. `,
        element('a', { href: `/history/batches/${encodeURIComponent(batch)}/certificate.pdf`, download: '', id: 'batch-certificate' }, 'Certificate of this batch (PDF)'),
        ' · ',
        element('a', { href: '/history' }, 'All records'),
      );
      summary.hidden = false;
    }
    if (signedOut) showErrors([SIGNED_OUT]);
    // After a run of several files, the keyboard, if still where the run put it, goes to what it ended with: the
    // batch's summary, or the first file that needs a look (a row's own Retry keeps it on its row).
    else if (selected.length > 1 && [document.body, selected[0]!.state].includes(document.activeElement as HTMLElement)) {
      if (done > 0 && failed === 0) summary.focus();
      else selected.find((r) => r.status === 'failed')?.state.focus();
    }
  } catch (error) {
    const refusal = error as ApiError;
    if (sessionEnded(refusal)) signedOut = true;
    showErrors([sessionEnded(refusal) ? SIGNED_OUT : (refusal.error ?? String(error))]);
  } finally {
    // The batch itself could not be made: nothing of it was sent.
    for (const row of selected) if (row.status === 'queued') showReady(row);
    running = false;
    start.textContent = 'Mark';
    updateStart();
    stop.end();
    form.removeAttribute('aria-busy');
    downloadAll.disabled = !rows.some((r) => r.marked);
  }
}

form.addEventListener('submit', (event) => {
  event.preventDefault();
  void run(rows.filter((r) => r.status === 'ready' || r.status === 'failed'));
});

includeMarked.addEventListener('change', () => {
  for (const row of rows) {
    if (!row.alreadyOptedOut) continue;
    if (includeMarked.checked && row.status === 'skipped') showReady(row);
    else if (!includeMarked.checked && row.status === 'ready') skip(row);
  }
  updateStart();
});

downloadAll.addEventListener('click', async () => {
  const marked = rows.filter((r) => r.marked);
  const names = uniqueNames(marked.map((r) => r.marked!.filename));
  downloadAll.disabled = true;
  downloadAll.textContent = 'Preparing the zip…';
  try {
    const zip = await downloadZip(marked.map((r, i) => ({ name: names[i]!, input: r.marked!.blob, lastModified: new Date() }))).blob();
    download(zip, 'optmark-marked.zip');
    announce(`The zip of ${marked.length} file${marked.length === 1 ? '' : 's'} is downloading.`);
  } finally {
    downloadAll.textContent = 'Download all (zip)';
    downloadAll.disabled = false;
  }
});

