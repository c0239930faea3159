/**
 * The library part of the fuzz step (fuzz-format.ts): JPEG, PNG and WebP one
 * after the other in one test process. One file rather than one per format:
 * each test process costs about 1.5 s to start and to load the code, and the
 * first few hundred inputs run at half speed while the JIT warms up; with two
 * workers, this file on one core balances the server part and the
 * regression fixtures on the other.
 */
import { afterAll, describe } from 'vitest';
import type { Format } from './containers.js';
import { fuzzFormat, RUNS } from './fuzz-format.js';

const FORMATS: readonly Format[] = ['jpeg', 'png', 'webp'];
const loaded = performance.now();

for (const format of FORMATS) describe(format, () => fuzzFormat(format));

afterAll(() => {
  const total = FORMATS.reduce((n, f) => n + RUNS[f], 0);
  // performance.now() counts from the process's start: the first number is what loading took.
  console.info(`fuzz library: ${total} inputs (${FORMATS.map((f) => `${f} ${RUNS[f]}`).join(', ')}) in ${((performance.now() - loaded) / 1000).toFixed(1)} s, after ${(loaded / 1000).toFixed(1)} s to start the process and load the code`);
});
