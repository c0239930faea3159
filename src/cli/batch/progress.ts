/**
 * What a batch run shows while it works. On a terminal: one bar on standard
 * error, redrawn at most ten times a second, with the count, the rate and
 * the time left; failures, warnings and the lines that must be seen (a file
 * that does not opt out) are printed above it. Otherwise (a pipe, a file,
 * CI): plain lines, one per file, and nothing redrawn.
 */
export interface Progress {
  /**
   * File `index` is done, whatever its outcome; `line` (if any) goes to
   * standard output when lines are shown, or when it is `wanted` (shown
   * above the bar too), in the order of the files (a file done early waits
   * for those before it).
   */
  done(index: number, line?: string, wanted?: boolean): void;
  /** A line for standard error (a failure, a warning), shown above the bar on a terminal. */
  note(line: string): void;
  /** File `index` will not be done (the run stopped); its `line` (if any, when lines are shown) takes its turn. */
  skip(index: number, line?: string): void;
  /** The end; `unstarted` gives the line of each file the run stopped before (printed when lines are shown). */
  finish(unstarted?: (index: number) => string | undefined): void;
}

export interface ProgressOptions {
  readonly total: number;
  readonly verb: string;
  /** Draw the bar (standard error is a terminal and there is more than one file). */
  readonly bar: boolean;
  /**
   * Print each file's line on standard output: it is not the terminal the
   * bar is drawn on, or the lines are JSON, which a program reads whatever
   * the output is. Otherwise only the lines `done` is told are wanted.
   */
  readonly lines: boolean;
  readonly counts: () => string;
  readonly columns?: () => number;
}

const clock = (seconds: number) => {
  if (!Number.isFinite(seconds)) return '--:--';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return `${h > 0 ? `${h}:${String(m).padStart(2, '0')}` : String(m)}:${String(s % 60).padStart(2, '0')}`;
};

export function createProgress(options: ProgressOptions): Progress {
  const { total } = options;
  const started = performance.now();
  let finished = 0;
  let drawn = 0;
  /** Lines (to print) of files done before those ahead of them, by index; `next` is the first not printed yet. */
  const waiting = new Map<number, string | undefined>();
  let next = 0;
  let shown = false;

  const render = (): string => {
    const seconds = (performance.now() - started) / 1000;
    const rate = seconds > 0 ? finished / seconds : 0;
    const eta = rate > 0 ? (total - finished) / rate : Infinity;
    const text = ` ${finished}/${total} ${Math.floor((finished / Math.max(1, total)) * 100)}% ${rate.toFixed(1)} files/s ETA ${clock(eta)} ${options.counts()}`;
    const width = Math.max(10, Math.min(40, (options.columns?.() ?? 80) - text.length - 4));
    const full = Math.round((finished / Math.max(1, total)) * width);
    return `${options.verb} [${'#'.repeat(full)}${'.'.repeat(width - full)}]${text}`;
  };
  const draw = (force = false) => {
    if (!options.bar) return;
    const now = performance.now();
    if (!force && now - drawn < 100) return;
    drawn = now;
    shown = true;
    process.stderr.write(`\r\x1b[K${render()}`);
  };
  const clear = () => {
    if (shown) process.stderr.write('\r\x1b[K');
  };
  draw(true);

  /** Prints the lines now in turn. */
  const flush = () => {
    let out = '';
    while (waiting.has(next)) {
      const ready = waiting.get(next);
      waiting.delete(next++);
      if (ready !== undefined) out += `${ready}\n`;
    }
    if (out) {
      if (options.bar) clear();
      process.stdout.write(out);
      if (options.bar) draw(true);
    }
  };

  return {
    done(index, line, wanted = false) {
      finished++;
      waiting.set(index, options.lines || wanted ? line : undefined);
      flush();
      draw(finished === total);
    },
    skip(index, line) {
      waiting.set(index, options.lines ? line : undefined);
      flush();
    },
    note(line) {
      clear();
      process.stderr.write(`${line}\n`);
      draw(true);
    },
    finish(unstarted) {
      // The files started form the first `next` (each is done or skipped by now); the others were never started.
      if (unstarted) for (let index = next; index < total; index++) waiting.set(index, options.lines ? unstarted(index) : undefined);
      flush();
      if (options.bar) {
        draw(true);
        process.stderr.write('\n');
      }
    },
  };
}
