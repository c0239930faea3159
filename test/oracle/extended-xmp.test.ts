/**
 * JPEG Extended XMP against ExifTool 13.59, which splits XMP over its
 * standard-packet limit on its own: verify() reads the opt-out ExifTool writes
 * next to an extension; protect() keeps an existing extension readable and
 * correctly named (xmpNote:HasExtendedXMP = MD5 of the extension); and when
 * the merged packet no longer fits one segment, protect() moves properties
 * into Extended XMP that ExifTool reads back whole.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inspect, protect, verify } from '../../src/index.js';
import { corpusFile } from '../support/corpus.js';
import { ExifTool } from '../support/exiftool.js';
import { exiv2DataMining } from '../support/tools.js';
import { bareXmp, enc, extensionSegments, md5Guid, withSegments, xmpPacket, xmpSegment } from '../support/build.js';
import { DEFAULT_URI, jpegExtendedXmp, md5Upper, PLUS_NS, TempDir, VOCAB } from './support.js';

/** A JPEG with a rich XMP packet of its own (about 6 KB), so moved and kept properties mix. */
const BASE = corpusFile('exiftool/XMP.jpg');

/** Text of about `bytes` UTF-8 bytes (not more), with multi-byte characters, on one line. */
function oneLine(bytes: number): string {
  const unit = 'Zażółć gęślą jaźń; ';
  const n = Math.floor(bytes / Buffer.byteLength(unit));
  return unit.repeat(n).trimEnd();
}

/** Text of about `bytes` UTF-8 bytes on many lines. */
function manyLines(bytes: number): string {
  const lines: string[] = [];
  for (let i = 0, size = 0; size < bytes; i++) {
    const line = `Line ${i}: Zażółć gęślą jaźń, the quick brown fox <jumps> & "quotes" over the lazy dog.`;
    lines.push(line);
    size += Buffer.byteLength(line) + 1;
  }
  return lines.join('\n');
}

let exiftool: ExifTool;
let dir: TempDir;

beforeAll(async () => {
  exiftool = new ExifTool();
  dir = await TempDir.create('extended');
});

afterAll(async () => {
  await exiftool?.close();
  await dir?.remove();
});

/**
 * Copy the base JPEG and have ExifTool write the given XMP tags into it; each
 * value goes through a text file (`-TAG<=FILE`), since arguments cannot hold
 * newlines. Returns the path.
 */
async function writeWithExifTool(name: string, tags: Record<string, string>, extra: readonly string[] = []): Promise<string> {
  const file = await dir.write(name, BASE.bytes);
  const args: string[] = [];
  for (const [tag, value] of Object.entries(tags)) {
    const text = join(dir.path, `${name}-${tag.replace(/\W/g, '_')}.txt`);
    await writeFile(text, value);
    args.push(`-${tag}<=${text}`);
  }
  const { stderr } = await exiftool.run([...args, ...extra, '-overwrite_original', file]);
  expect(stderr).toBe('');
  return file;
}

/** The standard packet as ExifTool extracts it (`-b -XMP`), in bytes. */
async function standardPacketBytes(file: string): Promise<number> {
  return Buffer.byteLength((await exiftool.run(['-b', '-XMP', file])).stdout);
}

/**
 * protect() the file, write the result next to it, and check what every
 * reader must see: ExifTool reads the opt-out and each of `kept` intact, with
 * no new warning and none about Extended XMP; the file holds exactly one
 * extension, whose MD5 is the GUID the standard packet announces; exiv2 (which
 * ignores Extended XMP) reads the opt-out from the standard packet.
 */
async function protectAndCheck(file: string, kept: Record<string, string>): Promise<{ guid: string; before: string | undefined }> {
  const input = await readFile(file);
  const before = (await exiftool.readJson(file, ['-XMP-xmpNote:HasExtendedXMP']))['XMP-xmpNote:HasExtendedXMP'] as string | undefined;
  const marked = protect(input);
  expect(marked.changed).toBe(true);
  const output = file.replace(/\.jpg$/, '-protected.jpg');
  await writeFile(output, marked.bytes);

  const tags = await exiftool.readJson(output, ['-XMP-plus:DataMining', '-XMP-xmpNote:HasExtendedXMP', ...Object.keys(kept).map((t) => `-${t}`)]);
  expect(tags['XMP-plus:DataMining']).toBe('DMI-PROHIBITED-AIMLTRAINING');
  for (const [tag, value] of Object.entries(kept)) {
    const read = tags[tag];
    expect(typeof read).toBe('string');
    expect((read as string).length).toBe(value.length);
    expect(read).toBe(value);
  }

  const warningsIn = new Set(await exiftool.warnings(file));
  const warningsOut = await exiftool.warnings(output);
  expect(warningsOut.filter((w) => /extended XMP/i.test(w))).toEqual([]);
  expect(warningsOut.filter((w) => !warningsIn.has(w))).toEqual([]);

  const guid = tags['XMP-xmpNote:HasExtendedXMP'];
  expect(guid).toMatch(/^[0-9A-F]{32}$/);
  const extensions = jpegExtendedXmp(marked.bytes);
  expect([...extensions.keys()]).toEqual([guid]);
  const extension = extensions.get(guid as string)!;
  expect(extension.data.length).toBe(extension.fullLength);
  expect(md5Upper(extension.data)).toBe(guid);

  expect(await exiv2DataMining(output)).toBe(DEFAULT_URI);
  const read = inspect(marked.bytes);
  expect(read.result.optedOut).toBe(true);
  expect(read.details.dataMining).toEqual([expect.objectContaining({ value: DEFAULT_URI, form: 'element', extended: false })]);
  return { guid: guid as string, before };
}

describe('a value that only Extended XMP holds', () => {
  it('ExifTool reads it, exiv2 (which ignores Extended XMP) does not, and verify() counts it', async () => {
    const extended = enc(
      bareXmp(`<rdf:Description rdf:about="" xmlns:plus="${PLUS_NS}"><plus:DataMining>${VOCAB}DMI-PROHIBITED-GENAIMLTRAINING</plus:DataMining></rdf:Description>`),
    );
    const guid = md5Guid(extended);
    const standard = xmpPacket(`<rdf:Description rdf:about="" xmlns:xmpNote="http://ns.adobe.com/xmp/note/" xmpNote:HasExtendedXMP="${guid}"/>`);
    // A file without XMP of its own, so the extension is the only place of the value.
    const base = corpusFile('exiv2/smiley1.jpg').bytes;
    const rebuilt = await dir.write('extended-only.jpg', withSegments(base, xmpSegment(standard), ...extensionSegments(extended, guid, 40)));

    const tags = await exiftool.readJson(rebuilt, ['-XMP-plus:DataMining', '-XMP-xmpNote:HasExtendedXMP', '-Warning']);
    expect(tags['XMP-plus:DataMining']).toBe('DMI-PROHIBITED-GENAIMLTRAINING');
    expect(tags['XMP-xmpNote:HasExtendedXMP']).toBe(guid);
    expect(JSON.stringify(tags)).not.toMatch(/extended XMP/i);
    expect(await exiv2DataMining(rebuilt)).toBeUndefined();

    const { result, details } = inspect(await readFile(rebuilt));
    expect(result.optedOut).toBe(true);
    expect(details.dataMining).toMatchObject([{ value: `${VOCAB}DMI-PROHIBITED-GENAIMLTRAINING`, extended: true }]);

    // protect() keeps the value (no other was asked for) and writes it where exiv2 sees it too.
    const marked = await dir.write('extended-only-marked.jpg', protect(await readFile(rebuilt)).bytes);
    expect(await exiv2DataMining(marked)).toBe(`${VOCAB}DMI-PROHIBITED-GENAIMLTRAINING`);
    expect((await exiftool.readJson(marked, ['-XMP-plus:DataMining']))['XMP-plus:DataMining']).toBe('DMI-PROHIBITED-GENAIMLTRAINING');
    expect(inspect(await readFile(marked)).details.dataMining).toMatchObject([{ extended: false }]);
  });
});

describe('Extended XMP written by ExifTool', () => {
  it('verify() reads the opt-out ExifTool writes beside a 120 KB multi-line description it splits into Extended XMP', async () => {
    const description = manyLines(120_000);
    const file = await writeWithExifTool('split-by-exiftool.jpg', { 'XMP-dc:Description': description }, ['-XMP-plus:DataMining#=DMI-PROHIBITED']);
    const tags = await exiftool.readJson(file, ['-XMP-xmpNote:HasExtendedXMP', '-XMP-plus:DataMining', '-XMP-dc:Description']);
    expect(tags['XMP-xmpNote:HasExtendedXMP']).toMatch(/^[0-9A-F]{32}$/);
    expect(tags['XMP-plus:DataMining']).toBe('DMI-PROHIBITED');
    expect(tags['XMP-dc:Description']).toBe(description);

    const bytes = await readFile(file);
    const result = verify(bytes);
    expect(result.optedOut).toBe(true);
    expect(result.signals).toContain('iptc.dataMining');
    const { details } = inspect(bytes);
    expect(details.dataMining.map((d) => d.value)).toEqual([`${VOCAB}DMI-PROHIBITED`]);
    expect(details.warnings).toEqual([]);
  });

  it('protect() keeps an Extended XMP that ExifTool made for a 70 KB description: same extension, MD5 GUID, all readable', async () => {
    const description = manyLines(70_000);
    const file = await writeWithExifTool('existing-extension.jpg', { 'XMP-dc:Description': description });
    const { guid, before } = await protectAndCheck(file, { 'XMP-dc:Description': description });
    expect(before).toMatch(/^[0-9A-F]{32}$/);
    // The opt-out fits the standard packet, so the extension stays as ExifTool wrote it.
    expect(guid).toBe(before);
  });

  it('protect() moves properties into a new Extended XMP when ExifTool left a 64.9 KB standard packet with no room for the opt-out', async () => {
    const description = oneLine(61_900);
    const file = await writeWithExifTool('full-packet.jpg', { 'XMP-dc:Description': description });
    // The premise: ExifTool did not split, and its packet is within 200 bytes of our 65000-byte limit.
    expect((await exiftool.readJson(file, ['-XMP-xmpNote:HasExtendedXMP']))['XMP-xmpNote:HasExtendedXMP']).toBeUndefined();
    const size = await standardPacketBytes(file);
    expect(size).toBeGreaterThan(64_800);
    expect(size).toBeLessThanOrEqual(65_000);

    const { before } = await protectAndCheck(file, { 'XMP-dc:Description': description });
    expect(before).toBeUndefined();
  });

  it('protect() adds to an existing Extended XMP when the standard packet beside it is full, replacing the old extension', async () => {
    const description = manyLines(120_000);
    const headline = oneLine(61_800);
    // Without padding (which ExifTool otherwise reserves room for), ExifTool fills the standard packet up to its own limit.
    const file = await writeWithExifTool('full-packet-and-extension.jpg', { 'XMP-dc:Description': description, 'XMP-photoshop:Headline': headline }, [
      '-api',
      'Compact=NoPadding',
    ]);
    // The premise: ExifTool moved the description out and kept the headline in a standard packet of about 64.9 KB.
    const size = await standardPacketBytes(file);
    expect(size).toBeGreaterThan(64_800);
    expect(size).toBeLessThanOrEqual(65_000);
    const original = await readFile(file);
    expect(jpegExtendedXmp(original).size).toBe(1);

    const { guid, before } = await protectAndCheck(file, { 'XMP-dc:Description': description, 'XMP-photoshop:Headline': headline });
    expect(before).toMatch(/^[0-9A-F]{32}$/);
    expect(guid).not.toBe(before);
  });
});
