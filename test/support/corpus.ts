/**
 * The third-party test corpus (test/corpus, copied verbatim from public
 * repositories; origins and licences in test/corpus/SOURCES.md) and what
 * ExifTool and exiv2 read from each file (test/corpus/ORACLE.json).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CORPUS_DIR = fileURLToPath(new URL('../corpus/', import.meta.url));

export interface OracleEntry {
  readonly sha256: string;
  readonly type?: string;
  readonly validator_ok: boolean;
  readonly exiftool_DataMining_n: string | null;
  readonly exiftool_warning: string | null;
  readonly exiftool_error: string | null;
  readonly exiftool_write_without_m: string;
  readonly exiv2_DataMining: string | null;
}

export const ORACLE = (JSON.parse(readFileSync(join(CORPUS_DIR, 'ORACLE.json'), 'utf8')) as { files: Record<string, OracleEntry> }).files;

export interface CorpusFile {
  /** Path inside the corpus, e.g. `pngsuite/basn0g01.png`. */
  readonly name: string;
  readonly path: string;
  readonly oracle: OracleEntry | undefined;
  readonly bytes: Buffer;
}

function walk(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((entry) => join(dir, entry))
    .filter((path) => statSync(path).isFile())
    .sort();
}

/** Every image file of the corpus (by extension; the sniffer decides the real format). */
export const CORPUS: readonly CorpusFile[] = walk(CORPUS_DIR)
  .filter((path) => /\.(jpe?g|png|webp)$/i.test(path))
  .map((path) => {
    const name = relative(CORPUS_DIR, path).split('\\').join('/');
    return { name, path, oracle: ORACLE[name], bytes: readFileSync(path) };
  });

/**
 * Files that are broken on purpose: PngSuite's x* files ("intentionally
 * invalid", per PngSuite and SOURCES.md). pngcheck also rejects
 * cm7n0g04.png, but only for its tIME year (1970), which is a valid date and
 * no container fault; that file is marked like any other.
 */
export const INTENTIONALLY_CORRUPT = new Set(CORPUS.filter((f) => /^pngsuite\/x/.test(f.name)).map((f) => f.name));
export const PNGCHECK_ONLY_REJECTS = new Set(['pngsuite/cm7n0g04.png']);

/** Two standard XMP packets: readable, but writing would have to pick one. */
export const AMBIGUOUS_XMP = new Set(['exiv2/bug1229-two-xmp.jpg']);

export function corpusFile(name: string): CorpusFile {
  const file = CORPUS.find((f) => f.name === name);
  if (!file) throw new Error(`no corpus file ${name}`);
  return file;
}
