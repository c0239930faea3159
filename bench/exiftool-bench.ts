/**
 * ExifTool's side of the comparison: the same write in -stay_open batch mode,
 * so Perl start-up is paid once, as a fair service would run it. ExifTool
 * edits files in place, so each run needs a fresh copy of the input; all the
 * copies are made first and only the write commands are timed. Beside it,
 * one `exiftool` process per file, as a script calling it per upload would.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { verify } from '../src/index.js';
import { ExifTool, EXIFTOOL_SCRIPT } from '../test/support/exiftool.js';
import { summarise, timeAsync, type Sample } from './timing.js';

export const EXIFTOOL_ARGS = ['-overwrite_original', '-XMP-plus:DataMining#=DMI-PROHIBITED-AIMLTRAINING'] as const;
/** With -n ExifTool reads the PLUS vocabulary code back without its URI prefix. */
const WRITTEN_CODE = 'DMI-PROHIBITED-AIMLTRAINING';

export class ExifToolBench {
  private readonly et = new ExifTool();

  constructor(private readonly workDir: string) {
    mkdirSync(workDir, { recursive: true });
  }

  async version(): Promise<string> {
    return (await this.et.run(['-ver'])).stdout.trim();
  }

  private async write(file: string): Promise<void> {
    const { stdout, stderr } = await this.et.run([...EXIFTOOL_ARGS, file]);
    // A silent failure would make ExifTool look fast: insist on its success line.
    if (!/\b1 image files updated\b/.test(stdout) || /error/i.test(stderr)) {
      throw new Error(`exiftool did not write ${file}: ${stdout.trim()} ${stderr.trim()}`);
    }
  }

  /** One untimed write, so ExifTool has loaded its writer modules before timing starts. */
  async warmUp(source: string, ext: string): Promise<void> {
    const copy = join(this.workDir, `warmup.${ext}`);
    copyFileSync(source, copy);
    await this.write(copy);
    rmSync(copy);
  }

  /**
   * Median time of ExifTool writes of `source`, each into its own fresh copy:
   * at least `minRuns`, then more while under `minTimeMs`, up to `maxRuns`
   * (ExifTool takes seconds on a big PNG, milliseconds on a JPEG).
   * Checks the last written copy.
   */
  async measure(source: string, ext: string, minRuns = 5, maxRuns = 11, minTimeMs = 2000): Promise<Sample> {
    const copies = Array.from({ length: maxRuns }, (_, i) => join(this.workDir, `copy-${i}.${ext}`));
    try {
      for (const copy of copies) copyFileSync(source, copy);
      const times: number[] = [];
      let spent = 0;
      for (const copy of copies) {
        if (times.length >= minRuns && spent >= minTimeMs) break;
        const t = await timeAsync(() => this.write(copy));
        times.push(t);
        spent += t;
      }
      // Check the result both ways: ExifTool reads its value back, and our verify agrees it is an opt-out.
      const last = copies[times.length - 1]!;
      const written = await this.et.readJson(last, ['-XMP-plus:DataMining']);
      if (written['XMP-plus:DataMining'] !== WRITTEN_CODE || !verify(readFileSync(last)).optedOut) {
        throw new Error(`exiftool wrote ${JSON.stringify(written)} into ${source}`);
      }
      return summarise(times);
    } finally {
      for (const copy of copies) rmSync(copy, { force: true });
    }
  }

  /** Median time of one whole `perl exiftool ...` process per write, each on a fresh copy (Perl's start-up included). */
  measureProcesses(source: string, ext: string, runs = 5): Sample {
    const copies = Array.from({ length: runs }, (_, i) => join(this.workDir, `process-${i}.${ext}`));
    try {
      for (const copy of copies) copyFileSync(source, copy);
      const times = copies.map((copy) => {
        const t = performance.now();
        const r = spawnSync('perl', [EXIFTOOL_SCRIPT, ...EXIFTOOL_ARGS, copy], { encoding: 'utf8' });
        const ms = performance.now() - t;
        if (r.status !== 0 || !/\b1 image files updated\b/.test(r.stdout)) throw new Error(`exiftool did not write ${copy}: ${r.stdout} ${r.stderr}`);
        return ms;
      });
      if (!verify(readFileSync(copies.at(-1)!)).optedOut) throw new Error(`exiftool's write of ${source} does not verify as opted out`);
      return summarise(times);
    } finally {
      for (const copy of copies) rmSync(copy, { force: true });
    }
  }

  close(): Promise<void> {
    return this.et.close();
  }
}
