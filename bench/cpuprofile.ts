/**
 * Summary of a V8 .cpuprofile (node --cpu-prof): self time per function and,
 * per package (optmark's dist/ by folder, node_modules by package, Node
 * internals, V8's GC), self and inclusive time. Only samples taken inside the
 * measured window count when the window can be placed on the profile's clock
 * (both are the monotonic clock, in microseconds); otherwise all samples do.
 */
import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileRow {
  readonly name: string;
  readonly ms: number;
  /** Share of the busy (non-idle) samples in the window. */
  readonly pct: number;
}

export interface ProfileSummary {
  readonly windowed: boolean;
  readonly totalMs: number;
  readonly idleMs: number;
  readonly busyMs: number;
  readonly topSelf: ProfileRow[];
  readonly packagesSelf: ProfileRow[];
  readonly packagesInclusive: ProfileRow[];
  /** optmark's own functions (dist/) by time with them on the stack: the request path's steps. */
  readonly topInclusive: ProfileRow[];
}

const SPECIAL = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);

function shortUrl(url: string, root: string): string {
  const path = url.replace(/^file:\/\//, '');
  const nm = path.lastIndexOf('/node_modules/');
  if (nm >= 0) return path.slice(nm + '/node_modules/'.length);
  if (path.startsWith(`${root}/`)) return path.slice(root.length + 1);
  return path;
}

function category(frame: CallFrame, root: string): string {
  if (SPECIAL.has(frame.functionName)) return frame.functionName;
  const path = frame.url.replace(/^file:\/\//, '');
  if (path === '') return '(native / V8 builtins)';
  if (path.startsWith('node:')) return 'node internals';
  const nm = path.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = path.slice(nm + '/node_modules/'.length).split('/');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  const dist = /\/dist\/([^/]+)(?:\/([^/]+))?/.exec(path);
  if (dist) return `optmark dist/${dist[1]}${dist[2] && !dist[2].endsWith('.js') ? `/${dist[2]}` : ''}`;
  return shortUrl(frame.url, root);
}

function rows(map: Map<string, number>, busyMs: number, limit: number): ProfileRow[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([name, us]) => ({ name, ms: us / 1000, pct: (100 * us) / 1000 / busyMs }));
}

/** `window` in microseconds of the monotonic clock (process.hrtime.bigint() / 1000). */
export function summariseProfile(path: string, root: string, window?: { startUs: number; endUs: number }, limit = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  // Sample i is at startTime + sum(timeDeltas[0..i]) and stands for the time until the next sample.
  const stamps: number[] = [];
  let t = profile.startTime;
  for (const d of profile.timeDeltas) stamps.push((t += d));
  const spans = stamps.map((s, i) => (i + 1 < stamps.length ? stamps[i + 1]! - s : 0));
  const overlaps = window !== undefined && window.startUs < profile.endTime && window.endUs > profile.startTime;
  const inWindow = (i: number) => !overlaps || (stamps[i]! >= window!.startUs && stamps[i]! < window!.endUs);

  // A wasm frame belongs to the package whose JavaScript called into it (PGlite's Postgres, here).
  const categories = new Map<number, string>();
  const categoryOf = (id: number): string => {
    let cat = categories.get(id);
    if (cat === undefined) {
      const frame = byId.get(id)!.callFrame;
      if (frame.url.startsWith('wasm://') || frame.functionName.startsWith('js-to-wasm') || frame.functionName === 'GenericJSToWasmWrapper') {
        const up = parent.get(id);
        const caller = up === undefined ? '(root)' : categoryOf(up);
        cat = caller.endsWith(' (wasm)') ? caller : `${caller} (wasm)`;
      } else {
        cat = category(frame, root);
      }
      categories.set(id, cat);
    }
    return cat;
  };
  const frameKey = (f: CallFrame) =>
    SPECIAL.has(f.functionName) ? f.functionName : `${f.functionName || '(anonymous)'}  ${shortUrl(f.url, root) || '(native)'}${f.url ? `:${f.lineNumber + 1}` : ''}`;
  /** Frames every stack passes through (Node's event loop, V8 glue): left out of the inclusive tables. */
  const everywhere = (cat: string) => cat === 'node internals' || cat === '(native / V8 builtins)' || SPECIAL.has(cat);

  const self = new Map<string, number>();
  const fnIncl = new Map<string, number>();
  const packSelf = new Map<string, number>();
  const packIncl = new Map<string, number>();
  let totalUs = 0;
  let idleUs = 0;
  profile.samples.forEach((id, i) => {
    if (!inWindow(i)) return;
    const us = spans[i]!;
    const node = byId.get(id)!;
    totalUs += us;
    if (node.callFrame.functionName === '(idle)') {
      idleUs += us;
      return;
    }
    self.set(frameKey(node.callFrame), (self.get(frameKey(node.callFrame)) ?? 0) + us);
    const cat = categoryOf(id);
    packSelf.set(cat, (packSelf.get(cat) ?? 0) + us);
    // Inclusive: every package and function on this sample's stack, once each.
    const cats = new Set<string>();
    const fns = new Set<string>();
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
      const c = categoryOf(n);
      if (everywhere(c)) continue;
      cats.add(c.replace(/ \(wasm\)$/, ''));
      if (c.startsWith('optmark ')) fns.add(frameKey(byId.get(n)!.callFrame));
    }
    for (const c of cats) packIncl.set(c, (packIncl.get(c) ?? 0) + us);
    for (const f of fns) fnIncl.set(f, (fnIncl.get(f) ?? 0) + us);
  });
  const busyMs = (totalUs - idleUs) / 1000;
  return {
    windowed: overlaps,
    totalMs: totalUs / 1000,
    idleMs: idleUs / 1000,
    busyMs,
    topSelf: rows(self, busyMs, limit),
    packagesSelf: rows(packSelf, busyMs, limit),
    packagesInclusive: rows(packIncl, busyMs, limit),
    topInclusive: rows(fnIncl, busyMs, limit + 10),
  };
}

export function formatProfile(s: ProfileSummary): string {
  const table = (title: string, list: readonly ProfileRow[]) =>
    [title, ...list.map((r) => `  ${r.pct.toFixed(1).padStart(5)}%  ${r.ms.toFixed(0).padStart(6)} ms  ${r.name}`)].join('\n');
  return [
    `profile window: ${(s.totalMs / 1000).toFixed(1)} s of samples${s.windowed ? ' (the measured run only)' : ' (whole server life: window not found on the profile clock)'}, ` +
      `busy ${(s.busyMs / 1000).toFixed(1)} s, idle ${(s.idleMs / 1000).toFixed(1)} s of the main thread; percentages are of busy time`,
    table('top self time, by function:', s.topSelf),
    table('self time, by package:', s.packagesSelf),
    table('inclusive time, by package (on the stack; a package includes the wasm it calls; Node/V8 frames left out):', s.packagesInclusive),
    table("inclusive time, optmark's own functions (the request path's steps):", s.topInclusive),
  ].join('\n\n');
}
