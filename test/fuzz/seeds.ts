/**
 * The files mutations start from: the corpus (minus PngSuite's
 * intentionally broken files, which every parser already refuses at the
 * first chunk) and the images generated in code, up to a size that keeps a
 * run fast. The order is fixed, so a fast-check seed replays the same cases.
 */
import { CORPUS, INTENTIONALLY_CORRUPT } from '../support/corpus.js';
import { generatedImages } from '../support/generated.js';
import { makeSeed, type Seed } from './mutators.js';

export async function loadSeeds(maxBytes = 128 * 1024): Promise<Seed[]> {
  const corpus = CORPUS.filter((f) => !INTENTIONALLY_CORRUPT.has(f.name) && f.bytes.length <= maxBytes).map((f) => makeSeed(f.name, f.bytes));
  const generated = (await generatedImages()).map((g) => makeSeed(`generated/${g.name}`, g.bytes));
  return [...corpus, ...generated];
}
