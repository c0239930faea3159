/** --report FILE.csv|FILE.json: one row per file of a batch run, written when it ends (also when it is stopped). */
import { constants } from 'node:fs';
import { access, stat, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

export type Outcome = 'marked' | 'already-marked' | 'opted-out' | 'not-opted-out' | 'skipped' | 'failed' | 'not-done';

export interface Row {
  readonly file: string;
  readonly outcome: Outcome;
  readonly output?: string;
  readonly value?: string;
  readonly sha256?: string;
  readonly code?: string;
  readonly error?: string;
  readonly requestId?: string;
}

const COLUMNS: ReadonlyArray<keyof Row> = ['file', 'outcome', 'output', 'value', 'sha256', 'code', 'error', 'requestId'];

/** RFC 4180 field: quoted when it holds a comma, a quote or a line end; a leading =, +, - or @ is kept from spreadsheet formulas. */
function field(value: string | undefined): string {
  if (value === undefined) return '';
  const text = /^[=+\-@]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function reportText(path: string, rows: readonly Row[]): string {
  if (/\.json$/i.test(path)) return `${JSON.stringify(rows, null, 2)}\n`;
  return `${[COLUMNS.join(','), ...rows.map((row) => COLUMNS.map((c) => field(row[c])).join(','))].join('\r\n')}\r\n`;
}

export async function writeReport(path: string, rows: readonly Row[]): Promise<void> {
  await writeFile(path, reportText(path, rows));
}

/** Writes the report after the summary; a failure (the disk full, the folder gone meanwhile) is said, and is false. */
export async function saveReport(path: string, rows: readonly Row[]): Promise<boolean> {
  try {
    await writeReport(path, rows);
    return true;
  } catch (error) {
    process.stderr.write(`optmark: cannot write the report ${path}: ${(error as Error).message}\n`);
    return false;
  }
}

/**
 * Refuses, before any work, a report that could not be written at the end
 * (a name without .csv or .json, a folder that is not there or not
 * writable, a folder of that name): the work was done, then the run ended
 * on ENOENT, without its summary.
 */
export async function checkReportPath(path: string | undefined): Promise<void> {
  if (path === undefined) return;
  if (!/\.(csv|json)$/i.test(path)) throw new Error('--report takes a file name ending in .csv or .json');
  const folder = dirname(resolve(path));
  const info = await stat(folder).catch(() => undefined);
  if (!info?.isDirectory()) throw new Error(`--report ${path}: the folder ${folder} does not exist`);
  await access(folder, constants.W_OK).catch(() => Promise.reject(new Error(`--report ${path}: the folder ${folder} is not writable`)));
  const existing = await stat(path).catch(() => undefined);
  if (existing?.isDirectory()) throw new Error(`--report ${path}: it is a folder`);
  if (existing) await access(path, constants.W_OK).catch(() => Promise.reject(new Error(`--report ${path}: the file is not writable`)));
}
