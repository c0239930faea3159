/**
 * Replays every input the long fuzz saved (test/fuzz/regressions/) through
 * the fuzz property, and the hand-made tricky inputs of test/fuzz/known/,
 * whose names also say what protect must answer: `<what>.<ok|code>.<ext>`.
 * Each input runs unsigned and signed (both with the pixel comparison), and
 * through verify's decoder path as the long fuzz runs it (pixel-path.ts), so
 * that an input saved for a failure there fails here too; the process's
 * resident size is checked after each, as in the long fuzz.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { KNOWN_DIR, loadFixtures, REGRESSIONS_DIR } from './fixtures.js';
import { createPixelPath } from './pixel-path.js';
import { checkInput, checkResidentMemory, MAX_RSS_AFTER_INPUT } from './property.js';

const found = loadFixtures(REGRESSIONS_DIR);
const known = loadFixtures(KNOWN_DIR);

const pixelPath = createPixelPath();
beforeAll(() => pixelPath.warm());

async function replay(bytes: Uint8Array) {
  const report = await checkInput(bytes, { pixelPath });
  const signed = await checkInput(bytes, { sign: true });
  expect(signed.protect).toBe(report.protect);
  checkResidentMemory(MAX_RSS_AFTER_INPUT);
  return report;
}

describe('hand-made tricky inputs', () => {
  it('are all there', () => {
    expect(known.length).toBeGreaterThanOrEqual(16);
  });

  it.each(known.map((f) => [f.name, f.bytes] as const))('%s', async (name, bytes) => {
    const report = await replay(bytes);
    expect(report.protect).toBe(name.split('.').at(-2));
    if (report.protect === 'ok') expect(report.idempotent).toBe(true);
  });
});

describe('inputs the long fuzz found', () => {
  it.each(found.map((f) => [f.name, f.bytes] as const))('%s', async (_name, bytes) => {
    await replay(bytes);
  });
});
