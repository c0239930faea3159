/**
 * `npm run fuzz`: the property of the fuzz tests (property.ts) over many
 * more mutated inputs, with a random seed unless one is given:
 *
 *   npm run fuzz -- [--minutes 10] [--runs N] [--seed N] [--formats jpeg,png,webp]
 *                   [--max-xmp BYTES] [--budget-ms 2000] [--max-rss-mb 896] [--out DIR]
 *   npm run fuzz -- --recipe '<recipe JSON from a report>' --formats png --seed N [--max-xmp BYTES]
 *
 * The second form rebuilds one reported input (with another XMP size bound,
 * say, to make a time failure cheaper to replay), checks it and saves it
 * when it fails.
 *
 * The time (and runs, per format) are shared out over the formats, one
 * after the other. Every failing input is saved under
 * test/fuzz/regressions/, which `npm test` replays (shrunk first, for the
 * first two of each kind of failure). A call that does not
 * return within two minutes or a crash of the process counts as a failure too:
 * the fuzzing runs in a child process, and this one keeps the last input.
 *
 * Besides the library, every input goes through verify's decoder path (the
 * pixel decoder and the fingerprint check, pixel-path.ts): an exception
 * there other than our typed client errors, or a call over the time bound,
 * is a failure like any other. After every input the child's resident size
 * must be under `--max-rss-mb`; a breach is saved as a failing input too,
 * and the run goes on in a fresh child from the next seed.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Format } from './containers.js';
import { REGRESSIONS_DIR, saveFixture } from './fixtures.js';
import type { ChildConfig, ChildMessage } from './long-run-child.js';
import { build, specFromJson } from './mutators.js';
import { createPixelPath } from './pixel-path.js';
import { checkInput, checkResidentMemory, MAX_RSS_AFTER_INPUT_LONG_RUN } from './property.js';
import { loadSeeds } from './seeds.js';

/** Long enough for a quadratic call to finish and be shrunk; past it, the input is saved as it is. */
const HANG_MS = 120_000;
const CHILD = fileURLToPath(new URL('./long-run-child.ts', import.meta.url));

const { values } = parseArgs({
  options: {
    minutes: { type: 'string' },
    runs: { type: 'string' },
    seed: { type: 'string' },
    formats: { type: 'string', default: 'jpeg,png,webp' },
    'max-xmp': { type: 'string', default: String(2 * 1024 * 1024) },
    'budget-ms': { type: 'string', default: '2000' },
    // property.ts says how it was chosen.
    'max-rss-mb': { type: 'string', default: String(MAX_RSS_AFTER_INPUT_LONG_RUN / 1048576) },
    out: { type: 'string', default: REGRESSIONS_DIR },
    recipe: { type: 'string' },
  },
});
const formats = values.formats.split(',') as Format[];
const minutes = Number(values.minutes ?? (values.runs ? 24 * 60 : 5));
const runsPerFormat = values.runs ? Number(values.runs) : Number.MAX_SAFE_INTEGER;
const baseSeed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 0x7fffffff);
const maxXmpBytes = Number(values['max-xmp']);
const budgetMs = Number(values['budget-ms']);
const maxRssBytes = Number(values['max-rss-mb']) * 1024 * 1024;
const log = (line: string) => process.stdout.write(`${line}\n`);

interface SliceResult {
  runs: number;
  shrinks: number;
  /** Calls of the pixel decoder for the fingerprint check, and how many it refused with a typed error. */
  decodes: number;
  refused: number;
  /** Highest resident size of a child after an input. */
  maxRss: number;
  failures: string[];
  outcomes: Record<string, number>;
  recurrences: Record<string, string[]>;
  seeds: number[];
}

/** Fuzz one format until `until`, restarting the child after a hang or a crash. */
async function slice(format: Format, until: number): Promise<SliceResult> {
  const result: SliceResult = { runs: 0, shrinks: 0, decodes: 0, refused: 0, maxRss: 0, failures: [], outcomes: {}, recurrences: {}, seeds: [] };
  let seed = baseSeed;
  while (Date.now() < until && result.runs < runsPerFormat) {
    result.seeds.push(seed);
    const config: ChildConfig = { format, seed, until, runs: runsPerFormat - result.runs, maxXmpBytes, budgetMs, maxRssBytes, out: values.out };
    const outcome = await runChild(config, result);
    if (outcome.finished && outcome.restart) {
      // Over the bound before its second input, a fresh process would only breach again: the bound is wrong, not an input.
      if (outcome.cases <= 1) throw new Error(`a fresh fuzzing process is over the resident-size bound (${values['max-rss-mb']} MB) at its first input`);
      // A memory breach, already saved and reported: a fresh process goes on from the next seed.
      seed = outcome.nextSeed;
      continue;
    }
    if (outcome.finished) break;
    if (outcome.why === 'broken' || outcome.cases === 0) throw new Error(`the fuzzing process stopped: ${outcome.why}`);
    // A hang or a crash: the last case is the culprit; go on from the next seed.
    result.runs += outcome.cases;
    const spec = outcome.lastSpec ? specFromJson(outcome.lastSpec) : undefined;
    if (spec) {
      const bytes = build(spec, await seedsOnce(), { maxXmpBytes });
      const file = saveFixture(format, seed, bytes, values.out);
      result.failures.push(file);
      log(`  ${outcome.why} on ${spec.seed}; saved ${file}\n    recipe: ${outcome.lastSpec}`);
    }
    seed = outcome.nextSeed + 1;
  }
  return result;
}

let seedCache: Awaited<ReturnType<typeof loadSeeds>> | undefined;
async function seedsOnce() {
  seedCache ??= await loadSeeds();
  return seedCache;
}

interface ChildOutcome {
  finished: boolean;
  /** The child stopped early and asks to be started again from `nextSeed`. */
  restart: boolean;
  why: string;
  cases: number;
  lastSpec: string | undefined;
  nextSeed: number;
}

function runChild(config: ChildConfig, result: SliceResult): Promise<ChildOutcome> {
  return new Promise((resolve) => {
    const child = fork(CHILD, [JSON.stringify(config)], { execArgv: ['--import', 'tsx'] });
    let lastSpec: string | undefined;
    let lastBeat = Date.now();
    let cases = 0;
    let finished = false;
    let restart = false;
    let nextSeed = config.seed;
    let why = 'crash';
    const watchdog = setInterval(() => {
      if (Date.now() - lastBeat > HANG_MS) {
        why = `no answer within ${HANG_MS / 1000} s`;
        child.kill('SIGKILL');
      }
    }, 1000);
    child.on('message', (message: ChildMessage) => {
      lastBeat = Date.now();
      if (message.type === 'case') {
        lastSpec = message.spec;
        cases++;
      } else if (message.type === 'broken') {
        why = 'broken';
        log(`  the fuzzing harness failed:\n    ${message.message.split('\n').slice(0, 8).join('\n    ')}`);
      } else if (message.type === 'failure') {
        nextSeed = message.seed + 1;
        result.failures.push(message.file);
        log(`  FAILURE (seed ${message.seed}, path ${message.path}): saved ${message.file}\n    ${message.case}\n    recipe: ${message.recipe}\n    ${message.message.split('\n').slice(0, 8).join('\n    ')}`);
      } else {
        finished = true;
        restart = message.restart;
        if (restart) nextSeed = message.seed;
        result.runs += message.runs;
        result.shrinks += message.shrinks;
        result.decodes += message.decodes;
        result.refused += message.refused;
        result.maxRss = Math.max(result.maxRss, message.maxRss);
        for (const [k, n] of Object.entries(message.outcomes)) result.outcomes[k] = (result.outcomes[k] ?? 0) + n;
        for (const [k, files] of Object.entries(message.recurrences)) (result.recurrences[k] ??= []).push(...files);
      }
    });
    child.on('exit', (code, signal) => {
      clearInterval(watchdog);
      if (!finished && why === 'crash') why = `crash (exit ${code ?? signal})`;
      resolve({ finished, restart, why, cases, lastSpec, nextSeed });
    });
  });
}

if (values.recipe !== undefined) {
  const bytes = build(specFromJson(values.recipe), await seedsOnce(), { maxXmpBytes });
  try {
    const pixelPath = createPixelPath();
    await pixelPath.warm();
    const report = await checkInput(bytes, { budgetMs, pixelPath });
    checkResidentMemory(maxRssBytes);
    log(`${bytes.length} bytes: holds (${JSON.stringify(report)})`);
  } catch (error) {
    log(`${bytes.length} bytes: ${(error as Error).message}\nsaved ${saveFixture(formats[0]!, baseSeed, bytes, values.out)}`);
    process.exitCode = 1;
  }
  process.exit();
}

log(
  `optmark fuzz: seed ${baseSeed}, ${minutes} min, formats ${formats.join(',')}, XMP up to ${maxXmpBytes} bytes, ${budgetMs} ms per call, ` +
    `resident size after each input under ${values['max-rss-mb']} MB; every input also through verify's pixel decoder`,
);
const started = Date.now();
const share = (minutes * 60_000) / formats.length;
let total = 0;
let failures = 0;
for (const [i, format] of formats.entries()) {
  const from = Date.now();
  log(`${format}:`);
  const r = await slice(format, started + share * (i + 1));
  const seconds = (Date.now() - from) / 1000;
  total += r.runs;
  const recurring = Object.values(r.recurrences).flat();
  failures += r.failures.length + recurring.length;
  log(`  ${r.runs} inputs (+${r.shrinks} while shrinking) in ${seconds.toFixed(0)} s = ${(r.runs / seconds).toFixed(0)}/s, seeds ${r.seeds.join(',')}`);
  log(`  protect outcomes: ${JSON.stringify(r.outcomes)}`);
  log(
    `  pixel decoder (verify's fingerprint check): ${r.decodes} decodes, ${r.refused} of them refused with a typed error (corrupt pixel data, ` +
      `too many pixels); images under 64 pixels a side are answered without one; resident size after an input at most ${(r.maxRss / 1048576).toFixed(0)} MB`,
  );
  log(`  failures: ${r.failures.length ? r.failures.join(', ') : 'none'}`);
  for (const [kind, files] of Object.entries(r.recurrences)) {
    const saved = [...new Set(files)];
    log(`  seen again ${files.length} time(s), ${saved.length} new input(s) saved unshrunk (${saved.slice(0, 3).join(', ')}${saved.length > 3 ? ', ...' : ''}): ${kind}`);
  }
}
const seconds = (Date.now() - started) / 1000;
log(`total: ${total} inputs in ${(seconds / 60).toFixed(1)} min = ${(total / seconds).toFixed(0)}/s, ${failures} failure(s); seed ${baseSeed}`);
process.exitCode = failures > 0 ? 1 : 0;
