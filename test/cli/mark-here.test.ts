/**
 * A batch's files marked on the main thread (src/cli/batch/mark-here.ts):
 * each copy is protect's file byte for byte, though written from buffers
 * kept from file to file while other files are read and hashed; an input
 * that cannot be read is that file's unreadable_file failure; a write that
 * takes fewer bytes than given goes on with the rest.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createProvenance, protect } from '../../src/index.js';
import { createHasher } from '../../src/cli/batch/hasher.js';
import { createHereMarker } from '../../src/cli/batch/mark-here.js';
import type { MarkTask } from '../../src/cli/batch/mark-one.js';
import { CliError } from '../../src/cli/files.js';
import { unwritten } from '../../src/cli/batch/write.js';
import { CORPUS } from '../support/corpus.js';

const dir = mkdtempSync(join(tmpdir(), 'optmark-mark-here-'));
/** The hashing thread as the command runs it (the built script: a thread runs JavaScript). */
const hasher = createHasher(new URL('../../dist/cli/batch/hash-worker.js', import.meta.url));
afterAll(async () => {
  await hasher.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A signer whose clock stands still, so that protect here and in the batch sign the same tag. */
const signer = (() => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const now = new Date('2026-01-02T03:04:05Z');
  return createProvenance({ keys: { active: { kid: 'here', privateKey }, publicKey: () => publicKey }, issuer: () => 'http://127.0.0.1', clock: { now: () => now } }).signer;
})();

const task = (file: string, output: string): MarkTask => ({ file, output, inPlace: false, overwrite: false, fingerprint: false, skipMarked: false, value: undefined });

describe('marking a batch on the main thread', () => {
  it('writes protect’s file for each of many files of every format, three at a time, larger and smaller ones mixed', async () => {
    const files = CORPUS.filter((f) => /^(exiftool|libwebp-test-data|pngsuite)\//.test(f.name))
      .filter((f) => {
        try {
          protect(f.bytes);
          return true;
        } catch {
          return false;
        }
      })
      .slice(0, 40);
    expect(files.length).toBe(40);
    const here = createHereMarker(3, { signer, maxImagePixels: undefined }, hasher);
    const inputs = files.map((f, i) => {
      const path = join(dir, `in-${i}-${f.name.split('/').pop()}`);
      writeFileSync(path, f.bytes);
      return path;
    });
    let next = 0;
    const outcomes: Array<Awaited<ReturnType<typeof here.run>>> = [];
    await Promise.all(
      [0, 1, 2].map(async () => {
        while (next < inputs.length) {
          const i = next++;
          outcomes[i] = await here.run(task(inputs[i]!, join(dir, `planned-${i}`)), true);
        }
      }),
    );
    outcomes.forEach((outcome, i) => {
      expect(outcome.kind).toBe('marked');
      if (outcome.kind !== 'marked') return;
      const expected = protect(files[i]!.bytes, { signer, filename: inputs[i]!.split('/').pop() });
      const written = readFileSync(outcome.output);
      expect(written.equals(expected.bytes), files[i]!.name).toBe(true);
      expect(outcome.json.sha256).toBe(expected.sha256);
    });
  });

  it('an input that cannot be read is its file’s unreadable_file failure, and the slot serves the next file', async () => {
    const here = createHereMarker(1, { signer, maxImagePixels: undefined }, hasher);
    const failure = await here.run(task(join(dir, 'missing.jpg'), join(dir, 'missing-optout.jpg')), false).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(CliError);
    expect(failure).toMatchObject({ code: 'unreadable_file', message: 'cannot read the file: no such file' });
    expect(here.hasRoom()).toBe(true);
    const jpeg = CORPUS.find((f) => f.name === 'exiftool/XMP.jpg')!;
    writeFileSync(join(dir, 'after.jpg'), jpeg.bytes);
    expect((await here.run(task(join(dir, 'after.jpg'), join(dir, 'after-optout.jpg')), false)).kind).toBe('marked');
  });
});

describe('a write that takes fewer bytes than given', () => {
  it('goes on with the rest, from where it stopped', () => {
    const [a, b, c] = [new Uint8Array([1, 2, 3]), new Uint8Array([4, 5, 6, 7]), new Uint8Array([8, 9])];
    expect(unwritten([a, b, c], 0)).toEqual([a, b, c]);
    expect(unwritten([a, b, c], 3)).toEqual([b, c]);
    expect(unwritten([a, b, c], 5)).toEqual([new Uint8Array([6, 7]), c]);
    expect(unwritten([a, b, c], 9)).toEqual([]);
  });
});
