/**
 * DMI-PROHIBITED-SEECONSTRAINT with its text, read back by independent
 * readers: files marked as the dashboard, the API and the CLI mark them
 * (protect() with a provenance signer, the value and a constraints text that
 * needs XML escaping and is not ASCII) are read by ExifTool 13.59, exiv2
 * 0.27 and exempi 2.6 (Adobe's XMP Toolkit), in JPEG, PNG and WebP, from
 * files with no XMP and with XMP of their own. Each reader reads
 * plus:DataMining as the SEECONSTRAINT URI and plus:OtherConstraints
 * (x-default) as the text; ExifTool finds no new warning; every byte
 * outside the XMP is the input's. A file whose plus:OtherConstraints another
 * tool wrote, in two languages, gets the new x-default and keeps the other
 * language.
 */
import { copyFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProvenance, inspect, protect, SigningKeys } from '../../src/index.js';
import { sniff } from '../../src/core/formats/sniff.js';
import { corpusFile } from '../support/corpus.js';
import { ExifTool } from '../support/exiftool.js';
import { generatedImages } from '../support/generated.js';
import { tool } from '../support/tools.js';
import { EXTENSION, formatOf, TempDir, VOCAB, type Format } from './support.js';

const CODE = 'DMI-PROHIBITED-SEECONSTRAINT';
const URI = `${VOCAB}${CODE}`;
const TEXT = `Licensing only: Tom & Jerry's <"studio"> terms, § 4 — Zürich, 東京 😀`;

const generated = await generatedImages();
const generatedFile = (name: string) => ({ name: `generated/${name}`, bytes: generated.find((g) => g.name === name)!.bytes as Uint8Array });
const corpus = (name: string) => ({ name, bytes: corpusFile(name).bytes as Uint8Array });
/**
 * Per format, a file without XMP and one with XMP of its own (the WebP one
 * generated: every corpus WebP with XMP has an EXIF chunk exempi's WebP
 * handler cannot read, readers.test.ts says why).
 */
const INPUTS = [
  generatedFile('baseline.jpg'),
  corpus('exiftool/XMP.jpg'),
  generatedFile('rgb8.png'),
  corpus('exiftool/PNG.png'),
  generatedFile('lossy.webp'),
  generatedFile('with-xmp.webp'),
];

interface Marked {
  readonly name: string;
  readonly format: Format;
  readonly input: string;
  readonly path: string;
  readonly inputBytes: Uint8Array;
  readonly bytes: Uint8Array;
}

/** Every block of a file that is not XMP (nor a header announcing it), as bytes. */
function otherBlocks(bytes: Uint8Array): Buffer[] {
  return sniff(bytes)
    .blocks(bytes)
    .filter((b) => b.kind === 'other')
    .map((b) => Buffer.from(bytes.subarray(b.offset, b.offset + b.length)));
}

/** What each reader makes of plus:DataMining and plus:OtherConstraints (x-default). */
async function readers(path: string): Promise<Record<'ExifTool' | 'exiv2' | 'exempi', { dataMining: string | undefined; otherConstraints: string | undefined }>> {
  const tags = await exiftool.readJson(path, ['-XMP-plus:DataMining', '-XMP-plus:OtherConstraints']);
  const exiv2 = await tool('exiv2', ['-q', '-PXkv', '-K', 'Xmp.plus.DataMining', '-K', 'Xmp.plus.OtherConstraints', path]);
  const exempiValue = async (property: string) => (await tool('exempi', ['-g', property, path])).stdout.replace(/\n$/, '') || undefined;
  return {
    ExifTool: { dataMining: tags['XMP-plus:DataMining'] as string | undefined, otherConstraints: tags['XMP-plus:OtherConstraints'] as string | undefined },
    exiv2: {
      dataMining: /^Xmp\.plus\.DataMining\s+(.*)$/m.exec(exiv2.stdout)?.[1]?.trim(),
      // Every item, as exiv2 prints a Lang Alt: lang="x-default" TEXT, lang="de" ...
      otherConstraints: /^Xmp\.plus\.OtherConstraints\s+(.*)$/m.exec(exiv2.stdout)?.[1],
    },
    exempi: { dataMining: await exempiValue('plus:DataMining'), otherConstraints: await exempiValue("plus:OtherConstraints[?xml:lang='x-default']") },
  };
}

let dir: TempDir;
let exiftool: ExifTool;
let provenance: ReturnType<typeof createProvenance>;
const marked: Marked[] = [];

beforeAll(async () => {
  dir = await TempDir.create('other-constraints');
  exiftool = new ExifTool();
  provenance = createProvenance({ keys: SigningKeys.open(join(dir.path, 'signing-keys.json')), issuer: () => 'https://optmark.test', clock: { now: () => new Date() } });
  for (const { name, bytes } of INPUTS) {
    const result = protect(Buffer.from(bytes), { value: CODE, otherConstraints: TEXT, signer: provenance.signer });
    const format = formatOf(result.bytes);
    const input = await dir.write(`in-${name}.${EXTENSION[format]}`, bytes);
    const path = await dir.write(`out-${name}.${EXTENSION[format]}`, result.bytes);
    marked.push({ name, format, input, path, inputBytes: bytes, bytes: result.bytes });
  }
}, 120_000);

afterAll(async () => {
  await exiftool?.close();
  await dir?.remove();
});

describe('DMI-PROHIBITED-SEECONSTRAINT and plus:OtherConstraints, read by ExifTool, exiv2 and exempi', () => {
  it('covers JPEG, PNG and WebP, each with and without XMP of its own', () => {
    expect(marked.map((m) => m.format)).toEqual(['jpeg', 'jpeg', 'png', 'png', 'webp', 'webp']);
  });

  it.each(INPUTS.map((i) => i.name))('%s: every reader reads the value and the text', async (name) => {
    const file = marked.find((m) => m.name === name)!;
    const read = await readers(file.path);
    // ExifTool -n gives the code, the others the stored URI.
    expect(read.ExifTool).toEqual({ dataMining: CODE, otherConstraints: TEXT });
    expect(read.exiv2).toEqual({ dataMining: URI, otherConstraints: `lang="x-default" ${TEXT}` });
    expect(read.exempi).toEqual({ dataMining: URI, otherConstraints: TEXT });
    // And so does verify, with the provenance tag valid.
    const { result, details } = inspect(file.bytes, { provenance });
    expect(details.otherConstraints).toBe(TEXT);
    expect(details.dataMining.map((d) => d.code)).toEqual([CODE]);
    expect(result.optedOut).toBe(true);
    expect(result.provenance.valid).toBe(true);
  });

  it.each(INPUTS.map((i) => i.name))('%s: no new ExifTool warning, and every byte outside the XMP is the input\'s', async (name) => {
    const file = marked.find((m) => m.name === name)!;
    expect(await exiftool.warnings(file.path)).toEqual(await exiftool.warnings(file.input));
    expect(otherBlocks(file.bytes)).toEqual(otherBlocks(file.inputBytes));
  });

  it('writes the Lang Alt once, with one x-default item, as raw XMP shows it', async () => {
    for (const file of marked) {
      const raw = (await exiftool.run(['-b', '-XMP', file.path])).stdout;
      expect(raw.match(/<plus:OtherConstraints>/g), file.name).toHaveLength(1);
      expect(raw, file.name).toContain(`<plus:OtherConstraints><rdf:Alt><rdf:li xml:lang="x-default">Licensing only: Tom &amp; Jerry's &lt;"studio"&gt; terms`);
    }
  });
});

describe('over a plus:OtherConstraints ExifTool wrote in two languages', () => {
  it.each(['generated/baseline.jpg', 'generated/rgb8.png', 'generated/lossy.webp'])('%s: the x-default is replaced, the German item kept, every reader agrees', async (name) => {
    const source = INPUTS.find((i) => i.name === name)!;
    const format = formatOf(source.bytes);
    const before = join(dir.path, `exiftool-${name.replace(/\W/g, '_')}.${EXTENSION[format]}`);
    await copyFile(await dir.write(`src-${name}.${EXTENSION[format]}`, source.bytes), before);
    const { stderr } = await exiftool.run(['-XMP-plus:DataMining#=DMI-PROHIBITED', '-XMP-plus:OtherConstraints=Old terms', '-XMP-plus:OtherConstraints-de=Alte Bedingungen', '-overwrite_original', before]);
    expect(stderr).not.toMatch(/Error/);
    const input = new Uint8Array(await readFile(before));
    expect(inspect(input).details.otherConstraints).toBe('Old terms');

    // Kept (the dashboard's default): the file's own opt-out and its text stay.
    const kept = protect(input, { value: CODE, otherConstraints: TEXT, keepExisting: true, signer: provenance.signer });
    expect(kept.value).toBe('DMI-PROHIBITED');
    expect(kept.otherConstraints).toBeUndefined();
    expect(inspect(kept.bytes).details.otherConstraints).toBe('Old terms');

    const result = protect(input, { value: CODE, otherConstraints: TEXT, signer: provenance.signer });
    const path = await dir.write(`rewritten-${name}.${EXTENSION[format]}`, result.bytes);
    const read = await readers(path);
    expect(read.ExifTool).toEqual({ dataMining: CODE, otherConstraints: TEXT });
    expect(read.exiv2).toEqual({ dataMining: URI, otherConstraints: `lang="x-default" ${TEXT}, lang="de" Alte Bedingungen` });
    expect(read.exempi).toEqual({ dataMining: URI, otherConstraints: TEXT });
    expect((await exiftool.readJson(path, ['-XMP-plus:OtherConstraints-de']))['XMP-plus:OtherConstraints-de']).toBe('Alte Bedingungen');
    // (exempi shows every item of this Lang Alt with the x-default's text, for ExifTool's own file as for ours: the German item is ExifTool's and exiv2's to read.)
    expect(await exiftool.warnings(path)).toEqual(await exiftool.warnings(before));
    expect(otherBlocks(result.bytes)).toEqual(otherBlocks(input));
  });
});
