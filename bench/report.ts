/** Formatting for the benchmark: the results table and the PASS/FAIL lines. */
import type { Format } from './images.js';
import { table as textTable } from './stress/support/report.js';

export interface FileResult {
  readonly name: string;
  readonly format: Format;
  readonly bytes: number;
  readonly width: number;
  readonly height: number;
  readonly sha256Ms: number;
  /** A copy of the file into a new buffer: the least that writing an output costs. */
  readonly copyMs: number;
  /** protect: the marked bytes (what ExifTool's write makes; the command line's protect, which hashes nothing more). */
  readonly protectMs: number;
  /** protect as the API returns it: the marked bytes and their SHA-256 (computed when the result's sha256 is first read). */
  readonly protectHashedMs: number;
  readonly verifyMs: number;
  /** protect with a provenance tag signed (its SHA-256 read too, as protectHashedMs), and verify of a tagged file with the tag checked. */
  readonly protectSignedMs: number;
  readonly verifySignedMs: number;
  /** readFileSync + protect + writeFileSync: file to file, as ExifTool works. */
  readonly protectIoMs: number;
  /** readFileSync + writeFileSync alone (no protect): the I/O share of protectIoMs. */
  readonly ioMs: number;
  /** ExifTool in its -stay_open batch, per write. */
  readonly exiftoolMs: number;
  /** One whole ExifTool process per write (Perl's start-up included). */
  readonly exiftoolProcessMs: number;
  /** verify of the marked file with the fingerprint check (reduced decode + detector in this thread). */
  readonly verifyDetectMs: number;
  /** The decode the detector uses: shrink-on-load to the analysis size (the fastest sharp decode of the file). */
  readonly decodeReducedMs: number;
  /** sharp's full-resolution decode to raw pixels. */
  readonly decodeFullMs: number;
  readonly runs: { readonly sha256: number; readonly protect: number; readonly verify: number; readonly protectIo: number; readonly exiftool: number; readonly exiftoolProcess: number };
}

export interface Target {
  readonly name: string;
  readonly pass: boolean;
  readonly detail: string;
}

const MB = 1024 * 1024;
const ms = (v: number) => v.toFixed(v < 10 ? 3 : 1);
const ratio = (v: number) => `${v.toFixed(2)}x`;

export function table(results: readonly FileResult[]): string {
  const header = ['format', 'size MB', 'sha256 ms', 'protect ms', '+sha out', 'prot+sha/sha', 'verify ms', 'ver/sha', 'tag +prot', 'tag +ver', 'prot+io ms', 'exiftool ms', 'faster (mem)', 'faster (file)'];
  const rows = results.map((r) => [
    r.format,
    (r.bytes / MB).toFixed(2),
    ms(r.sha256Ms),
    ms(r.protectMs),
    ms(r.protectHashedMs),
    ratio(r.protectHashedMs / r.sha256Ms),
    ms(r.verifyMs),
    ratio(r.verifyMs / r.sha256Ms),
    ms(r.protectSignedMs - r.protectHashedMs),
    ms(r.verifySignedMs - r.verifyMs),
    ms(r.protectIoMs),
    ms(r.exiftoolMs),
    ratio(r.exiftoolMs / r.protectMs),
    ratio(r.exiftoolMs / r.protectIoMs),
  ]);
  // Text left-aligned, numbers right-aligned, so the columns read at a glance.
  return textTable(header, rows);
}

/** The second table: the signed protect against ExifTool both ways, and verify against the decodes. */
export function secondTable(results: readonly FileResult[]): string {
  const header = ['format', 'size MB', 'signed prot ms', '/sha', 'exiftool batch ms', 'faster', 'exiftool process ms', 'faster', 'verify ms', '+fingerprint ms', 'reduced decode ms', '/decode', 'full decode ms'];
  const rows = results.map((r) => [
    r.format,
    (r.bytes / MB).toFixed(2),
    ms(r.protectSignedMs),
    ratio(r.protectSignedMs / r.sha256Ms),
    ms(r.exiftoolMs),
    ratio(r.exiftoolMs / r.protectSignedMs),
    ms(r.exiftoolProcessMs),
    ratio(r.exiftoolProcessMs / r.protectSignedMs),
    ms(r.verifyMs),
    ms(r.verifyDetectMs),
    ms(r.decodeReducedMs),
    ratio(r.verifyDetectMs / r.decodeReducedMs),
    ms(r.decodeFullMs),
  ]);
  return textTable(header, rows);
}

/** PASS plain, FAIL loud (and red on a terminal): the run still exits 0, so a failure must not be missed. */
export function targetLine(t: Target, colour: boolean): string {
  if (t.pass) return `PASS  ${t.name}: ${t.detail}`;
  const text = `FAIL  ${t.name}: ${t.detail}  <<<<<<<<<< TARGET MISSED`;
  return colour ? `\x1b[1;31m${text}\x1b[0m` : text;
}
