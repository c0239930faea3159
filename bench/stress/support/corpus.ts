/**
 * What the clients post: the test corpus's JPEG, PNG and WebP files (minus
 * the ones broken on purpose, which are answered 4xx by design), each as a
 * ready multipart body.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join, relative } from 'node:path';
import { ROOT } from './server.js';
import { random } from '../../../test/support/random.js';

export type Operation = 'protect' | 'verify';

export interface Upload {
  readonly name: string;
  readonly bytes: number;
  readonly body: Buffer;
  readonly contentType: string;
}

const CORPUS = join(ROOT, 'test', 'corpus');
const BOUNDARY = '----optmark-stress-7d1e94c2a0b3';
const TYPES: Record<string, string> = { '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.png': 'image/png', '.webp': 'image/webp' };
/** Invalid by design: PngSuite's x* files are corrupt, and this JPEG has two XMP packets (422 on protect). */
const BROKEN = (name: string) => /^pngsuite\/x/.test(name) || name === 'exiv2/bug1229-two-xmp.jpg';

export function multipart(name: string, bytes: Buffer): Upload {
  const type = TYPES[extname(name).toLowerCase()] ?? 'application/octet-stream';
  const head = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="${name.split('/').pop()}"\r\nContent-Type: ${type}\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  return { name, bytes: bytes.length, body: Buffer.concat([head, bytes, tail]), contentType: `multipart/form-data; boundary=${BOUNDARY}` };
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? walk(path) : entry.isFile() ? [path] : [];
  });
}

export function corpusUploads(): Upload[] {
  return walk(CORPUS)
    .map((path) => relative(CORPUS, path))
    .filter((name) => extname(name).toLowerCase() in TYPES && !BROKEN(name))
    .sort()
    .map((name) => multipart(name, readFileSync(join(CORPUS, name))));
}

/** The small JPEG the process tests post (10 KB). */
export function smallJpeg(): Upload {
  return multipart('exiftool/XMP.jpg', readFileSync(join(CORPUS, 'exiftool', 'XMP.jpg')));
}


/** Picks an operation (protect with probability `protectShare`) and a file, at random. */
export function mix(uploads: readonly Upload[], protectShare: number, seed = 1): () => { op: Operation; upload: Upload } {
  const next = random(seed);
  return () => ({ op: next() < protectShare ? 'protect' : 'verify', upload: uploads[Math.floor(next() * uploads.length)]! });
}
