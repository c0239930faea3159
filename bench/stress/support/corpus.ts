/**
 * What the clients post: the test corpus's JPEG, PNG and WebP files (minus
 * the ones broken on purpose, which are answered 4xx by design), each as a
 * ready multipart body.
 */
import { extname } from 'node:path';
import { AMBIGUOUS_XMP, CORPUS, corpusFile, INTENTIONALLY_CORRUPT } from '../../../test/support/corpus.js';
import { random } from '../../../test/support/random.js';

export type Operation = 'protect' | 'verify';

export interface Upload {
  readonly name: string;
  readonly bytes: number;
  readonly body: Buffer;
  readonly contentType: string;
}

const BOUNDARY = '----optmark-stress-7d1e94c2a0b3';
const TYPES: Record<string, string> = { '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.png': 'image/png', '.webp': 'image/webp' };

export function multipart(name: string, bytes: Buffer): Upload {
  const type = TYPES[extname(name).toLowerCase()] ?? 'application/octet-stream';
  const head = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="${name.split('/').pop()}"\r\nContent-Type: ${type}\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  return { name, bytes: bytes.length, body: Buffer.concat([head, bytes, tail]), contentType: `multipart/form-data; boundary=${BOUNDARY}` };
}

/** The corpus minus the files broken on purpose (PngSuite's x*) or refused by protect by design (two XMP packets). */
export function corpusUploads(): Upload[] {
  return CORPUS.filter((f) => !INTENTIONALLY_CORRUPT.has(f.name) && !AMBIGUOUS_XMP.has(f.name)).map((f) => multipart(f.name, f.bytes));
}

/** The small JPEG the process tests post (10 KB). */
export function smallJpeg(): Upload {
  return multipart('exiftool/XMP.jpg', corpusFile('exiftool/XMP.jpg').bytes);
}

/** Picks an operation (protect with probability `protectShare`) and a file, at random. */
export function mix(uploads: readonly Upload[], protectShare: number, seed = 1): () => { op: Operation; upload: Upload } {
  const next = random(seed);
  return () => ({ op: next() < protectShare ? 'protect' : 'verify', upload: uploads[Math.floor(next() * uploads.length)]! });
}
