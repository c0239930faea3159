/**
 * ExifTool 13.x (npm exiftool-vendored.pl, on the system Perl) kept running in
 * -stay_open mode, so that tests and benchmarks pay Perl's start-up once.
 * Each command's stdout and stderr are collected up to its `{readyN}` marker.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createRequire } from 'node:module';

export const EXIFTOOL_SCRIPT = createRequire(import.meta.url).resolve('exiftool-vendored.pl/bin/exiftool');

interface Pending {
  readonly id: number;
  readonly resolve: (value: { stdout: string; stderr: string }) => void;
  readonly reject: (error: Error) => void;
}

export class ExifTool {
  private readonly proc: ChildProcessWithoutNullStreams;
  private readonly pending: Pending[] = [];
  private stdout = '';
  private stderr = '';
  private next = 1;

  constructor() {
    this.proc = spawn('perl', [EXIFTOOL_SCRIPT, '-stay_open', 'True', '-@', '-'], { stdio: 'pipe' });
    this.proc.stdout.setEncoding('utf8').on('data', (d: string) => {
      this.stdout += d;
      this.settle();
    });
    this.proc.stderr.setEncoding('utf8').on('data', (d: string) => {
      this.stderr += d;
      this.settle();
    });
    this.proc.on('exit', (code) => {
      for (const p of this.pending.splice(0)) p.reject(new Error(`exiftool exited with ${code}`));
    });
  }

  /** Run one ExifTool command (arguments without the file-list separator). */
  run(args: readonly string[]): Promise<{ stdout: string; stderr: string }> {
    for (const arg of args) if (/[\r\n]/.test(arg)) throw new Error('exiftool arguments cannot hold newlines');
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.push({ id, resolve, reject });
      this.proc.stdin.write(`${[...args, '-echo4', `{ready${id}}`, `-execute${id}`].join('\n')}\n`);
    });
  }

  private settle(): void {
    for (;;) {
      const head = this.pending[0];
      if (!head) return;
      const marker = `{ready${head.id}}\n`;
      const out = this.stdout.indexOf(marker);
      const err = this.stderr.indexOf(marker);
      if (out < 0 || err < 0) return;
      this.pending.shift();
      const result = { stdout: this.stdout.slice(0, out), stderr: this.stderr.slice(0, err) };
      this.stdout = this.stdout.slice(out + marker.length);
      this.stderr = this.stderr.slice(err + marker.length);
      head.resolve(result);
    }
  }

  /** Tags of one file as ExifTool's JSON (`-j -G1 -n` plus the given arguments). */
  async readJson(file: string, args: readonly string[] = []): Promise<Record<string, unknown>> {
    const { stdout, stderr } = await this.run(['-j', '-G1', '-n', '-a', ...args, file]);
    const parsed = JSON.parse(stdout || '[{}]') as Array<Record<string, unknown>>;
    if (stderr.trim()) parsed[0]!['ExifTool:StdErr'] = stderr.trim();
    return parsed[0]!;
  }

  /**
   * Every warning and error ExifTool reports for a file when it reads it
   * with -validate (which adds the checks of its validation, such as
   * repeated XMP properties), with " [xN]" repeat counts removed, each once,
   * sorted. Read as text: in JSON, the repeated Warning tags of -a collapse
   * into one and all but the first are lost.
   */
  async warnings(file: string): Promise<string[]> {
    const { stdout, stderr } = await this.run(['-validate', '-Warning', '-Error', '-a', '-G1', '-s', file]);
    const values = [...stdout.matchAll(/^\[ExifTool\]\s+(?:Warning|Error)\s*: (.*)$/gm)].map((m) => m[1]!.trim().replace(/ \[x\d+\]$/, ''));
    if (stderr.trim()) values.push(...stderr.trim().split('\n').map((line) => line.split(file).join('FILE')));
    return [...new Set(values)].sort();
  }

  async close(): Promise<void> {
    if (this.proc.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      this.proc.once('exit', () => resolve());
      this.proc.stdin.end('-stay_open\nFalse\n');
    });
  }
}
