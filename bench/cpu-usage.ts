/**
 * Who used the CPU during a run (Linux /proc): the server process (all its
 * threads), the load generator (wrk, counted once this process has reaped it,
 * in its children's time), and everything else on the machine. The box may be
 * shared with other work; "other" says how much of it there was, so a low
 * number can be told from a busy neighbour.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** USER_HZ: the unit of /proc/stat and /proc/<pid>/stat times on Linux. */
const TICKS_PER_SECOND = 100;

export interface CpuSnapshot {
  readonly at: number;
  /** Non-idle CPU time of the whole machine, seconds. */
  readonly machine: number;
  readonly server: number;
  /** This process, seconds. */
  readonly self: number;
  /** Children of this process that have exited and were reaped (wrk, the CLI), seconds. */
  readonly children: number;
}

export interface CpuUse {
  /** Cores used on average over the run. */
  readonly serverCores: number;
  /** The load generator: wrk (reaped child) plus this process (autocannon runs here; idle under wrk). */
  readonly clientCores: number;
  readonly otherCores: number;
  /** Server CPU seconds over the run. */
  readonly serverSeconds: number;
}

function procTimes(pid: number | 'self'): { own: number; children: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) in parentheses: state is field 3.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
  const f = (n: number) => fields[n - 3] ?? 0;
  return { own: (f(14) + f(15)) / TICKS_PER_SECOND, children: (f(16) + f(17)) / TICKS_PER_SECOND };
}

/** undefined where /proc is missing (not Linux). */
export function cpuSnapshot(serverPid: number): CpuSnapshot | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
    const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number) as number[];
    const self = procTimes('self');
    return {
      at: performance.now(),
      machine: ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) / TICKS_PER_SECOND,
      server: procTimes(serverPid).own,
      self: self.own,
      children: self.children,
    };
  } catch {
    return undefined;
  }
}

export function cpuUse(a: CpuSnapshot | undefined, b: CpuSnapshot | undefined): CpuUse | undefined {
  if (!a || !b) return undefined;
  const seconds = (b.at - a.at) / 1000;
  const server = b.server - a.server;
  const client = b.children - a.children + (b.self - a.self);
  const other = Math.max(0, b.machine - a.machine - server - client);
  return { serverCores: server / seconds, clientCores: client / seconds, otherCores: other / seconds, serverSeconds: server };
}

/** CPU seconds of a process and all its descendants, from /proc (a browser's helper processes, a server's workers). */
export function treeCpuSeconds(pid: number): number {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  let total = 0;
  const visit = (p: number) => {
    try {
      total += procTimes(p).own;
    } catch {
      return;
    }
    for (const c of children.get(p) ?? []) visit(c);
  };
  visit(pid);
  return total;
}
