/**
 * The signals that stop `optmark serve` (SIGTERM, and SIGINT where the
 * process acts on Ctrl-C), held from before the server starts until it ends.
 *
 * One listener per signal stays for the whole run and only what it calls
 * changes. Removing a signal's last listener closes Node's handle for it,
 * and a signal the process had already caught for that handle, but not yet
 * handed to JavaScript, is then dropped by libuv: a SIGTERM that came as the
 * start finished was lost, and the server ran on after it.
 */
export interface StopSignals {
  /** From now on each stop signal calls `stop`; one that came before is passed to it at once. */
  handle(stop: (signal: NodeJS.Signals) => void): void;
  /** Stop listening (a start that failed and ends the process otherwise). */
  release(): void;
}

/**
 * Start holding the stop signals. With `interrupt` false (a worker: a Ctrl-C
 * reaches the whole process group, and the primary acts on it), SIGINT is
 * ignored rather than acted on.
 */
export function holdStopSignals({ interrupt }: { readonly interrupt: boolean }): StopSignals {
  let early: NodeJS.Signals | undefined;
  let act: ((signal: NodeJS.Signals) => void) | undefined;
  const listener = (signal: NodeJS.Signals) => {
    if (act) act(signal);
    else early ??= signal;
  };
  const ignore = () => {};
  const onInterrupt = interrupt ? listener : ignore;
  process.on('SIGTERM', listener).on('SIGINT', onInterrupt);
  return {
    handle(stop) {
      act = stop;
      if (early) stop(early);
    },
    release() {
      process.off('SIGTERM', listener).off('SIGINT', onInterrupt);
    },
  };
}
