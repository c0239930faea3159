/**
 * `optmark protect --fingerprint` and `optmark fingerprint-keys`: the mark is
 * added under the opt-out (which third-party readers still read), the colour
 * profile and EXIF survive the re-encode byte for byte (JPEG, lossy and
 * lossless WebP), PNG stays lossless and within the
 * PSNR bound, images that cannot carry the mark are refused in words, and a
 * rotation keeps older marks detectable until their version is removed.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { webp } from '../../src/core/formats/webp.js';
import { psnr } from '../support/psnr.js';
import { optmark, optmarkJson } from '../process/support.js';
import { cliWorkspace, fixFingerprintKey, texturedPhoto } from './support.js';

const { dir, env, exiftool } = cliWorkspace('optmark-fp-cli-');
// Version 1 fixed, so that what these tests see of the mark is the same on every run (the rotation below adds a random version 2).
fixFingerprintKey(env.OPTMARK_DATA_DIR!, 'optmark test: fingerprint cli');

interface Verified {
  optedOut: boolean;
  fingerprint: { present: boolean; confidence: number; blocks: number };
  provenance: { valid: boolean };
}

const write = (name: string, bytes: Uint8Array) => {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
};

/**
 * The output carries the input's ICC profile and EXIF byte for byte (as
 * sharp reads them: the profile reassembled from its APP2 segments or the
 * ICCP chunk, the EXIF payload), and the input had both, so the comparison
 * is not between two absences.
 */
async function expectSameProfileAndExif(input: Uint8Array, output: Uint8Array, label: string): Promise<void> {
  const [before, after] = await Promise.all([sharp(input).metadata(), sharp(output).metadata()]);
  expect(before.icc, `${label}: the input's profile`).toBeInstanceOf(Buffer);
  expect(before.exif, `${label}: the input's EXIF`).toBeInstanceOf(Buffer);
  expect(after.icc?.equals(before.icc!), `${label}: ICC profile byte for byte`).toBe(true);
  expect(after.exif?.equals(before.exif!), `${label}: EXIF byte for byte`).toBe(true);
}

/** The JSON objects a --json run printed, one a line. */
const jsonLines = <T>(stdout: string): T[] =>
  stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as T);

async function protectFingerprinted(path: string): Promise<string> {
  const out = await optmarkJson<{ output: string }>(['protect', '--fingerprint', '--out', join(dir, 'out'), path], env);
  return out.output;
}

describe('protect --fingerprint', () => {
  it('JPEG: fingerprint found, opt-out read by ExifTool, ICC profile and EXIF kept byte for byte, provenance valid', async () => {
    const photo = await sharp(await texturedPhoto(640, 480, 'png')).withIccProfile('p3').withExif({ IFD0: { Artist: 'Ada' } }).jpeg({ quality: 92 }).toBuffer();
    const output = await protectFingerprinted(write('photo.jpg', photo));
    const verified = await optmarkJson<Verified>(['verify', output], env);
    expect(verified).toMatchObject({ optedOut: true, fingerprint: { present: true }, provenance: { valid: true } });
    const tags = await exiftool.readJson(output, ['-XMP-plus:DataMining', '-IFD0:Artist', '-ICC_Profile:ProfileDescription']);
    expect(tags).toMatchObject({ 'XMP-plus:DataMining': 'DMI-PROHIBITED-AIMLTRAINING', 'IFD0:Artist': 'Ada' });
    expect(tags['ICC_Profile:ProfileDescription']).toBeTruthy();
    // docs/fingerprint.md promises the original's ICC profile and EXIF "carried over byte for byte".
    await expectSameProfileAndExif(photo, readFileSync(output), 'jpeg');
    const original = await optmarkJson<Verified>(['verify', join(dir, 'photo.jpg')], env);
    expect(original.fingerprint.present).toBe(false);
  });

  it("--json and the line in words say how the file was re-encoded (the original's quality, progressive mode, subsampling) and its sizes", async () => {
    const photo = await sharp(await texturedPhoto(640, 480, 'png', 8)).jpeg({ quality: 80, progressive: true }).toBuffer();
    const input = write('quality80.jpg', photo);
    const json = await optmarkJson<{ output: string; fingerprint: string; sizeBefore: number; sizeAfter: number; fingerprintEncoding: unknown }>(['protect', '--fingerprint', '--out', join(dir, 'q80'), input], env);
    expect(json.fingerprint).toBe('added');
    expect(json.fingerprintEncoding).toEqual({ format: 'jpeg', lossless: false, quality: 80, estimated: true, subsampling: '4:2:0', progressive: true });
    expect(json.sizeBefore).toBe(photo.length);
    expect(json.sizeAfter).toBe(readFileSync(json.output).length);
    const words = await optmark(['protect', '--fingerprint', '--overwrite', '--out', join(dir, 'q80'), input], env);
    expect(words.stdout).toMatch(/fingerprinted, re-encoded as JPEG at quality 80, the original's \(progressive, 4:2:0\), size [+−]\d+\.\d %\)/);
  });

  it('WebP, lossy and lossless: stays what it was, fingerprint found, ICC profile and EXIF kept byte for byte, opt-out read by ExifTool', async () => {
    const source = sharp(await texturedPhoto(512, 384, 'png')).withIccProfile('p3').withExif({ IFD0: { Artist: 'Ada', Copyright: 'carried over' } });
    const inputs = {
      'lossy.webp': await source.clone().webp({ quality: 90 }).toBuffer(),
      'lossless.webp': await source.clone().webp({ lossless: true }).toBuffer(),
    };
    const paths = Object.entries(inputs).map(([name, bytes]) => write(name, bytes));
    // Both files in one run, as a user would: one JSON line per file.
    const run = await optmark(['protect', '--fingerprint', '--json', '--out', join(dir, 'webp-out'), ...paths], env, 120_000);
    expect(run.code, run.stderr).toBe(0);
    const outputs = new Map(jsonLines<{ file: string; output: string }>(run.stdout).map((r) => [r.file, r.output]));
    const checked = await optmark(['verify', '--json', ...outputs.values()], env);
    const verifiedOf = new Map(jsonLines<Verified & { file: string }>(checked.stdout).map((v) => [v.file, v]));
    for (const [name, input] of Object.entries(inputs)) {
      const output = outputs.get(join(dir, name))!;
      const bytes = readFileSync(output);
      // Lossy stays VP8, lossless stays VP8L: the re-encode changed nothing about the kind of file.
      const bitstream = name === 'lossy.webp' ? 'VP8 ' : 'VP8L';
      expect(webp.blocks(input).map((b) => b.type), name).toContain(bitstream);
      expect(webp.blocks(bytes).map((b) => b.type), name).toContain(bitstream);
      await expectSameProfileAndExif(input, bytes, name);
      expect(verifiedOf.get(output), name).toMatchObject({ optedOut: true, fingerprint: { present: true }, provenance: { valid: true } });
      const tags = await exiftool.readJson(output, ['-XMP-plus:DataMining', '-IFD0:Artist', '-IFD0:Copyright']);
      expect(tags, name).toMatchObject({ 'XMP-plus:DataMining': 'DMI-PROHIBITED-AIMLTRAINING', 'IFD0:Artist': 'Ada', 'IFD0:Copyright': 'carried over' });
    }
  }, 120_000);

  it('PNG with alpha: stays PNG, alpha untouched, colour within the PSNR bound of 42 dB', async () => {
    const rgb = await sharp(await texturedPhoto(512, 384, 'png')).raw().toBuffer();
    const alpha = Buffer.from(Array.from({ length: 512 * 384 }, (_, i) => (i * 7) & 255));
    const rgba = Buffer.alloc(512 * 384 * 4);
    for (let i = 0; i < 512 * 384; i++) rgba.set([rgb[i * 3]!, rgb[i * 3 + 1]!, rgb[i * 3 + 2]!, alpha[i]!], i * 4);
    const source = write('alpha.png', await sharp(rgba, { raw: { width: 512, height: 384, channels: 4 } }).png().toBuffer());
    const output = await protectFingerprinted(source);
    expect(readFileSync(output).subarray(1, 4).toString()).toBe('PNG');
    const [before, after] = await Promise.all([source, output].map((f) => sharp(readFileSync(f)).raw().toBuffer()));
    const channel = (b: Buffer, c: number) => Buffer.from(b.filter((_, i) => i % 4 === c));
    expect(channel(after!, 3).equals(channel(before!, 3))).toBe(true);
    const colour = (b: Buffer) => Buffer.from(b.filter((_, i) => i % 4 !== 3));
    expect(psnr(colour(before!), colour(after!))).toBeGreaterThanOrEqual(42);
    expect((await optmarkJson<Verified>(['verify', output], env)).fingerprint.present).toBe(true);
  });

  it.each([
    ['too small', () => texturedPhoto(200, 150), /at least 256 pixels/],
    ['CMYK', async () => sharp(await texturedPhoto(400, 300)).toColourspace('cmyk').jpeg().toBuffer(), /CMYK/],
    ['16-bit', async () => sharp(await texturedPhoto(400, 300, 'png')).toColourspace('rgb16').png().toBuffer(), /16 bits/],
  ])('refuses an image that is %s, in words, and writes nothing', async (name, make, message) => {
    const bytes = await make();
    const path = write(`refused-${name.replace(/\W/g, '')}.${bytes[0] === 0xff ? 'jpg' : 'png'}`, bytes);
    const run = await optmark(['protect', '--fingerprint', '--json', '--out', join(dir, 'refused'), path], env);
    expect(run.code).toBe(1);
    const failure = JSON.parse(run.stdout) as { code: string; error: string };
    expect(failure.code).toBe('fingerprint_not_possible');
    expect(failure.error).toMatch(message);
  });
});

it('fingerprint-keys: a rotation keeps older marks detectable until their version is removed', async () => {
  const first = await protectFingerprinted(write('v1.png', await texturedPhoto(320, 256, 'png', 3)));
  const rotated = await optmarkJson<{ version: number }>(['fingerprint-keys', 'rotate'], env);
  expect(rotated.version).toBe(2);
  const second = await protectFingerprinted(write('v2.png', await texturedPhoto(320, 256, 'png', 5)));
  for (const file of [first, second]) expect((await optmarkJson<Verified>(['verify', file], env)).fingerprint.present).toBe(true);
  // The version that marks cannot be removed: a refusal with a code (exit 1), not a usage error.
  const refused = await optmark(['fingerprint-keys', 'remove', '2', '--json'], env);
  expect(refused.code).toBe(1);
  expect(JSON.parse(refused.stdout)).toMatchObject({ code: 'fingerprint_key_in_use' });
  expect(await optmarkJson(['fingerprint-keys', 'remove', '1'], env)).toEqual({ removed: 1 });
  expect((await optmarkJson<Verified>(['verify', first], env)).fingerprint.present).toBe(false);
  expect((await optmarkJson<Verified>(['verify', second], env)).fingerprint.present).toBe(true);
}, 180_000);
