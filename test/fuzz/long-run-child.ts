/**
 * The fuzzing half of `npm run fuzz`, run in a child process that
 * long-run.ts watches: a hang or a crash in native code then costs the child,
 * not the run, and the parent still knows the last input. Fuzzes one format
 * until a deadline; each failure is saved as a regression fixture and
 * reported, and the run goes on. The first two failures of a kind are shrunk
 * first, and the run goes on with the next fast-check seed; later ones of
 * that kind are saved as they are, without shrinking or stopping, so that
 * one frequent bug does not eat the whole run.
 *
 * Every input also goes through verify's decoder path (pixel-path.ts), and
 * after every input the process's resident size is checked against its
 * bound. A breach is saved as it is (resident memory does not come back
 * down, so shrinking would blame whichever candidate ran next) and ends
 * this process: the parent starts a fresh one from the next seed.
 */
import fc from 'fast-check';
import type { Format } from './containers.js';
import { saveFixture } from './fixtures.js';
import { fuzzCase, specToJson, type FuzzCase } from './mutators.js';
import { createPixelPath } from './pixel-path.js';
import { checkInput, checkResidentMemory, MemoryBoundViolation, PropertyViolation } from './property.js';
import { loadSeeds } from './seeds.js';

export interface ChildConfig {
  readonly format: Format;
  readonly seed: number;
  readonly until: number;
  readonly runs: number;
  readonly maxXmpBytes: number;
  readonly budgetMs: number;
  /** The resident size this process may have after any input. */
  readonly maxRssBytes: number;
  /** Where failing inputs go. */
  readonly out: string;
}

export type ChildMessage =
  | { type: 'case'; spec: string }
  | { type: 'broken'; message: string }
  | { type: 'failure'; seed: number; path: string; file: string; message: string; case: string; recipe: string }
  | {
      type: 'done';
      /** The next seed to fuzz from. */
      seed: number;
      runs: number;
      shrinks: number;
      outcomes: Record<string, number>;
      recurrences: Record<string, string[]>;
      /** Calls of the pixel decoder for the fingerprint check (shrinking included), and how many it refused. */
      decodes: number;
      refused: number;
      /** Highest resident size after an input, in bytes. */
      maxRss: number;
      /** Stopped early (a memory breach): start a fresh process from `seed`. */
      restart: boolean;
    };

const FIXTURES_PER_KIND = 2;

const send = (message: ChildMessage) => process.send!(message);

/** What kind of failure: the message without its numbers, and where in src/ an exception came from. */
function kindOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error && error.cause instanceof Error ? (error.cause.stack ?? '') : '';
  const site = cause.split('\n').find((line) => line.includes('/src/'))?.trim() ?? '';
  return `${message.split('\n')[0]!.replace(/\d+/g, 'N').slice(0, 100)} ${site.replace(/:\d+\)?$/, '')}`.trim();
}

/** Shrinking a failure gets this long at most; a half-shrunk input is still worth keeping. */
const SHRINK_MS = 180_000;
/**
 * A time failure is shrunk against a looser bound, so the fixture it leaves
 * is clearly over the real one on any machine, not just at the edge.
 */
const SHRINK_TIME_FACTOR = 3;

async function main(config: ChildConfig): Promise<void> {
  const seeds = await loadSeeds();
  const arbitrary = fuzzCase(seeds, config.format, { maxXmpBytes: config.maxXmpBytes });
  const pixelPath = createPixelPath();
  await pixelPath.warm();
  let maxRss = 0;
  const outcomes: Record<string, number> = {};
  const saved = new Map<string, number>();
  /** Failures of a kind already shrunk twice: the fixtures saved for them, unshrunk. */
  const recurrences: Record<string, string[]> = {};
  let seed = config.seed;
  let shrinking = false;
  const property = (budgetMs: number) =>
    fc.asyncProperty(arbitrary, async (c: FuzzCase) => {
      // Sent before the call: if the call never returns, the parent has the recipe.
      send({ type: 'case', spec: specToJson(c) });
      let report;
      try {
        report = await checkInput(c.bytes, { sign: c.sign, value: c.value, budgetMs, pixelPath });
        // Not while shrinking another failure: a breach then would take the place of the failure being shrunk.
        if (!shrinking) {
          const rss = process.memoryUsage.rss();
          maxRss = Math.max(maxRss, rss);
          checkResidentMemory(config.maxRssBytes, rss);
        }
      } catch (error) {
        if (error instanceof MemoryBoundViolation) throw error;
        const kind = kindOf(error);
        if (!(error instanceof PropertyViolation) || (saved.get(kind) ?? 0) < FIXTURES_PER_KIND) throw error;
        // While shrinking, a candidate failing in a kind already saved is not the failure being shrunk.
        if (!shrinking) (recurrences[kind] ??= []).push(saveFixture(config.format, seed, c.bytes, config.out));
        return;
      }
      const key = report.protect === 'ok' ? `ok${report.idempotent ? '' : ' (not idempotent)'}` : report.protect;
      if (!shrinking) outcomes[key] = (outcomes[key] ?? 0) + 1;
    });

  let runs = 0;
  let shrinks = 0;
  let restart = false;
  while (runs < config.runs && Date.now() < config.until) {
    const found = await fc.check(property(config.budgetMs), {
      seed,
      numRuns: config.runs - runs,
      endOnFailure: true,
      plugins: [fc.interruptAfterTimeLimit(Math.max(1, config.until - Date.now()))],
    });
    runs += found.numRuns;
    if (!found.failed || !found.counterexample) break;
    if (found.errorInstance instanceof MemoryBoundViolation) {
      const failing = (found.counterexample as [FuzzCase])[0];
      const file = saveFixture(config.format, seed, failing.bytes, config.out);
      send({ type: 'failure', seed, path: found.counterexamplePath ?? '', file, message: found.errorInstance.message, case: fc.stringify(failing), recipe: specToJson(failing) });
      seed = (seed + 1) >>> 0;
      restart = true;
      break;
    }
    // Replaying the path resumes from the failing input, and shrinks it.
    const timing = kindOf(found.errorInstance).includes(' took ');
    shrinking = true;
    const shrunk = await fc.check(property(timing ? config.budgetMs * SHRINK_TIME_FACTOR : config.budgetMs), {
      seed,
      path: found.counterexamplePath ?? undefined,
      plugins: [fc.interruptAfterTimeLimit(SHRINK_MS)],
    });
    shrinking = false;
    shrinks += shrunk.numShrinks;
    const final = shrunk.failed && shrunk.counterexample ? shrunk : found;
    const failing = (final.counterexample as [FuzzCase])[0];
    const file = saveFixture(config.format, seed, failing.bytes, config.out);
    const error = final.errorInstance;
    saved.set(kindOf(error), (saved.get(kindOf(error)) ?? 0) + 1);
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
    send({ type: 'failure', seed, path: final.counterexamplePath ?? '', file, message, case: fc.stringify(failing), recipe: specToJson(failing) });
    seed = (seed + 1) >>> 0;
  }
  send({ type: 'done', seed, runs, shrinks, outcomes, recurrences, decodes: pixelPath.stats.decodes, refused: pixelPath.stats.refused, maxRss, restart });
}

try {
  await main(JSON.parse(process.argv[2]!) as ChildConfig);
} catch (error) {
  // An exception outside the property is a fault of the harness (a mutator, the seeds), not of the input.
  send({ type: 'broken', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exitCode = 2;
}
process.disconnect?.();
