/**
 * `optmark scan PATH|URL`: the repository scan of the service, run here,
 * without a server or quotas (docs/scans.md "In CI"). A folder is walked
 * (links not followed, .git left out); a URL is fetched by git as the
 * server fetches it (shallow, nothing checked out, into a temporary folder
 * removed afterwards). The same classification and the same verify core;
 * `--json` prints the API's summary object with the report.
 */
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, resolve, sep } from 'node:path';
import type { ScanItem, ScanSource } from '../app/scans/ports.js';
import { EMPTY_SUMMARY, ScanSourceError, addToSummary } from '../app/scans/ports.js';
import { CliError, parse, reportFailure } from './files.js';
import { UsageError } from './usage-error.js';

export async function scanCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parse(args, {
    json: { type: 'boolean' },
    csv: { type: 'string' },
    'fail-on-unmarked': { type: 'boolean' },
    fix: { type: 'boolean' },
    out: { type: 'string' },
    ref: { type: 'string' },
    concurrency: { type: 'string' },
  });
  if (positionals.length !== 1) throw new UsageError('scan takes one folder or repository URL');
  if (values.fix && values.out === undefined) throw new UsageError('--fix needs --out DIR, where the marked copies go');
  if (values.out !== undefined && !values.fix) throw new UsageError('--out goes with --fix');
  if (values.concurrency !== undefined && !/^[1-9]\d{0,2}$/.test(values.concurrency)) throw new UsageError(`--concurrency must be a whole number from 1 to 999, got ${JSON.stringify(values.concurrency)}`);
  const target = positionals[0]!;
  const isUrl = /^[a-z][a-z0-9+.-]*:\/\//i.test(target);
  if (!isUrl && values.ref !== undefined) throw new UsageError('--ref goes with a repository URL');

  const [{ loadConfig }, { runScan }, { inspectWithFingerprint }, { checkingFingerprint }, { checkingProvenance }, report, { availableParallelism }] = await Promise.all([
    import('../config.js'),
    import('../app/scans/run.js'),
    import('../app/verify-image.js'),
    import('./fingerprint-for-cli.js'),
    import('./keys-for-cli.js'),
    import('../app/scans/report.js'),
    import('node:os'),
  ]);
  let source: ScanSource | undefined;
  let work: string | undefined;
  // Ctrl-C (or SIGTERM) stops the fetch's git and the checks, and the folder it fetched into is removed on the way out.
  const interrupt = new AbortController();
  const onSignal = () => interrupt.abort(new Error('interrupted'));
  process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
  try {
    const config = loadConfig();
    const provenance = await checkingProvenance(config, undefined);
    const fingerprint = checkingFingerprint(config);
    if (isUrl) {
      const { fetchRepository } = await import('../adapters/git/repository.js');
      work = await mkdtemp(join(tmpdir(), 'optmark-scan-'));
      let url: URL;
      try {
        url = new URL(target);
      } catch {
        throw new UsageError(`${target} is not a repository URL (https://host/owner/name, git://…, file:///…)`);
      }
      if (!['https:', 'http:', 'git:', 'file:'].includes(url.protocol)) throw new UsageError(`${url.protocol}// repositories are not scanned (https://, http://, git:// and file:// are)`);
      if (url.username || url.password) throw new UsageError('put the read token in OPTMARK_SCAN_TOKEN, not in the URL');
      const signal = AbortSignal.any([AbortSignal.timeout(config.scans.maxSeconds * 1000), interrupt.signal]);
      source = await fetchRepository(
        { url: url.href, ref: values.ref ?? null, commit: null, token: process.env.OPTMARK_SCAN_TOKEN?.trim() || null, pin: null, workRoot: work },
        { maxBytes: config.scans.maxBytes, maxFiles: config.scans.maxFiles, signal },
      );
    } else {
      const info = await stat(target).catch(() => undefined);
      if (!info?.isDirectory()) throw new UsageError(`${target} is not a folder (scan takes a folder or a repository URL; verify takes files)`);
      const { folderSource } = await import('../adapters/folder-source.js');
      source = await folderSource(target, config.scans.maxFiles);
    }

    const items: ScanItem[] = [];
    let summary = EMPTY_SUMMARY;
    const total = source.entries.length;
    let processed = 0;
    const tty = process.stderr.isTTY === true && !values.json;
    const outcome = await runScan({
      source,
      check: (bytes, signal) => inspectWithFingerprint(bytes, { provenance, fingerprint, maxImagePixels: config.maxImagePixels, signal }),
      concurrency: values.concurrency ? Number(values.concurrency) : Math.min(4, availableParallelism()),
      signal: interrupt.signal,
      save: async (batch, progress) => {
        for (const item of batch) {
          items.push(item);
          summary = addToSummary(summary, item.status);
        }
        processed = progress.processed;
        if (tty) process.stderr.write(`\roptmark: ${processed} of ${total} files, ${summary.images} images`);
      },
      batch: 20,
    });
    if (tty) process.stderr.write('\n');
    summary = { ...summary, otherFiles: outcome.otherFiles };
    items.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));

    let fixed: Fixed[] = [];
    const fixFailed: Array<{ path: string; error: string }> = [];
    if (values.fix) ({ fixed } = await fixInto(values.out!, source, items, config, fixFailed, interrupt.signal));

    if (values.csv !== undefined) await writeFile(values.csv, report.reportCsv(items));
    const where = isUrl ? { repository: target, ref: values.ref ?? null, commit: source.commit } : { path: resolve(target) };
    if (values.json) {
      process.stdout.write(
        `${JSON.stringify({ ...where, summary: report.summaryOf(summary), otherFiles: summary.otherFiles, coverage: report.coverageOf(summary), items, ...(values.fix ? { fixed, fixFailed } : {}) })}\n`,
      );
    } else {
      const lines = [`${isUrl ? target : resolve(target)}${source.commit ? ` at ${source.commit.slice(0, 12)}` : ''}: ${report.summaryText(summary)}.`];
      for (const item of items.filter((i) => i.status !== 'optedOut')) {
        lines.push(`  ${item.status === 'notOptedOut' ? 'no opt-out' : item.status}: ${item.path}${item.reason ? ` (${item.reason})` : ''}`);
      }
      for (const f of fixed) lines.push(`  ${f.already ? 'already marked' : 'marked'}: ${f.path} -> ${f.out}${f.already ? ' (its marked copy was there)' : ''}`);
      for (const f of fixFailed) lines.push(`  not marked: ${f.path} (${f.error})`);
      process.stdout.write(`${lines.join('\n')}\n`);
    }
    if (summary.failed > 0 || fixFailed.length > 0) return 1;
    return values['fail-on-unmarked'] && summary.notOptedOut > 0 ? 3 : 0;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    if (interrupt.signal.aborted) {
      reportFailure(new CliError('the scan was interrupted', 'interrupted'), values.json);
      return 130;
    }
    // A fetch that failed, a tree over the limits: one line (or the JSON error), exit 1.
    if (error instanceof ScanSourceError) {
      reportFailure(new CliError(`the ${isUrl ? 'repository' : 'folder'} could not be scanned: ${error.message}`, 'source_failed'), values.json);
      return 1;
    }
    throw error;
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
    await source?.close().catch(() => {});
    if (work) await rm(work, { recursive: true, force: true }).catch(() => {});
  }
}

/** A marked copy under --out; `already`: it was there from an earlier run (the image's marked copy), and was kept. */
interface Fixed {
  readonly path: string;
  readonly out: string;
  readonly already?: true;
}

/**
 * Marked copies of the images without the opt-out, under `out` at their
 * paths (never outside it, never over a file). Each is written whole or not
 * at all (batch/write.ts: a crash leaves no cut-off image for a later run to
 * find); one already there that is the image's marked copy (an earlier run's,
 * stopped) is counted as done, so running again finishes the job. Ctrl-C
 * stops it between two files.
 */
async function fixInto(
  out: string,
  source: ScanSource,
  items: readonly ScanItem[],
  config: import('../config.js').Config,
  failed: Array<{ path: string; error: string }>,
  signal: AbortSignal,
): Promise<{ fixed: Fixed[] }> {
  const [{ protect }, { markedCopyOf }, { signingProvenance }, { MAX_SCAN_FILE_BYTES }, { writeAtomically }] = await Promise.all([
    import('../app/protect-image.js'),
    import('../app/marked-copy.js'),
    import('./keys-for-cli.js'),
    import('../app/scans/classify.js'),
    import('./batch/write.js'),
  ]);
  const signer = signingProvenance(config).signer;
  const root = resolve(out);
  const byPath = new Map(source.entries.map((e) => [e.path, e]));
  const fixed: Fixed[] = [];
  for (const item of items.filter((i) => i.status === 'notOptedOut')) {
    signal.throwIfAborted();
    const destination = resolve(root, item.path);
    if (isAbsolute(item.path) || !destination.startsWith(root + sep)) {
      failed.push({ path: item.path, error: 'the path leads outside the output folder' });
      continue;
    }
    // A name that is not UTF-8 is reported with \xNN for its bytes; a copy under that text would be
    // another name than the original's. Refused, as `optmark protect` refuses such a file.
    const entry = byPath.get(item.path)!;
    if (entry.pathBytes) {
      failed.push({ path: item.path, error: 'its name is not UTF-8: rename it in UTF-8 to take it (convmv -f latin1 -t utf8 does)' });
      continue;
    }
    try {
      const bytes = await source.read(entry, MAX_SCAN_FILE_BYTES);
      const there = await readFile(destination).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return undefined;
        throw error;
      });
      if (there !== undefined) {
        if (!markedCopyOf(there, bytes)) throw new CliError(`${destination} exists already and is not this image's marked copy (nothing is overwritten)`, 'output_exists');
        fixed.push({ path: item.path, out: destination, already: true });
        continue;
      }
      await writeAtomically(destination, protect(bytes, { signer, filename: item.path }).bytes, { replace: false }).catch((error: unknown) => {
        // A file that appeared there meanwhile: scan has no --overwrite to offer (write.ts's message names it, for protect).
        if (error instanceof CliError && error.code === 'output_exists') throw new CliError(`${destination} exists already (nothing is overwritten)`, 'output_exists');
        throw error;
      });
      fixed.push({ path: item.path, out: destination });
    } catch (error) {
      failed.push({ path: item.path, error: (error as Error).message });
    }
  }
  return { fixed };
}
