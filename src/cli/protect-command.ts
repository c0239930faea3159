/**
 * `optmark protect`: files and folders, marked here (the deployment's key
 * ring signs) or by a server (--server, through optmark/client). Nothing is
 * overwritten unasked: two inputs that would make one output are refused
 * before any work; an output already there is taken as done when it is the
 * input's marked copy (markedCopyOf), and any other file in the way is
 * refused unless --overwrite. So a run that stopped (Ctrl-C, the monthly
 * limit, a crash) is finished by running it again, paying for no file twice
 * (a call the server answered but whose copy was not written is answered
 * again under its Idempotency-Key, counting nothing).
 */
import { stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { ProtectResult } from '../app/protect-image.js';
import type { OptmarkError as ClientError } from '../client/index.js';
import { checkOtherConstraints, SEE_CONSTRAINT } from '../core/xmp/other-constraints.js';
import { isProhibitedCode, PROHIBITED_CODES } from '../core/xmp/vocabulary.js';
import { outputFilename } from '../app/filename.js';
import { describeEncoding, sizeChange, type FingerprintEncoding } from '../core/formats/encoding-words.js';
import { CliError, parse, readInput, reportFailure } from './files.js';
import { collectInputs, extensionOf, notEnteredNote, type Input } from './batch/inputs.js';
import { createProgress } from './batch/progress.js';
import { checkReportPath, saveReport, type Row } from './batch/report.js';
import { concurrencyOption, countsText, createRemote, failureOf, notDoneLine, reachability, remoteTarget, reportUnreadableFolders, runPool, sayStopped, stopCode, withInterrupt, type Stop } from './batch/run.js';
import type { Marked, MarkOutcome, MarkTask } from './batch/mark-one.js';
import type { Hasher } from './batch/hasher.js';
import type { Marking } from './batch/mark-here.js';
import type { MarkingPool } from './batch/marking-pool.js';
import { UsageError } from './usage-error.js';

const FOLDER_NEEDS_PLACE = "a folder's marked copies need a place: --out DIR (keeping the folder structure) or --in-place (replacing each file)";

/**
 * From this many files on, a batch: each copy written from its input's bytes
 * and the new metadata, in buffers kept from file to file (batch/mark-here.ts),
 * beyond HERE files at once in worker threads.
 */
const MANY_FILES = 4;

/**
 * Files a batch marks on this thread at once, with the hashing thread of
 * hasher.ts (and READ_AHEAD more): while one is hashed there, this thread
 * reads the XMP of another and libuv's threads read or write the bytes of
 * others, two cores' worth with nothing else to start. --concurrency beyond
 * it adds worker threads (a core each; starting one costs tens of
 * milliseconds).
 */
const HERE = 2;

/**
 * Files a local batch reads ahead, beyond --concurrency: the next file's
 * bytes come in while the others are hashed and written (60 files of 5 MB
 * on two CPUs: 0.32 to 0.34 s against 0.35 to 0.36 s without: docs/client.md "Speed").
 */
const READ_AHEAD = 1;

/** Files whose first bytes are read at once while the outputs are planned. */
const PLAN_READS = 16;

async function anyFolder(paths: readonly string[]): Promise<boolean> {
  const kinds = await Promise.all(paths.map((p) => stat(p).then((s) => s.isDirectory(), () => false)));
  return kinds.some(Boolean);
}

const FINGERPRINT_NOTE = { none: '', added: ', fingerprinted', found: ', fingerprint already there, not added again' } as const;

/** For a fingerprinted file: how it was re-encoded and its size change (", re-encoded as JPEG at quality 85, the original's (4:2:0), size +3.1 %"). */
function reencoding(json: Record<string, unknown>): string {
  const encoding = json.fingerprintEncoding as FingerprintEncoding | undefined;
  if (!encoding || typeof json.sizeBefore !== 'number' || typeof json.sizeAfter !== 'number') return '';
  return `, ${describeEncoding(encoding)}, size ${sizeChange(json.sizeBefore, json.sizeAfter)}`;
}

interface Planned {
  readonly input: Input;
  /** Where its marked copy goes. */
  readonly output: string;
  /**
   * Set when this input is already another input's marked copy, at the very
   * place that input's copy goes (photo-optout.jpg beside photo.jpg, on a
   * second `protect *.jpg`): it is done, neither marked nor a clash.
   */
  readonly copyOf?: { readonly input: string; readonly value: string };
}

export async function protectCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parse(args, {
    out: { type: 'string' },
    value: { type: 'string' },
    'other-constraints': { type: 'string' },
    json: { type: 'boolean' },
    fingerprint: { type: 'boolean' },
    recursive: { type: 'boolean', short: 'r' },
    concurrency: { type: 'string' },
    server: { type: 'string' },
    key: { type: 'string' },
    'key-file': { type: 'string' },
    overwrite: { type: 'boolean' },
    'in-place': { type: 'boolean' },
    'skip-marked': { type: 'boolean' },
    report: { type: 'string' },
  });
  if (positionals.length === 0) throw new UsageError('protect needs at least one file or folder');
  // Without --value, a file that already opts out keeps its value (protect-image.ts).
  const value = values.value;
  if (value !== undefined && !isProhibitedCode(value)) throw new UsageError(`--value must be one of ${PROHIBITED_CODES.join(', ')}`);
  const otherConstraints = constraintsOption(value, values['other-constraints']);
  if (values['in-place'] && values.out !== undefined) throw new UsageError('--in-place and --out exclude each other');
  try {
    await checkReportPath(values.report);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const target = await remoteTarget(values);
  if (target && values.fingerprint) throw new UsageError("--fingerprint works locally only: the API's protect never adds the in-pixel mark");
  if (target && value !== undefined) throw new UsageError("--value works locally only: the API's protect takes the image alone (the specification's call); it keeps a file's own opt-out, else writes DMI-PROHIBITED-AIMLTRAINING");
  const concurrency = concurrencyOption(values.concurrency, target !== undefined);
  // Said before anything is made (the key ring, worker threads).
  const folders = await anyFolder(positionals);
  if (folders && values.out === undefined && !values['in-place']) throw new UsageError(FOLDER_NEEDS_PLACE);

  // The engine: this machine's key ring (in worker threads, or with --fingerprint in this one), or a server.
  const wantSha256 = (values.json ?? false) || values.report !== undefined;
  let run: (task: MarkTask, signal: AbortSignal) => Promise<MarkOutcome>;
  let pool: MarkingPool | undefined;
  /** The hashing thread of a local batch, started with the command so that it is ready for the first file. */
  let hasher: Hasher | undefined;
  const closeThreads = () => Promise.all([pool?.close(), hasher?.close()]);
  /** A local batch without --fingerprint: what marking its files needs. */
  let batchHere: Marking | undefined;
  // One file's work on this thread (with a server, or with --fingerprint, or for a few files); loaded when it
  // first runs: its checks read XMP, which a folder's worker threads do on their own.
  let marking: Promise<typeof import('./batch/mark-one.js')> | undefined;
  const markHere = async (task: MarkTask, mark: (bytes: Uint8Array) => Promise<Marked>): Promise<MarkOutcome> => {
    const { markOne, ASYNC_ACCESS } = await (marking ??= import('./batch/mark-one.js'));
    return markOne(task, ASYNC_ACCESS(readInput), mark);
  };
  const client = target ? await createRemote(target) : undefined;
  /** Where a lowered gate is said: standard error, then above the progress bar once there is one. */
  let say: (line: string) => void = (line) => void process.stderr.write(`${line}\n`);
  if (client) {
    const gate = (await import('./batch/server-gate.js')).createServerGate(concurrency, (line) => say(line));
    run = (task, signal) =>
      markHere(task, async (bytes) => {
        const r = await gate.run(() => client.protect(bytes, { filename: basename(task.file), signal }), signal);
        // The answer says whether the opt-out was kept, not whether any byte changed: its bytes do.
        const changed = !Buffer.from(r.bytes.buffer, r.bytes.byteOffset, r.bytes.byteLength).equals(bytes);
        const json = { mimeType: r.mimeType, filename: r.filename, sha256: r.sha256, signals: r.signals, value: r.optOut.value, alreadyCarried: r.optOut.action === 'kept', changed, c2paInvalidated: r.c2paInvalidated, requestId: r.requestId, replayed: r.replayed };
        return { bytes: r.bytes, filename: r.filename, value: r.optOut.value, alreadyCarried: r.optOut.action === 'kept', changed, c2paInvalidated: r.c2paInvalidated, requestId: r.requestId, json };
      });
  } else {
    // Many files (a folder, or several named): HERE at once on this thread, its hashing thread, and the rest
    // of --concurrency in worker threads, all started first, so that they start up while the key ring is
    // opened and the files are listed (a worker opens the key ring when its first file comes). (Not with
    // --fingerprint: its pixel work runs in sharp's own threads.)
    const batch = !values.fingerprint && (positionals.length >= MANY_FILES || folders);
    if (batch) hasher = (await import('./batch/hasher.js')).createHasher();
    if (batch && concurrency > HERE) pool = (await import('./batch/marking-pool.js')).createMarkingPool(concurrency - HERE);
    const local = await localMarker(values.fingerprint ?? false, value, otherConstraints, values.json).catch(async (error: unknown) => {
      await closeThreads();
      throw error;
    });
    if (!local) {
      await closeThreads();
      return 1;
    }
    if (!values.fingerprint) batchHere = local.marking;
    run = (task) =>
      markHere(task, async (bytes) => {
        const r = await local.mark(bytes, basename(task.file));
        const json = {
          mimeType: r.mimeType,
          filename: r.filename,
          sha256: r.sha256,
          signals: r.signals,
          value: r.value,
          alreadyCarried: r.alreadyCarried,
          changed: r.changed,
          c2paInvalidated: r.c2paInvalidated,
          ...(r.fingerprint ? { fingerprint: r.fingerprint, sizeBefore: bytes.byteLength, sizeAfter: r.bytes.byteLength } : {}),
          // How the fingerprinted pixels were written: the original's format and quality, read from its headers.
          ...(r.fingerprintEncoding ? { fingerprintEncoding: r.fingerprintEncoding } : {}),
        };
        return { bytes: r.bytes, filename: r.filename, value: r.value, alreadyCarried: r.alreadyCarried, changed: r.changed, c2paInvalidated: r.c2paInvalidated, json };
      });
  }
  try {
    return await protectFiles();
  } finally {
    await closeThreads();
  }

  async function protectFiles(): Promise<number> {
    // The --out folder is not walked: the copies of an earlier run there are not inputs.
    const inputs = await collectInputs(positionals, { recursive: values.recursive ?? false, leaveOut: values.out === undefined ? undefined : resolve(values.out) });
    if (inputs.folders && values.out === undefined && !values['in-place']) {
      throw new UsageError(FOLDER_NEEDS_PLACE);
    }
    let planned: Planned[];
    try {
      planned = await plan(inputs.files, values.out, values['in-place'] ?? false, values.fingerprint ? undefined : { value, otherConstraints });
    } catch (error) {
      if (!(error instanceof SharedOutputsError)) throw error;
      // A fault of the inputs, not of the command line: said without the usage, and with --json as the failure object.
      reportFailure(error, values.json);
      return 2;
    }

    let inHand = concurrency;
    if (batchHere && planned.length >= MANY_FILES) {
      inHand = concurrency + READ_AHEAD;
      const marker = (await import('./batch/mark-here.js')).createHereMarker(Math.min(HERE, concurrency) + READ_AHEAD, batchHere, (hasher ??= (await import('./batch/hasher.js')).createHasher()));
      // This thread first (the worker threads may still be starting); at most `inHand` files are in hand.
      run = (task) => (marker.hasRoom() || !pool ? marker.run(task, wantSha256) : pool.run(task, wantSha256));
    }

    const counts = { marked: 0, already: 0, failed: 0 };
    const rows: Row[] = planned.map((p) => ({ file: p.input.path, outcome: 'not-done' }));
    const folderRows = reportUnreadableFolders(inputs, values.json);
    counts.failed += folderRows.length;
    const many = planned.length > 1 || inputs.folders;
    const bar = many && process.stderr.isTTY === true;
    const progress = createProgress({
      total: planned.length,
      verb: 'protect',
      bar,
      lines: values.json === true || !(bar && process.stdout.isTTY),
      counts: () => countsText([['marked', counts.marked], ['already marked', counts.already], ['failed', counts.failed]]),
      columns: () => process.stderr.columns ?? 80,
    });
    say = (line) => progress.note(line);
    const stop: Stop = { reason: undefined, abort: new AbortController() };
    let quotaError: ClientError | undefined;
    let allowance: number | undefined;
    const reach = reachability(stop);

    const one = async (p: Planned, index: number) => {
      const file = p.input.path;
      if (p.copyOf) {
        counts.already++;
        rows[index] = { file, outcome: 'already-marked', output: file, value: p.copyOf.value };
        return progress.done(index, values.json ? JSON.stringify({ file, output: file, outcome: 'already-marked', value: p.copyOf.value, markedCopyOf: p.copyOf.input }) : `${file}: already done: it is the marked copy of ${p.copyOf.input} (${p.copyOf.value}), left as it is`);
      }
      try {
        const task: MarkTask = { file, output: p.output, inPlace: values['in-place'] ?? false, overwrite: values.overwrite ?? false, fingerprint: values.fingerprint ?? false, skipMarked: values['skip-marked'] ?? false, value, otherConstraints };
        const outcome = await run(task, stop.abort.signal);
        reach.answered();
        if (outcome.kind === 'done-before') {
          counts.already++;
          rows[index] = { file, outcome: 'already-marked', output: outcome.output, value: outcome.value };
          // A file that is its own output (photo-optout.jpg) was already marked: nothing was written.
          const done = outcome.output === file ? `already marked ${outcome.value}, left unchanged` : `already done: it is this file's marked copy, ${outcome.value}`;
          return progress.done(index, values.json ? JSON.stringify({ file, output: outcome.output, outcome: 'already-marked', value: outcome.value }) : `${file} -> ${outcome.output} (${done})`);
        }
        if (outcome.kind === 'carries') {
          counts.already++;
          rows[index] = { file, outcome: 'already-marked', value: outcome.value };
          return progress.done(index, values.json ? JSON.stringify({ file, outcome: 'already-marked', value: outcome.value }) : `${file}: already opts out (${outcome.value}), not marked (--skip-marked)`);
        }
        const { output } = outcome;
        counts.marked++;
        rows[index] = { file, outcome: 'marked', output, value: outcome.value, sha256: outcome.json.sha256 as string | undefined, requestId: outcome.requestId };
        if (outcome.c2paInvalidated && !values.json) progress.note(`${file}: warning: its C2PA manifest no longer validates in the marked copy (writing XMP changes bytes the manifest's hash covers)`);
        if (values.json) return progress.done(index, JSON.stringify({ file, output, outcome: 'marked', ...outcome.json }));
        const marking = !outcome.changed ? `already marked ${outcome.value}, copied unchanged` : outcome.alreadyCarried ? `already carried ${outcome.value}, kept` : `marked ${outcome.value}`;
        progress.done(index, `${file} -> ${output} (${marking}${FINGERPRINT_NOTE[(outcome.json.fingerprint as 'added' | 'found' | undefined) ?? 'none']}${reencoding(outcome.json)})`);
      } catch (error) {
        if (stop.abort.signal.aborted && !(error instanceof CliError)) return progress.skip(index, values.json ? notDoneLine(file, 'interrupted') : undefined);
        const failure = failureOf(error);
        if (failure.code === 'quota_exceeded') {
          // Every further call would get the same answer: stop starting them.
          quotaError = error as ClientError;
          stop.reason ??= 'quota';
          rows[index] = { file, outcome: 'not-done', code: failure.code, error: failure.error };
          return progress.skip(index, values.json ? notDoneLine(file, failure.code) : undefined);
        }
        if (failure.code !== 'network_error') reach.answered();
        else if (reach.unreachable(failure.error)) {
          rows[index] = { file, outcome: 'not-done', code: failure.code, error: failure.error };
          return progress.skip(index, values.json ? notDoneLine(file, failure.code) : undefined);
        }
        counts.failed++;
        rows[index] = { file, outcome: 'failed', code: failure.code, error: failure.error, requestId: failure.requestId };
        if (values.json) progress.done(index, JSON.stringify({ file, outcome: 'failed', error: failure.error, code: failure.code }));
        else {
          progress.note(`${file}: ${failure.error}`);
          progress.done(index);
        }
      }
    };

    await withInterrupt(stop, (line) => progress.note(line), () => runPool(planned, inHand, stop, one));
    // The files the run stopped before starting carry why it stopped.
    for (const [index, row] of rows.entries()) if (row.outcome === 'not-done' && row.code === undefined) rows[index] = { ...row, code: stopCode(stop) };
    progress.finish(values.json ? (index) => notDoneLine(rows[index]!.file, rows[index]!.code!) : undefined);

    if (client && stop.reason !== 'unreachable') {
      const usage = await client.usage({ timeoutMs: 10_000 }).catch(() => undefined);
      allowance = usage?.protect.remaining;
    }
    rows.push(...folderRows);
    for (const path of inputs.skipped) rows.push({ file: path, outcome: 'skipped' });
    const notDone = rows.filter((r) => r.outcome === 'not-done').length;
    if (many || stop.reason !== undefined || client) {
      const summary = countsText([
        ['marked', counts.marked],
        ['already marked', counts.already],
        ['skipped (not images)', inputs.skipped.length],
        ['failed', counts.failed],
        ['not done', notDone],
      ]);
      const quota = allowance !== undefined ? `; protect calls left this month: ${allowance}` : '';
      process.stderr.write(`optmark: ${summary}${quota}\n`);
    }
    // After the summary, which a report that cannot be written then does not take away.
    const reported = values.report === undefined || (await saveReport(values.report, rows));
    const notEntered = notEnteredNote(inputs);
    if (notEntered) process.stderr.write(`${notEntered}\n`);
    if (stop.reason === 'quota' && quotaError) {
      sayStopped(values.json, `${quotaError.message.replace(/\.?$/, '')}. ${notDone} file(s) not done: run the same command again then, and only they will be marked.`, 'quota_exceeded', notDone);
    } else if (stop.reason === 'interrupted') {
      sayStopped(values.json, `stopped; ${notDone} file(s) not done: run the same command again to finish (files already done are not marked or paid for again).`, 'interrupted', notDone);
      return 130;
    } else if (stop.reason === 'unreachable') {
      sayStopped(values.json, reach.said(notDone, 'done'), 'network_error', notDone);
    }
    return counts.failed > 0 || stop.reason !== undefined || !reported ? 1 : 0;
  }
}

/** Two inputs or more would make one output (or an output would be another input); nothing is done (exit 2). */
class SharedOutputsError extends CliError {
  constructor(message: string) {
    super(message, 'output_names_shared');
  }
}

/**
 * Where each input's marked copy goes; two inputs with one output are
 * refused before any work. An input that is the output of another and
 * already that input's marked copy (a run done before over the same names)
 * is no clash: it is taken as done. `marking`: the value asked for, which a
 * copy must carry (undefined with --fingerprint, whose copies are not
 * recognised: their pixels changed).
 */
async function plan(files: readonly Input[], out: string | undefined, inPlace: boolean, marking: { value: string | undefined; otherConstraints: string | undefined } | undefined): Promise<Planned[]> {
  // The extension each copy gets, from its input's first bytes: read PLAN_READS files at a time.
  const extensions: Array<string | undefined> = [];
  if (!inPlace) {
    let next = 0;
    const reader = async () => {
      while (next < files.length) {
        const index = next++;
        extensions[index] = await extensionOf(files[index]!.path);
      }
    };
    await Promise.all(Array.from({ length: Math.min(PLAN_READS, files.length) }, reader));
  }
  const planned: Planned[] = [];
  for (const [index, input] of files.entries()) {
    if (inPlace) {
      planned.push({ input, output: input.path });
      continue;
    }
    const dir = out === undefined ? dirname(input.path) : join(out, input.relative === undefined ? '' : dirname(input.relative));
    const extension = extensions[index] ?? 'jpg';
    planned.push({ input, output: join(dir, outputFilename(basename(input.path), extension)) });
  }
  const fold = process.platform === 'darwin' || process.platform === 'win32' ? (p: string) => p.toLowerCase() : (p: string) => p;
  if (!inPlace && marking) await takeMarkedCopies(planned, fold, marking);
  // Inputs taken as done make no copy and are no other input's output.
  const working = planned.filter((p) => !p.copyOf);
  const byOutput = new Map<string, string[]>();
  for (const p of working) {
    const key = fold(resolve(p.output));
    byOutput.set(key, [...(byOutput.get(key) ?? []), p.input.path]);
  }
  const inputsByPath = new Map(working.map((p) => [fold(resolve(p.input.path)), p.input.path]));
  const clashes: string[] = [];
  for (const p of working) {
    const key = fold(resolve(p.output));
    const sharing = byOutput.get(key)!;
    if (sharing.length > 1 && sharing[0] === p.input.path) clashes.push(`${sharing.join(' and ')} would all be written to ${p.output}`);
    const other = inPlace ? undefined : inputsByPath.get(key);
    if (other !== undefined && other !== p.input.path) clashes.push(`${p.input.path} would be written to ${p.output}, which is another input`);
  }
  if (clashes.length > 0) {
    const shown = clashes.slice(0, 10).map((c) => `  ${c}`).join('\n');
    throw new SharedOutputsError(`nothing was done: ${clashes.length} output name(s) would be shared\n${shown}${clashes.length > 10 ? `\n  ... and ${clashes.length - 10} more` : ''}\nRename the inputs, or mark them into separate --out folders`);
  }
  return planned;
}

/**
 * Marks as done (copyOf) each input that is where another input's copy
 * goes and is already that input's marked copy. Only such pairs are read,
 * so a first run over new files reads nothing more.
 */
async function takeMarkedCopies(planned: Planned[], fold: (path: string) => string, marking: { value: string | undefined; otherConstraints: string | undefined }): Promise<void> {
  const byInput = new Map(planned.map((p, index) => [fold(resolve(p.input.path)), index]));
  const pairs: Array<[number, number]> = [];
  for (const [index, p] of planned.entries()) {
    const copy = byInput.get(fold(resolve(p.output)));
    if (copy !== undefined && copy !== index) pairs.push([index, copy]);
  }
  if (pairs.length === 0) return;
  const [{ markedCopyOf }, { readFile }] = await Promise.all([import('../app/marked-copy.js'), import('node:fs/promises')]);
  const read = (path: string) => readFile(path).catch(() => undefined);
  for (const [original, copy] of pairs) {
    const [originalBytes, copyBytes] = await Promise.all([read(planned[original]!.input.path), read(planned[copy]!.input.path)]);
    if (!originalBytes || !copyBytes) continue;
    const found = markedCopyOf(copyBytes, originalBytes, marking.value, marking.otherConstraints);
    if (found) planned[copy] = { ...planned[copy]!, copyOf: { input: planned[original]!.input.path, value: found.value } };
  }
}

/** Marking here: the key ring (created if missing, and said so) and with --fingerprint the fingerprint secrets; undefined when a key file cannot be used (said). */
async function localMarker(fingerprinting: boolean, value: string | undefined, otherConstraints: string | undefined, json: boolean | undefined) {
  const [{ loadConfig }, { signingProvenance }] = await Promise.all([import('../config.js'), import('./keys-for-cli.js')]);
  const config = loadConfig();
  let signer;
  let fingerprint;
  try {
    signer = signingProvenance(config).signer;
    fingerprint = fingerprinting ? (await import('./fingerprint-for-cli.js')).markingFingerprint(config) : undefined;
  } catch (error) {
    // A key file that cannot be used: one line (or JSON object), before any file.
    reportFailure(error, json);
    return undefined;
  }
  // Loaded when a file is marked one at a time (a batch loads batch/mark-here.ts).
  let loaded: Promise<typeof import('../app/protect-image.js')> | undefined;
  return {
    marking: { signer, maxImagePixels: config.maxImagePixels } satisfies Marking,
    async mark(bytes: Uint8Array, filename: string): Promise<ProtectResult> {
      const { protect, protectWithFingerprint } = await (loaded ??= import('../app/protect-image.js'));
      const options = { value, otherConstraints, filename, signer, maxImagePixels: config.maxImagePixels };
      return fingerprint ? protectWithFingerprint(bytes, fingerprint, options) : protect(bytes, options);
    },
  };
}

/**
 * --other-constraints: the text --value DMI-PROHIBITED-SEECONSTRAINT needs
 * (written into plus:OtherConstraints), and that goes with that value only;
 * one line of at most 1,000 characters.
 */
function constraintsOption(value: string | undefined, text: string | undefined): string | undefined {
  const given = text !== undefined && text.trim() !== '';
  if (value === SEE_CONSTRAINT && !given) {
    throw new UsageError(`--value ${SEE_CONSTRAINT} needs --other-constraints TEXT: the constraints it points to, written into plus:OtherConstraints`);
  }
  if (value !== SEE_CONSTRAINT && given) throw new UsageError(`--other-constraints goes with --value ${SEE_CONSTRAINT} only`);
  try {
    return checkOtherConstraints(value, text);
  } catch (error) {
    throw new UsageError(`--other-constraints: ${(error as Error).message}`);
  }
}
