/**
 * What a call's work costs once its body has been read, in CPU-seconds,
 * added up where the work is done (the failed-work budget charges it to the
 * account when the call fails or is abandoned: app/failed-work.ts):
 *
 * - on the event loop, the thread CPU time of each synchronous step
 *   (`onThisThread`), which no other call can interleave with;
 * - on a worker thread, the CPU time the task reports; for a task stopped
 *   before it could report (a time budget, a client gone), the time since it
 *   was handed to the pool;
 * - in the pixel decoder (libvips, on threads of its own), the time a decode
 *   or an encode held its slot.
 *
 * The meter of the call in progress travels with its asynchronous work
 * (AsyncLocalStorage), so the adapters that do the work charge it without
 * every port carrying it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface WorkMeter {
  /** CPU-seconds charged so far. */
  seconds: number;
}

const calls = new AsyncLocalStorage<WorkMeter>();

/** Run `work` with `meter` as the meter of everything it does. */
export function measuringWork<T>(meter: WorkMeter, work: () => Promise<T>): Promise<T> {
  return calls.run(meter, work);
}

/** Charge `seconds` of work to the call in progress (nothing outside a call). */
export function chargeWork(seconds: number): void {
  const meter = calls.getStore();
  if (meter && seconds > 0) meter.seconds += seconds;
}

/** Run a synchronous step and charge the CPU time this thread spent on it. */
export function onThisThread<T>(step: () => T): T {
  const started = process.threadCpuUsage();
  try {
    return step();
  } finally {
    const used = process.threadCpuUsage(started);
    chargeWork((used.user + used.system) / 1e6);
  }
}
