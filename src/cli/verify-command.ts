import type { VerifyDetails, VerifyResult } from '../app/verify-image.js';
import { parse, readInput, reportFailure } from './files.js';
import { collectInputs, notEnteredNote } from './batch/inputs.js';
import { createProgress } from './batch/progress.js';
import { checkReportPath, saveReport, type Row } from './batch/report.js';
import { concurrencyOption, countsText, createRemote, failureOf, notDoneLine, reachability, remoteTarget, reportUnreadableFolders, runPool, sayStopped, stopCode, withInterrupt, type Stop } from './batch/run.js';
import { UsageError } from './usage-error.js';

/** One file checked: what verify says, and everything it found. */
type Check = (bytes: Uint8Array, signal: AbortSignal) => Promise<{ result: VerifyResult; details: VerifyDetails }>;

export async function verifyCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parse(args, {
    json: { type: 'boolean' },
    jwks: { type: 'string' },
    'allow-private': { type: 'boolean' },
    recursive: { type: 'boolean', short: 'r' },
    concurrency: { type: 'string' },
    'fail-on-unmarked': { type: 'boolean' },
    report: { type: 'string' },
    server: { type: 'string' },
    key: { type: 'string' },
    'key-file': { type: 'string' },
  });
  if (positionals.length === 0) throw new UsageError('verify needs at least one file or folder');
  if (values['allow-private'] && values.jwks === undefined) throw new UsageError('--allow-private only goes with --jwks URL');
  try {
    await checkReportPath(values.report);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const target = await remoteTarget(values);
  if (target && values.jwks !== undefined) throw new UsageError('--jwks checks tags here; with --server the deployment checks them with its own keys');
  const concurrency = concurrencyOption(values.concurrency, target !== undefined);
  const inputs = await collectInputs(positionals, { recursive: values.recursive ?? false });

  let check: Check;
  /** Where a lowered gate is said: standard error, then above the progress bar once there is one. */
  let say: (line: string) => void = (line) => void process.stderr.write(`${line}\n`);
  if (target) {
    const client = await createRemote(target);
    const gate = (await import('./batch/server-gate.js')).createServerGate(concurrency, (line) => say(line));
    check = async (bytes, signal) => {
      const { details, requestId: _r, replayed: _p, allowance: _a, ...result } = await gate.run(() => client.verify(bytes, { detail: true, signal }), signal);
      return { result, details: details as VerifyDetails };
    };
  } else {
    const [{ inspectWithFingerprint }, { loadConfig }, { checkingFingerprint }, { checkingProvenance }] = await Promise.all([
      import('../app/verify-image.js'),
      import('../config.js'),
      import('./fingerprint-for-cli.js'),
      import('./keys-for-cli.js'),
    ]);
    let provenance;
    let fingerprint;
    let maxImagePixels;
    try {
      const config = loadConfig();
      maxImagePixels = config.maxImagePixels;
      provenance = await checkingProvenance(config, values.jwks, { allowPrivate: values['allow-private'] ?? false });
      fingerprint = checkingFingerprint(config);
    } catch (error) {
      reportFailure(error, values.json);
      return 1;
    }
    check = (bytes) => inspectWithFingerprint(bytes, { provenance, fingerprint, maxImagePixels });
  }

  const counts = { optedOut: 0, notOptedOut: 0, failed: 0 };
  const rows: Row[] = inputs.files.map((input) => ({ file: input.path, outcome: 'not-done' }));
  const folderRows = reportUnreadableFolders(inputs, values.json);
  counts.failed += folderRows.length;
  const many = inputs.files.length > 1 || inputs.folders;
  const bar = many && process.stderr.isTTY === true;
  // On the terminal the bar is drawn on, a file's lines are shown only when it does not opt out: a gate
  // (--fail-on-unmarked) names what it failed on. JSON is for a program, which wants every object.
  const everyLine = values.json === true || !(bar && process.stdout.isTTY);
  const progress = createProgress({
    total: inputs.files.length,
    verb: 'verify',
    bar,
    lines: everyLine,
    counts: () => countsText([['opted out', counts.optedOut], ['not opted out', counts.notOptedOut], ['failed', counts.failed]]),
    columns: () => process.stderr.columns ?? 80,
  });
  say = (line) => progress.note(line);
  const stop: Stop = { reason: undefined, abort: new AbortController() };
  let quotaMessage: string | undefined;
  const reach = reachability(stop);

  await withInterrupt(stop, (line) => progress.note(line), () =>
    runPool(inputs.files, concurrency, stop, async ({ path: file }, index) => {
      try {
        const { result, details } = await check(await readInput(file), stop.abort.signal);
        reach.answered();
        if (result.optedOut) counts.optedOut++;
        else counts.notOptedOut++;
        rows[index] = { file, outcome: result.optedOut ? 'opted-out' : 'not-opted-out', value: details.dataMining.find((d) => d.prohibited)?.code ?? undefined, sha256: result.sha256 };
        if (values.json) progress.done(index, JSON.stringify({ file, outcome: rows[index]!.outcome, ...result, format: details.format, dataMining: details.dataMining.map((d) => d.value), warnings: details.warnings, details }));
        else if (everyLine) progress.done(index, describe(file, result, details));
        else progress.done(index, result.optedOut ? undefined : `${file}: not opted out (${details.format.toUpperCase()})`, true);
      } catch (error) {
        if (stop.abort.signal.aborted) return progress.skip(index, values.json ? notDoneLine(file, 'interrupted') : undefined);
        const failure = failureOf(error);
        if (failure.code === 'quota_exceeded') {
          // Every further call would get the same answer: stop starting them (as protect does).
          quotaMessage ??= failure.error;
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
        rows[index] = { file, outcome: 'failed', ...failure };
        if (values.json) progress.done(index, JSON.stringify({ file, outcome: 'failed', error: failure.error, code: failure.code }));
        else {
          progress.note(`${file}: ${failure.error}`);
          progress.done(index);
        }
      }
    }),
  );
  // The files the run stopped before starting carry why it stopped.
  for (const [index, row] of rows.entries()) if (row.outcome === 'not-done' && row.code === undefined) rows[index] = { ...row, code: stopCode(stop) };
  progress.finish(values.json ? (index) => notDoneLine(rows[index]!.file, rows[index]!.code!) : undefined);
  rows.push(...folderRows);
  for (const path of inputs.skipped) rows.push({ file: path, outcome: 'skipped' });
  const notDone = rows.filter((r) => r.outcome === 'not-done').length;
  if (many || stop.reason !== undefined) {
    process.stderr.write(
      `optmark: ${countsText([['opted out', counts.optedOut], ['not opted out', counts.notOptedOut], ['skipped (not images)', inputs.skipped.length], ['failed', counts.failed], ['not done', notDone]])}\n`,
    );
  }
  // After the summary, which a report that cannot be written then does not take away.
  const reported = values.report === undefined || (await saveReport(values.report, rows));
  const notEntered = notEnteredNote(inputs);
  if (notEntered) process.stderr.write(`${notEntered}\n`);
  // Asked to fail on a file that does not opt out, a run that found no image shows nothing: it fails too.
  const nothingChecked = values['fail-on-unmarked'] === true && inputs.files.length === 0;
  if (nothingChecked) process.stderr.write(`optmark: no image found${inputs.notEntered > 0 ? ' (the subfolders were not entered)' : ''}: nothing checked, which --fail-on-unmarked does not take as a pass\n`);
  if (stop.reason === 'quota' && quotaMessage !== undefined) {
    sayStopped(values.json, `${quotaMessage.replace(/\.?$/, '')}. ${notDone} file(s) not checked: run the same command again then.`, 'quota_exceeded', notDone);
  }
  if (stop.reason === 'interrupted') {
    sayStopped(values.json, `stopped; ${notDone} file(s) not checked.`, 'interrupted', notDone);
    return 130;
  }
  if (stop.reason === 'unreachable') sayStopped(values.json, reach.said(notDone, 'checked'), 'network_error', notDone);
  if (counts.failed > 0 || stop.reason !== undefined || nothingChecked || !reported) return 1;
  return values['fail-on-unmarked'] && counts.notOptedOut > 0 ? 3 : 0;
}

/** What verify found in one file, in words. */
function describe(file: string, result: VerifyResult, details: VerifyDetails): string {
  const lines = [`${file}: ${result.optedOut ? 'OPTED OUT' : 'not opted out'} (${details.format.toUpperCase()})`];
  if (details.dataMining.length === 0) lines.push('  plus:DataMining: absent');
  for (const d of details.dataMining) {
    lines.push(`  plus:DataMining: ${d.value}${d.label ? ` (${d.label})` : ''}${d.extended ? ' [Extended XMP]' : ''}`);
  }
  if (details.otherConstraints !== null) lines.push(`  plus:OtherConstraints: ${details.otherConstraints}`);
  if (details.tdmrep.reservation !== null) lines.push(`  tdm:reservation: ${details.tdmrep.reservation}`);
  if (details.tdmrep.policy !== null) lines.push(`  tdm:policy: ${details.tdmrep.policy}`);
  if (details.c2pa.present) lines.push(`  C2PA manifest: present (signature not checked)${details.c2pa.readable ? '' : ', unreadable: ignored'}`);
  for (const a of details.c2pa.trainingMining) {
    lines.push(`  C2PA ${a.assertion}: ${Object.entries(a.entries).map(([use, choice]) => `${use} ${choice}`).join(', ') || 'no entries'}`);
  }
  lines.push(`  signals: ${result.signals.length ? result.signals.join(', ') : 'none'}`);
  // The spec's signals is [] without a plus:DataMining field; what the other vocabularies say is still shown.
  const alsoFound = details.signals.filter((s) => !result.signals.includes(s));
  if (alsoFound.length > 0) lines.push(`  also found: ${alsoFound.join(', ')} (not in signals: the file has no plus:DataMining field)`);
  const p = result.provenance;
  lines.push(`  provenance tag: ${!p.present ? 'none' : p.valid ? 'valid' : p.verifiable ? 'INVALID (the file or its value changed since it was signed)' : 'present, not verifiable with these keys'}`);
  const f = result.fingerprint;
  const share = `${Math.round(f.confidence * 100)} % of ${f.blocks} blocks match`;
  lines.push(`  fingerprint (experimental): ${f.blocks === 0 ? 'no block could vote (no key, or an image too small, too flat, or unreadable as pixels)' : f.present ? `PRESENT, ${share}` : `not found, ${share}`}`);
  lines.push(`  sha256: ${result.sha256}`);
  for (const warning of details.warnings) lines.push(`  warning: ${warning}`);
  return lines.join('\n');
}
