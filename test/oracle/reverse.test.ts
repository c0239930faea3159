/**
 * Reverse oracle: what ExifTool 13.59 and exiv2 0.27.6 write, verify() reads.
 * ExifTool writes plus:DataMining in element form, exiv2 (Adobe's XMP
 * Toolkit) as an attribute of rdf:Description; both count as the opt-out when
 * the value is one of the DMI-PROHIBITED vocabulary URIs, and nothing else
 * does. Then protect() over a tool-marked file leaves exactly one value, ours.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inspect, protect, verify, type ProhibitedCode } from '../../src/index.js';
import { corpusFile } from '../support/corpus.js';
import { ExifTool } from '../support/exiftool.js';
import { generatedImages } from '../support/generated.js';
import { exiv2DataMining, tool } from '../support/tools.js';
import { dataMiningOccurrences, EXTENSION, formatOf, TempDir, validate, VOCAB } from './support.js';

/** A JPEG, two PNGs (one with its XMP iTXt after IDAT), and simple lossy, lossless-with-alpha and animated WebP. */
const generated = await generatedImages();
const FILES: ReadonlyArray<{ name: string; bytes: Uint8Array }> = [
  ...['exiftool/XMP.jpg', 'exiftool/PNG.png', 'pngsuite/basn2c08.png', 'pillow/hopper.webp', 'libwebp-test-data/lossless1.webp', 'pillow/iss634-animated.webp'].map(
    (name) => ({ name, bytes: corpusFile(name).bytes }),
  ),
  { name: 'generated/baseline.jpg', bytes: generated.find((g) => g.name === 'baseline.jpg')!.bytes },
];

type Writer = 'exiftool' | 'exiv2';

interface Marking {
  readonly label: string;
  readonly writer: Writer;
  /** The stored value, exactly as the tool writes it. */
  readonly value: string;
  /** ExifTool's `-n` reading of the stored value. */
  readonly code: string;
  readonly optedOut: boolean;
  readonly form: 'element' | 'attribute';
  /** Values that look like vocabulary terms but are not their exact URI are reported. */
  readonly warns: boolean;
}

const MARKINGS: readonly Marking[] = [
  { label: 'ExifTool, element form, DMI-PROHIBITED-GENAIMLTRAINING', writer: 'exiftool', value: `${VOCAB}DMI-PROHIBITED-GENAIMLTRAINING`, code: 'DMI-PROHIBITED-GENAIMLTRAINING', optedOut: true, form: 'element', warns: false },
  { label: 'exiv2, attribute form, DMI-PROHIBITED', writer: 'exiv2', value: `${VOCAB}DMI-PROHIBITED`, code: 'DMI-PROHIBITED', optedOut: true, form: 'attribute', warns: false },
  { label: 'ExifTool, DMI-ALLOWED', writer: 'exiftool', value: `${VOCAB}DMI-ALLOWED`, code: 'DMI-ALLOWED', optedOut: false, form: 'element', warns: false },
  { label: 'ExifTool, DMI-UNSPECIFIED', writer: 'exiftool', value: `${VOCAB}DMI-UNSPECIFIED`, code: 'DMI-UNSPECIFIED', optedOut: false, form: 'element', warns: false },
  { label: 'exiv2, the bare code DMI-PROHIBITED', writer: 'exiv2', value: 'DMI-PROHIBITED', code: 'DMI-PROHIBITED', optedOut: false, form: 'attribute', warns: true },
  { label: 'exiv2, an https:// vocabulary URI', writer: 'exiv2', value: `${VOCAB.replace('http:', 'https:')}DMI-PROHIBITED`, code: `${VOCAB.replace('http:', 'https:')}DMI-PROHIBITED`, optedOut: false, form: 'attribute', warns: true },
];

/** What protect() is asked to write over each marking: never the value already there. */
const REQUESTED: ProhibitedCode = 'DMI-PROHIBITED-SEECONSTRAINT';
/** The text that value needs (plus:OtherConstraints). */
const CONSTRAINTS = 'Licensed for search indexing only; write to rights@example.com';

let exiftool: ExifTool;
let dir: TempDir;

beforeAll(async () => {
  exiftool = new ExifTool();
  dir = await TempDir.create('reverse');
});

afterAll(async () => {
  await exiftool?.close();
  await dir?.remove();
});

/**
 * Copy the file to the temp dir and have the tool write the value into it; return the path.
 * ExifTool is given the code: its ValueConvInv prefixes every value with the
 * vocabulary's http:// namespace (so it cannot store a bare code or an https
 * URI; exiv2 writes those).
 */
async function markWith({ writer, value, code }: Marking, name: string, bytes: Uint8Array, tag: string): Promise<string> {
  const file = await dir.write(`${tag}-${name}.${EXTENSION[formatOf(bytes)]}`, bytes);
  if (writer === 'exiftool') {
    const { stderr } = await exiftool.run([`-XMP-plus:DataMining#=${code}`, '-overwrite_original', file]);
    expect(stderr).not.toMatch(/Error/);
  } else {
    // One argv element for -M, no shell in between.
    const result = await tool('exiv2', [`-Mset Xmp.plus.DataMining ${value}`, file]);
    expect(result).toMatchObject({ code: 0, stderr: '' });
  }
  return file;
}

const table = FILES.flatMap((file) => MARKINGS.map((marking) => ({ ...file, marking, label: marking.label })));

describe('reverse oracle: verify() reads what ExifTool and exiv2 write', () => {
  it.each(table)('$name, $label', async ({ name, bytes, marking }) => {
    const file = await markWith(marking, name, bytes, `rev${MARKINGS.indexOf(marking)}`);

    // The tools themselves read back what they wrote.
    expect((await exiftool.readJson(file, ['-XMP-plus:DataMining']))['XMP-plus:DataMining']).toBe(marking.code);
    expect(await exiv2DataMining(file)).toBe(marking.value);

    const marked = await readFile(file);
    const { result, details } = inspect(marked);
    expect(verify(marked)).toEqual(result);
    expect(result.optedOut).toBe(marking.optedOut);
    if (marking.optedOut) expect(result.signals).toContain('iptc.dataMining');
    else expect(result.signals).toEqual([]);
    expect(details.dataMining).toHaveLength(1);
    expect(details.dataMining[0]).toMatchObject({ value: marking.value, form: marking.form, extended: false });
    const complaints = details.warnings.filter((w) => /not a vocabulary URI/.test(w));
    if (marking.warns) {
      expect(complaints).toHaveLength(1);
      expect(complaints[0]).toContain(JSON.stringify(marking.value));
    } else {
      expect(complaints).toEqual([]);
    }
  });
});

describe('reverse oracle: protect() over a tool-marked file leaves one value, ours, that the tools read', () => {
  it.each(table)('$name, $label, then protect()', async ({ name, bytes, marking }) => {
    const file = await markWith(marking, name, bytes, `pro${MARKINGS.indexOf(marking)}`);
    const marked = await readFile(file);

    const out = protect(marked, { value: REQUESTED, otherConstraints: CONSTRAINTS });
    expect(out.changed).toBe(true);
    const read = inspect(out.bytes);
    expect(read.result.optedOut).toBe(true);
    expect(read.details.dataMining).toEqual([{ value: `${VOCAB}${REQUESTED}`, code: REQUESTED, label: expect.any(String), prohibited: true, form: 'element', extended: false }]);
    expect(read.details.otherConstraints).toBe(CONSTRAINTS);
    expect(read.details.warnings).toEqual([]);

    const written = await dir.write(`pro${MARKINGS.indexOf(marking)}-out-${name}.${EXTENSION[formatOf(out.bytes)]}`, out.bytes);
    expect(await exiftool.readJson(written, ['-XMP-plus:DataMining', '-XMP-plus:OtherConstraints'])).toMatchObject({ 'XMP-plus:DataMining': REQUESTED, 'XMP-plus:OtherConstraints': CONSTRAINTS });
    const packet = (await exiftool.run(['-b', '-XMP', written])).stdout;
    expect(dataMiningOccurrences(packet)).toBe(1);
    expect(packet).toContain(`${VOCAB}${REQUESTED}`);
    expect(await exiv2DataMining(written)).toBe(`${VOCAB}${REQUESTED}`);

    // The container stays as valid as the tool left it.
    const [before, after] = await Promise.all([validate(formatOf(marked), file), validate(formatOf(marked), written)]);
    if (before?.code === 0) expect(after?.code).toBe(0);
  });
});

describe('reverse oracle: the PNG case the table covers', () => {
  it('exiftool/PNG.png carries its XMP iTXt after IDAT', () => {
    const png = Buffer.from(corpusFile('exiftool/PNG.png').bytes);
    const at = (type: string) => png.indexOf(Buffer.from(type, 'latin1'));
    expect(at('IDAT')).toBeGreaterThan(0);
    expect(at('iTXtXML:com.adobe.xmp')).toBeGreaterThan(at('IDAT'));
  });
});
