/** Result tables and the pass/fail verdict every script ends with. */

const NUMBER = /^(-|[-+]?\d[\d.,]*( ?(s|ms|MB|%|x))?)$/;

/** A plain text table: columns of numbers right-aligned so they line up, the rest left-aligned. */
export function table(header: readonly string[], rows: ReadonlyArray<readonly (string | number)[]>): string {
  const cells = rows.map((row) => row.map(String));
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((row) => (row[i] ?? '').length)));
  const right = header.map((_, i) => cells.length > 0 && cells.every((row) => NUMBER.test(row[i] ?? '-')));
  const line = (row: readonly string[]) => row.map((c, i) => (right[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)].join('\n');
}

export const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0) : '-');
export const mb = (v: number | undefined) => (v !== undefined && Number.isFinite(v) ? v.toFixed(1) : '-');

export interface Check {
  readonly scope: string;
  readonly name: string;
  readonly pass: boolean;
  readonly detail: string;
}

/** The properties a run asserts; the exit code follows them. */
export class Checks {
  readonly all: Check[] = [];

  constructor(private readonly log: (line: string) => void) {}

  check(scope: string, name: string, pass: boolean, detail: string): boolean {
    this.all.push({ scope, name, pass, detail });
    this.log(`  ${pass ? 'PASS' : 'FAIL'}  ${name}: ${detail}`);
    return pass;
  }

  get failed(): Check[] {
    return this.all.filter((c) => !c.pass);
  }

  /** The verdict table; true when every check passed. */
  summary(): boolean {
    const loud = (text: string) => (process.stdout.isTTY ? `\x1b[1;31m${text}\x1b[0m` : text);
    this.log('');
    const brief = (detail: string) => {
      const line = detail.replace(/\s+/g, ' ');
      return line.length > 220 ? `${line.slice(0, 219)}…` : line;
    };
    this.log(table(['scenario', 'property', 'result', 'detail'], this.all.map((c) => [c.scope, c.name, c.pass ? 'PASS' : loud('FAIL'), brief(c.detail)])));
    this.log('');
    const failed = this.failed.length;
    this.log(failed === 0 ? `all ${this.all.length} properties hold` : loud(`${failed} of ${this.all.length} properties FAILED`));
    return failed === 0;
  }
}
