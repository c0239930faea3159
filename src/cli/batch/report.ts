/** --report FILE.csv|FILE.json: one row per file of a batch run, written when it ends (also when it is stopped). */
import { writeFile } from 'node:fs/promises';

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

export function checkReportPath(path: string | undefined): void {
  if (path !== undefined && !/\.(csv|json)$/i.test(path)) throw new Error('--report takes a file name ending in .csv or .json');
}
