/**
 * Where a process's resident memory is, from outside it: the `Rss:` of each
 * mapping in /proc/<pid>/smaps, summed by what the mapping holds. The soak's
 * slow creep was in glibc's per-thread malloc arenas while the JS heap stayed
 * flat; this tells the two apart without touching the server.
 */
import { readFileSync } from 'node:fs';

/**
 * glibc's HEAP_MAX_SIZE on 64-bit: a thread arena (or each further heap of
 * one that outgrew it) reserves a window of this size aligned on it, all
 * PROT_NONE, and makes its head read-write as it grows. In smaps: an
 * anonymous rw-p mapping starting on the boundary, then the ---p rest up to
 * the next boundary (no rest once the window is full).
 */
const ARENA_WINDOW = 64 * 1024 * 1024;
/** glibc puts a guard page (or a few) below each thread stack, as a ---p mapping. */
const GUARD_MAX = 64 * 1024;
/** Thread stacks are 8 MiB (libuv, V8's platform) or 4 MiB (workers); V8 also puts guard pages before small pieces of its own, which are not stacks. */
const STACK_MIN = 1024 * 1024;
/** V8 reserves 8 GiB plus guards for each WebAssembly memory (the embedded PGlite database runs in one); nothing else here reserves as much. */
const WASM_RESERVATION = 4 * 1024 ** 3;

export const CATEGORIES = ['[heap]', 'thread arenas', 'wasm memory', 'thread stacks', 'other anonymous', 'files', 'other'] as const;
export type Category = (typeof CATEGORIES)[number];

/** What each category is, for the report. */
export const MEANING: Record<Category, string> = {
  '[heap]': 'main malloc arena (brk)',
  'thread arenas': "glibc's per-thread malloc arenas",
  'wasm memory': 'WebAssembly memory: PGlite',
  'thread stacks': 'main and thread stacks',
  'other anonymous': 'V8 heaps of every isolate, large mallocs, ...',
  files: 'node, libraries, mapped files',
  other: '[vdso], [vvar], ...',
};

export interface Smaps {
  readonly mb: Readonly<Record<Category, number>>;
  /** Arena windows: one per thread arena, unless one outgrew 64 MiB. */
  readonly arenas: number;
  /** MB resident in each arena window, by start address (hex): which arena grew. */
  readonly arenaMb: ReadonlyMap<string, number>;
  readonly totalMb: number;
}

interface Mapping {
  readonly start: number;
  readonly end: number;
  readonly perms: string;
  readonly name: string;
  rssKb: number;
}

const HEADER = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+ *(.*)$/;

/** undefined when the process is gone (or this is not Linux). */
export function readSmaps(pid: number): Smaps | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/smaps`, 'utf8');
  } catch {
    return undefined;
  }
  const maps: Mapping[] = [];
  for (const line of text.split('\n')) {
    const header = HEADER.exec(line);
    // Addresses stay below 2^48 on x86-64 and arm64: exact as numbers.
    if (header) maps.push({ start: parseInt(header[1]!, 16), end: parseInt(header[2]!, 16), perms: header[3]!, name: header[4]!, rssKb: 0 });
    else if (line.startsWith('Rss:')) maps.at(-1)!.rssKb = Number(/(\d+) kB/.exec(line)?.[1] ?? 0);
  }
  const mb = Object.fromEntries(CATEGORIES.map((c) => [c, 0])) as Record<Category, number>;
  const arenaMb = new Map<string, number>();
  maps.forEach((m, i) => {
    const kind = categorize(m, maps[i - 1], maps[i + 1]);
    if (kind === 'thread arenas') arenaMb.set(m.start.toString(16), m.rssKb / 1024);
    mb[kind] += m.rssKb / 1024;
  });
  return { mb, arenas: arenaMb.size, arenaMb, totalMb: maps.reduce((a, m) => a + m.rssKb, 0) / 1024 };
}

function categorize(m: Mapping, prev: Mapping | undefined, next: Mapping | undefined): Category {
  if (m.name === '[heap]') return '[heap]';
  if (m.name === '[stack]') return 'thread stacks';
  if (m.name.startsWith('[')) return 'other';
  // A path: the executable, shared libraries, V8's embedded code remapped from node, memfd files.
  if (m.name !== '') return 'files';
  // Anonymous from here on. `next` and `prev` count only when adjacent and anonymous: the other half of the same reservation.
  const after = next && next.start === m.end && next.name === '' && next.perms === '---p' ? next : undefined;
  const before = prev && prev.end === m.start && prev.name === '' && prev.perms === '---p' ? prev : undefined;
  // Head plus reserved rest exactly one window: WebAssembly memory and V8's code ranges can also start on a 64 MiB boundary, but reserve far more.
  if (m.start % ARENA_WINDOW === 0 && (after?.end ?? m.end) - m.start === ARENA_WINDOW) return 'thread arenas';
  if (after && after.end - after.start >= WASM_RESERVATION) return 'wasm memory';
  if (before && before.end - before.start <= GUARD_MAX && m.perms === 'rw-p' && m.end - m.start >= STACK_MIN) return 'thread stacks';
  return 'other anonymous';
}
