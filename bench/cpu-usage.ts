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

/**
 * A /proc `stat` file (of a process or a thread): its command name, its
 * fields by their number in proc(5) (3 = state), and its own CPU seconds
 * (user and system: a process's, all its threads').
 */
export function procStat(path: string): { readonly name: string; readonly field: (n: number) => number; readonly cpuSeconds: number } {
  const stat = readFileSync(path, 'utf8');
  // The command name, in parentheses, may hold spaces: the fields follow its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
  const field = (n: number) => fields[n - 3] ?? 0;
  return { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), field, cpuSeconds: (field(14) + field(15)) / TICKS_PER_SECOND };
}

/** CPU seconds of a process itself (every thread), and of its children that it has reaped. */
export function procTimes(pid: number | 'self'): { own: number; children: number } {
  const stat = procStat(`/proc/${pid}/stat`);
  return { own: stat.cpuSeconds, children: (stat.field(16) + stat.field(17)) / TICKS_PER_SECOND };
}

/** Non-idle CPU seconds of the whole machine (/proc/stat). */
export function machineCpuSeconds(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number) as number[];
  return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) / TICKS_PER_SECOND;
}

/** undefined where /proc is missing (not Linux). */
export function cpuSnapshot(serverPid: number): CpuSnapshot | undefined {
  try {
    const self = procTimes('self');
    return { at: performance.now(), machine: machineCpuSeconds(), server: procTimes(serverPid).own, self: self.own, children: self.children };
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

/** The processes running now, each with its parent (from /proc). */
function parents(): Map<number, number> {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      parentOf.set(Number(entry), procStat(`/proc/${entry}/stat`).field(4));
    } catch {
      // gone meanwhile
    }
  }
  return parentOf;
}

/** `roots` and all their descendants running now. */
export function processTree(roots: readonly number[]): number[] {
  const children = new Map<number, number[]>();
  for (const [pid, parent] of parents()) children.set(parent, [...(children.get(parent) ?? []), pid]);
  const tree: number[] = [];
  const visit = (pid: number) => {
    tree.push(pid);
    for (const child of children.get(pid) ?? []) visit(child);
  };
  for (const root of roots) visit(root);
  return tree;
}

/** CPU seconds of a process and all its descendants, from /proc (a browser's helper processes, a server's workers). */
export function treeCpuSeconds(pid: number): number {
  let total = 0;
  for (const p of processTree([pid])) {
    try {
      total += procTimes(p).own;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}
