/**
 * Reader agreement: every valid corpus image and every generated image is
 * marked as the API and the CLI mark it (protect() with a provenance
 * signer), then read back by independent readers:
 * - ExifTool 13.59 (npm exiftool-vendored.pl, in -stay_open mode),
 * - exiv2 0.27 and exempi 2.6 (Adobe's XMP Toolkit, which Adobe's
 *   applications are built on; Debian packages exiv2, exempi),
 * - libvips 8.14 (`vipsheader`, Debian libvips-tools), for JPEG,
 * - ImageMagick 6.9 (`identify`, Debian imagemagick), for JPEG.
 * The agreement per reader and format is printed. Every reader reads the
 * value in every file, with these exceptions, each asserted with its reason:
 * exiv2 stops at pillow/icc-after-SOF.jpg's ICC profile before the XMP;
 * exempi drops the XMP of a WebP whose EXIF chunk holds the standard raw TIFF
 * header and cannot open an animated WebP (docs/formats.md says why);
 * libvips and ImageMagick are held to JPEG, ImageMagick's PNG and WebP XMP
 * reading being broken for every writer (reported, not asserted).
 * Last, exempi's in-place rewrite of a marked PNG leaves the old packet's
 * tail behind the new one, and verify still reads the file.
 */
import { execFile } from 'node:child_process';
import { copyFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProvenance, inspect, protect, SigningKeys } from '../../src/index.js';
import { AMBIGUOUS_XMP, CORPUS, INTENTIONALLY_CORRUPT } from '../support/corpus.js';
import { ExifTool } from '../support/exiftool.js';
import { generatedImages } from '../support/generated.js';
import { EXTENSION, formatOf, limiter, TempDir, VOCAB, type Format } from './support.js';

const run = promisify(execFile);

/** A command's output, its failure included (a reader that cannot read a file says so and exits non-zero, or not). */
async function output(command: string, args: readonly string[]): Promise<{ stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(command, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    return { stdout, stderr };
  } catch (error) {
    const e = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof e.code === 'string') throw error; // the tool is not installed
    return { stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

type Reader = 'ExifTool' | 'exiv2' | 'exempi' | 'libvips' | 'ImageMagick';
const READERS: readonly Reader[] = ['ExifTool', 'exiv2', 'exempi', 'libvips', 'ImageMagick'];
const FORMATS: readonly Format[] = ['jpeg', 'png', 'webp'];

interface Marked {
  readonly name: string;
  readonly format: Format;
  /** The marked copy on disk (an absolute path: exempi mangles its messages for relative ones). */
  readonly path: string;
  readonly bytes: Uint8Array;
  /** The full URI protect wrote (or kept). */
  readonly uri: string;
}

/** What one reader made of one file: the value it read, if any, and what it said. */
interface Reading {
  readonly value: string | undefined;
  readonly said: string;
}

const generated = (await generatedImages()).map((g) => ({ name: `generated/${g.name}`, bytes: g.bytes as Uint8Array }));
const inputs = [
  ...CORPUS.filter((f) => !INTENTIONALLY_CORRUPT.has(f.name) && !AMBIGUOUS_XMP.has(f.name)).map((f) => ({ name: f.name, bytes: f.bytes as Uint8Array })),
  ...generated,
];

/** WebP chunks by FourCC (a small independent walk, not our handler). */
function webpChunks(bytes: Uint8Array): Array<{ fourcc: string; payload: Buffer }> {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const chunks: Array<{ fourcc: string; payload: Buffer }> = [];
  for (let at = 12; at + 8 <= b.length; ) {
    const size = b.readUInt32LE(at + 4);
    chunks.push({ fourcc: b.toString('latin1', at, at + 4), payload: b.subarray(at + 8, at + 8 + size) });
    at += 8 + size + (size & 1);
  }
  return chunks;
}

/**
 * Why exempi 2.6 cannot read a marked WebP, or undefined when it can. Its
 * WebP handler (XMPFiles WEBP_Handler.cpp, ProcessXMP) hands the EXIF chunk
 * to the TIFF parser after skipping 6 bytes, as if the chunk began with a
 * JPEG's "Exif\0\0"; with the raw TIFF header RFC 9649 prescribes (what
 * libwebp's webpmux writes and ExifTool expects) the parser throws, and the
 * whole read fails. Its container parser (WEBP_Support.cpp) throws "File has
 * no image bitstream" for a file without a top-level VP8/VP8L chunk, which is
 * every animated WebP (the frames are in ANMF chunks).
 */
function exempiWebpLimit(bytes: Uint8Array): { reason: string; message: RegExp; readsWithoutReconciling: boolean } | undefined {
  const chunks = webpChunks(bytes);
  if (!chunks.some((c) => c.fourcc === 'VP8 ' || c.fourcc === 'VP8L')) {
    return { reason: 'no top-level VP8/VP8L chunk (animated)', message: /File has no image bitstream/, readsWithoutReconciling: false };
  }
  const exif = chunks.find((c) => c.fourcc === 'EXIF');
  const tiffHeader = exif && ['II*\0', 'MM\0*'].includes(exif.payload.toString('latin1', 0, 4));
  if (tiffHeader) return { reason: 'EXIF chunk with the raw TIFF header', message: /Unrecognized TIFF prefix/, readsWithoutReconciling: true };
  return undefined;
}

const DATA_MINING_ELEMENT = /<([\w.-]+):DataMining>([^<]*)<\/\1:DataMining>/;

let dir: TempDir;
let exiftool: ExifTool;
const marked: Marked[] = [];
const readings = new Map<Reader, Map<string, Reading>>();
const seconds = new Map<Reader | 'marking', number>();

/** Run `read` over `files`, three at a time, and keep what each read and how long it took. */
async function readAll(reader: Reader, files: readonly Marked[], read: (file: Marked) => Promise<Reading>): Promise<void> {
  const started = performance.now();
  const pool = limiter(3);
  const results = await Promise.all(files.map((file) => pool(async () => [file.name, await read(file)] as const)));
  readings.set(reader, new Map(results));
  seconds.set(reader, (performance.now() - started) / 1000);
}

beforeAll(async () => {
  const started = performance.now();
  dir = await TempDir.create('readers');
  exiftool = new ExifTool();
  const provenance = createProvenance({ keys: SigningKeys.open(join(dir.path, 'signing-keys.json')), issuer: () => 'https://optmark.test', clock: { now: () => new Date() } });
  for (const { name, bytes } of inputs) {
    const result = protect(Buffer.from(bytes), { signer: provenance.signer });
    const format = formatOf(result.bytes);
    const path = await dir.write(`${name}.${EXTENSION[format]}`, result.bytes);
    marked.push({ name, format, path, bytes: result.bytes, uri: `${VOCAB}${result.value}` });
  }
  seconds.set('marking', (performance.now() - started) / 1000);

  await readAll('ExifTool', marked, async (file) => {
    // -b: the value without ExifTool's label (its code, DMI-...).
    const { stdout, stderr } = await exiftool.run(['-b', '-XMP-plus:DataMining', file.path]);
    return { value: stdout || undefined, said: stderr };
  });
  await readAll('exiv2', marked, async (file) => {
    const { stdout, stderr } = await output('exiv2', ['-PXkv', '-K', 'Xmp.plus.DataMining', file.path]);
    return { value: /^Xmp\.plus\.DataMining\s+(.*)$/m.exec(stdout)?.[1]?.trim(), said: stderr };
  });
  // One process per file: exempi 2.6 given several files prints nothing useful.
  await readAll('exempi', marked, async (file) => {
    const { stdout, stderr } = await output('exempi', ['-g', 'plus:DataMining', file.path]);
    return { value: stdout.trim() || undefined, said: stderr };
  });
  // vipsheader prints one line per file (the XMP in base64); 20 files a call, one by one where a call's lines do not add up.
  const vipsStarted = performance.now();
  const vips = new Map<string, Reading>();
  const reading = (line: string, said: string): Reading => ({ value: DATA_MINING_ELEMENT.exec(Buffer.from(line.trim(), 'base64').toString('utf8'))?.[2], said });
  for (let i = 0; i < marked.length; i += 20) {
    const batch = marked.slice(i, i + 20);
    const { stdout, stderr } = await output('vipsheader', ['-f', 'xmp-data', ...batch.map((f) => f.path)]);
    const lines = stdout.split('\n').slice(0, -1);
    if (lines.length === batch.length && stderr === '') batch.forEach((file, j) => vips.set(file.name, reading(lines[j]!, '')));
    else for (const file of batch) {
      const one = await output('vipsheader', ['-f', 'xmp-data', file.path]);
      vips.set(file.name, reading(one.stdout, one.stderr));
    }
  }
  readings.set('libvips', vips);
  seconds.set('libvips', (performance.now() - vipsStarted) / 1000);
  // ImageMagick reads a batch in one process; %[xmp:*] makes it parse the XMP into properties first.
  const imStarted = performance.now();
  const im = new Map<string, Reading>();
  for (const format of FORMATS) {
    const files = marked.filter((f) => f.format === format);
    const { stdout, stderr } = await output('identify', ['-ping', '-format', '%[xmp:*]@@%i@@%[plus:DataMining]@@\n', ...files.map((f) => f.path)]);
    const values = new Map([...stdout.matchAll(/^@@(.*)@@(.*)@@$/gm)].map((m) => [m[1]!, m[2]!]));
    for (const file of files) im.set(file.name, { value: values.get(file.path) || undefined, said: stderr.split('\n').filter((line) => line.includes(file.path)).join('\n') });
  }
  readings.set('ImageMagick', im);
  seconds.set('ImageMagick', (performance.now() - imStarted) / 1000);
}, 600_000);

afterAll(async () => {
  await exiftool?.close();
  await dir?.remove();
});

/** ExifTool converts the value to its code (DMI-...); the others give the stored URI. */
const reads = (reader: Reader, file: Marked) => readings.get(reader)!.get(file.name)!.value === (reader === 'ExifTool' ? file.uri.slice(VOCAB.length) : file.uri);

describe('reader agreement over every marked corpus and generated image', () => {
  it('covers every valid corpus image and every generated one, in all three formats, and prints the agreement', () => {
    expect(marked.length).toBeGreaterThanOrEqual(200);
    expect(new Set(marked.map((f) => f.format))).toEqual(new Set(FORMATS));
    const lines = ['reader agreement: files whose plus:DataMining the reader reads, of those marked', `${'reader'.padEnd(12)}${FORMATS.map((f) => f.padStart(10)).join('')}   seconds`];
    for (const reader of READERS) {
      const cells = FORMATS.map((format) => {
        const files = marked.filter((f) => f.format === format);
        return `${files.filter((f) => reads(reader, f)).length}/${files.length}`.padStart(10);
      });
      lines.push(`${reader.padEnd(12)}${cells.join('')}   ${seconds.get(reader)!.toFixed(1)}`);
    }
    lines.push(`(marking ${marked.length} files: ${seconds.get('marking')!.toFixed(1)} s)`);
    console.log(lines.join('\n'));
  });

  it('ExifTool reads the value in every file', () => {
    expect(marked.filter((f) => !reads('ExifTool', f)).map((f) => f.name)).toEqual([]);
  });

  it("exiv2 reads it in every file but the one whose ICC profile it stops at, before the XMP", () => {
    expect(marked.filter((f) => !reads('exiv2', f)).map((f) => f.name)).toEqual(['pillow/icc-after-SOF.jpg']);
    expect(readings.get('exiv2')!.get('pillow/icc-after-SOF.jpg')!.said).toMatch(/Not a valid ICC Profile/);
  });

  it("exempi reads it in every JPEG and PNG", () => {
    expect(marked.filter((f) => f.format !== 'webp' && !reads('exempi', f)).map((f) => f.name)).toEqual([]);
  });

  it('exempi reads it in every WebP it can parse; the others are the animated ones and those whose EXIF chunk has the raw TIFF header', async () => {
    const webps = marked.filter((f) => f.format === 'webp');
    const exceptions = webps.filter((f) => !reads('exempi', f)).map((f) => ({ name: f.name, reason: exempiWebpLimit(f.bytes)?.reason }));
    console.log(`exempi cannot read ${exceptions.length} of ${webps.length} marked WebP files:\n${exceptions.map((e) => `  ${e.name}: ${e.reason}`).join('\n')}`);
    // Exactly the files its WebP handler cannot read, as its source says, each failing as it says.
    expect(exceptions.map((e) => e.name)).toEqual(webps.filter((f) => exempiWebpLimit(f.bytes)).map((f) => f.name));
    expect(exceptions.map((e) => e.reason)).toEqual(expect.arrayContaining(['no top-level VP8/VP8L chunk (animated)', 'EXIF chunk with the raw TIFF header']));
    for (const file of webps.filter((f) => exempiWebpLimit(f.bytes))) {
      const limit = exempiWebpLimit(file.bytes)!;
      expect(readings.get('exempi')!.get(file.name)!.said, file.name).toMatch(limit.message);
      // Without reconciling with EXIF (-R), the XMP of a still image is read: the packet is fine.
      const raw = await output('exempi', ['-R', '-g', 'plus:DataMining', file.path]);
      expect(raw.stdout.trim() === file.uri, file.name).toBe(limit.readsWithoutReconciling);
    }
  });

  it('libvips reads it in every JPEG (it takes the first XMP segment: the standard packet comes before any Extended XMP)', () => {
    expect(marked.filter((f) => f.format === 'jpeg' && !reads('libvips', f)).map((f) => f.name)).toEqual([]);
    expect(reads('libvips', marked.find((f) => f.name === 'exiftool/ExtendedXMP.jpg')!)).toBe(true);
  });

  it("ImageMagick reads it in every JPEG (the value sits in the packet's first description, in element form)", () => {
    expect(marked.filter((f) => f.format === 'jpeg' && !reads('ImageMagick', f)).map((f) => f.name)).toEqual([]);
  });
});

describe("exempi rewriting a marked PNG's XMP in place", () => {
  it('leaves the old packet tail behind its new one, and verify still reads the file as ExifTool does', async () => {
    // The marked PNGs whose input had XMP of its own: their packets are larger than exempi's rewrite.
    const withXmp = marked.filter((f) => f.format === 'png' && Buffer.from(inputs.find((i) => i.name === f.name)!.bytes).includes('XML:com.adobe.xmp'));
    expect(withXmp.length).toBeGreaterThanOrEqual(5);
    let withLeftovers = 0;
    for (const file of withXmp) {
      const copy = join(dir.path, `exempi-${file.name.replace(/\W/g, '_')}.png`);
      await copyFile(file.path, copy);
      await output('exempi', ['-w', '-s', 'xmp:Rating', '-v', '3', copy]);
      const rewritten = await readFile(copy);
      const text = rewritten.toString('latin1');
      const ends = [...text.matchAll(/<\?xpacket end=/g)].map((m) => m.index);
      expect(ends.length, file.name).toBeGreaterThanOrEqual(2);
      if (/[^\s]/.test(text.slice(text.indexOf('?>', ends[0]) + 2, ends[1]))) withLeftovers++;
      const { result, details } = inspect(rewritten);
      expect(details.dataMining.map((d) => d.value), file.name).toEqual([file.uri]);
      expect(result.optedOut).toBe(true);
      expect((await exiftool.run(['-b', '-XMP-plus:DataMining', copy])).stdout, file.name).toBe(file.uri.slice(VOCAB.length));
    }
    // Some rewrites leave markup, not only blanks, behind: the case that reading to the last trailer got wrong.
    expect(withLeftovers).toBeGreaterThan(0);
  });
});
