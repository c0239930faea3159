/**
 * Forward oracle: every file we mark reads as marked in third-party tools.
 * Over every valid corpus image and every generated image, protect() the
 * bytes and check the output with ExifTool 13.59 (value, raw packet, no new
 * warning or error, read with -validate), exiv2 0.27.6 (the exact URI) and the format's validator
 * (pngcheck, webpinfo): what passed before still passes, and what failed
 * fails the same way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROHIBITED_CODES, protect, type ProhibitedCode } from '../../src/index.js';
import { AMBIGUOUS_XMP, CORPUS, INTENTIONALLY_CORRUPT, PNGCHECK_ONLY_REJECTS } from '../support/corpus.js';
import { ExifTool } from '../support/exiftool.js';
import { generatedImages } from '../support/generated.js';
import { exiv2DataMining, tool, type ToolResult } from '../support/tools.js';
import { complaint, DEFAULT_URI, EXTENSION, formatOf, limiter, TempDir, validate, VOCAB, type Format } from './support.js';

interface Case {
  readonly name: string;
  readonly bytes: Uint8Array;
}

interface Observation {
  readonly format: Format;
  readonly input: string;
  readonly output: string;
  /** `XMP-plus:DataMining` from `exiftool -j -G1 -n`. */
  readonly dataMining: unknown;
  /** The raw packet, `exiftool -b -XMP`. */
  readonly packet: string;
  readonly warningsIn: readonly string[];
  readonly warningsOut: readonly string[];
  readonly exiv2: string | undefined;
  /** exiv2's complaints (stderr) about the input and the output. */
  readonly exiv2In: string;
  readonly exiv2Out: string;
  readonly validatorIn: ToolResult | undefined;
  readonly validatorOut: ToolResult | undefined;
}

const generated: Case[] = (await generatedImages()).map((g) => ({ name: `generated/${g.name}`, bytes: g.bytes }));
const corpus: Case[] = CORPUS.filter((f) => !INTENTIONALLY_CORRUPT.has(f.name) && !AMBIGUOUS_XMP.has(f.name)).map((f) => ({ name: f.name, bytes: f.bytes }));
const cases: Case[] = [...corpus, ...generated];

/**
 * Inputs exiv2 0.27.6 cannot read at all; marking must not change that, nor
 * can it help: the output fails with the same message.
 * - icc-after-SOF.jpg: exiv2 aborts on the ICC profile before reading XMP.
 * (ReaganLargeJpg.jpg, whose XMP repeats properties, is rejected by exiv2 as
 * it comes, "Duplicate property or field node", and read once marked: protect
 * writes each property once; see the test below.)
 */
const EXIV2_REJECTS_INPUT: ReadonlyMap<string, RegExp> = new Map([['pillow/icc-after-SOF.jpg', /Not a valid ICC Profile/]]);

async function exiv2Complaint(file: string): Promise<string> {
  const result = await tool('exiv2', ['-PXkv', '-K', 'Xmp.plus.DataMining', file]);
  return complaint({ ...result, stdout: '' }, file);
}

const lines = (text: string): string[] => text.split('\n').filter((line) => line.trim() !== '');

let exiftool: ExifTool;
let dir: TempDir;
const observations = new Map<string, Promise<Observation>>();

async function observe({ name, bytes }: Case): Promise<Observation> {
  const format = formatOf(bytes);
  const ext = EXTENSION[format];
  // protect() gets a copy, so that the input file below holds the original bytes whatever protect() does to its argument.
  const marked = protect(Buffer.from(bytes)).bytes;
  const [input, output] = await Promise.all([dir.write(`in-${name}.${ext}`, bytes), dir.write(`out-${name}.${ext}`, marked)]);
  // ExifTool queues these in its one process; the other tools run beside it.
  const [tags, raw, warningsIn, warningsOut, exiv2, exiv2In, exiv2Out, validatorIn, validatorOut] = await Promise.all([
    exiftool.readJson(output, ['-XMP-plus:DataMining']),
    exiftool.run(['-b', '-XMP', output]),
    exiftool.warnings(input),
    exiftool.warnings(output),
    exiv2DataMining(output),
    exiv2Complaint(input),
    exiv2Complaint(output),
    validate(format, input),
    validate(format, output),
  ]);
  return { format, input, output, dataMining: tags['XMP-plus:DataMining'], packet: raw.stdout, warningsIn, warningsOut, exiv2, exiv2In, exiv2Out, validatorIn, validatorOut };
}

beforeAll(async () => {
  exiftool = new ExifTool();
  dir = await TempDir.create('forward');
  // Start every file now, three at a time; each test awaits its own.
  const pool = limiter(3);
  for (const c of cases) {
    const pending = pool(() => observe(c));
    pending.catch(() => undefined); // reported by the file's own test
    observations.set(c.name, pending);
  }
});

afterAll(async () => {
  await Promise.allSettled(observations.values());
  await exiftool?.close();
  await dir?.remove();
});

describe('forward oracle: ExifTool, exiv2 and the validators read what protect() writes', () => {
  it('covers every valid corpus image and every generated image, in all three formats', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(190);
    expect(generated.length).toBeGreaterThanOrEqual(16);
    expect(new Set(cases.map((c) => formatOf(c.bytes)))).toEqual(new Set(['jpeg', 'png', 'webp']));
  });

  it.each(cases)('$name: ExifTool and exiv2 read the opt-out, with no new warning and a container as valid as before', async ({ name }) => {
    const seen = await observations.get(name)!;

    // ExifTool: the short code with -n, and the exact full URI in the raw packet.
    expect(seen.dataMining).toBe('DMI-PROHIBITED-AIMLTRAINING');
    expect(seen.packet).toContain(DEFAULT_URI);

    // No warning that the input did not already have.
    const before = new Set(seen.warningsIn);
    expect(seen.warningsOut.filter((w) => !before.has(w))).toEqual([]);

    // exiv2 reads the exact URI (it ignores JPEG Extended XMP, so this also says the value is in the standard packet),
    // unless it could not read the input at all: then it fails on the output the same way.
    const rejects = EXIV2_REJECTS_INPUT.get(name);
    if (rejects) {
      expect(seen.exiv2In).toMatch(rejects);
      expect(seen.exiv2Out).toBe(seen.exiv2In);
    } else {
      // Nothing new to complain about (exifr/progressive-broken1.jpg loses one: its packet's NUL bytes, which
      // exiv2's XML parser rejects, are read as the blanks they stand for and written back as spaces).
      const said = new Set(lines(seen.exiv2In));
      expect(lines(seen.exiv2Out).filter((line) => !said.has(line))).toEqual([]);
      expect(seen.exiv2).toBe(DEFAULT_URI);
    }

    // pngcheck / webpinfo: an input that passed gives an output that passes; one that failed fails the same way.
    if (seen.format === 'jpeg') return;
    const [vin, vout] = [seen.validatorIn!, seen.validatorOut!];
    if (vin.code === 0) {
      expect({ code: vout.code, says: complaint(vout, seen.output) }).toEqual({ code: 0, says: expect.any(String) });
    } else {
      expect(PNGCHECK_ONLY_REJECTS.has(name)).toBe(true);
      expect(vout.code).toBe(vin.code);
      expect(complaint(vout, seen.output)).toBe(complaint(vin, seen.input));
    }
  });

  it('exiftool/ExifTool.jpg: its AFCP trailer is read on our copy without "Adjusted AFCP offsets", and ExifTool says nothing new', async () => {
    const seen = await observations.get('exiftool/ExifTool.jpg')!;
    // The input has several warnings of its own (the test file of ExifTool's trailers); all are read.
    expect(seen.warningsIn).toEqual(expect.arrayContaining(['[minor] Non-standard IPTC at JPEG-Trailer-AFCP-IPTC', 'IPTCDigest is not current. XMP may be out of sync']));
    expect(seen.warningsOut.filter((w) => /AFCP offsets/.test(w))).toEqual([]);
    expect(seen.warningsOut.filter((w) => !seen.warningsIn.includes(w))).toEqual([]);
    // The AFCP trailer's IPTC (one of three copies in the file) is read from our copy as from the input.
    const captions = async (file: string) => (await exiftool.run(['-a', '-G1:3', '-s', '-Caption-Abstract', file])).stdout.split(file).join('FILE');
    expect(await captions(seen.output)).toBe(await captions(seen.input));
    expect(await captions(seen.output)).toContain('ExifTool AFCP test');
  });

  it('exiv2/ReaganLargeJpg.jpg: exiv2 rejects its XMP as it comes (repeated properties) and reads the opt-out once marked', async () => {
    const seen = await observations.get('exiv2/ReaganLargeJpg.jpg')!;
    expect(seen.exiv2In).toMatch(/Duplicate property or field node/);
    expect(seen.exiv2Out).toBe('');
    expect(seen.exiv2).toBe(DEFAULT_URI);
    expect(seen.warningsIn.filter((w) => /^Duplicate XMP property/.test(w))).toHaveLength(4);
    expect(seen.warningsOut.filter((w) => /^Duplicate XMP property/.test(w))).toEqual([]);
  });

  it('pngcheck rejects pngsuite/cm7n0g04.png for its tIME year alone, before and after marking', async () => {
    const seen = await observations.get('pngsuite/cm7n0g04.png')!;
    expect(seen.validatorIn!.code).not.toBe(0);
    expect(complaint(seen.validatorIn!, seen.input)).toMatch(/tIME|year/i);
    expect(complaint(seen.validatorOut!, seen.output)).toBe(complaint(seen.validatorIn!, seen.input));
  });
});

describe('forward oracle: every DMI-PROHIBITED value, per format', () => {
  const perFormat = ['generated/baseline.jpg', 'exiftool/XMP.jpg', 'generated/rgb8.png', 'exiftool/PNG.png', 'generated/lossy.webp', 'generated/animated.webp'];
  const others = PROHIBITED_CODES.filter((c) => c !== 'DMI-PROHIBITED-AIMLTRAINING') as ProhibitedCode[];
  const table = perFormat.flatMap((name) => others.map((value) => ({ name, value })));

  it('covers the six values besides the default', () => {
    expect(others).toHaveLength(6);
  });

  it.each(table)('$name with $value: ExifTool -n reads $value and the raw packet holds its full URI', async ({ name, value }) => {
    const source = cases.find((c) => c.name === name)!;
    // DMI-PROHIBITED-SEECONSTRAINT needs its text (other-constraints.test.ts has more of it).
    const marked = protect(Buffer.from(source.bytes), { value, ...(value === 'DMI-PROHIBITED-SEECONSTRAINT' ? { otherConstraints: 'See the licence' } : {}) }).bytes;
    const file = await dir.write(`value-${value}-${name}.${EXTENSION[formatOf(marked)]}`, marked);
    const tags = await exiftool.readJson(file, ['-XMP-plus:DataMining']);
    expect(tags['XMP-plus:DataMining']).toBe(value);
    const raw = await exiftool.run(['-b', '-XMP', file]);
    expect(raw.stdout).toContain(`${VOCAB}${value}`);
  });
});
