/**
 * Shared pieces of the oracle tests (test/oracle/*.test.ts): a temp folder per
 * test file, a small concurrency limiter for the command-line tools, the
 * validators per format, and a reader for JPEG Extended XMP segments that
 * does not use our own parser.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tool, type ToolResult } from '../support/tools.js';

export const PLUS_NS = 'http://ns.useplus.org/ldf/xmp/1.0/';
export const VOCAB = 'http://ns.useplus.org/ldf/vocab/';
export const DEFAULT_URI = `${VOCAB}DMI-PROHIBITED-AIMLTRAINING`;

export type Format = 'jpeg' | 'png' | 'webp';

/** The format by signature, read here rather than through our sniffer. */
export function formatOf(bytes: Uint8Array): Format {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (b[0] === 0xff && b[1] === 0xd8) return 'jpeg';
  if (b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'png';
  if (b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP') return 'webp';
  throw new Error('not a JPEG, PNG or WebP');
}

export const EXTENSION: Record<Format, string> = { jpeg: 'jpg', png: 'png', webp: 'webp' };

/** A temp folder that `remove` deletes with everything in it. */
export class TempDir {
  private constructor(readonly path: string) {}

  static async create(prefix: string): Promise<TempDir> {
    return new TempDir(await mkdtemp(join(tmpdir(), `optmark-${prefix}-`)));
  }

  /** Write `bytes` under a name made safe from `name`, and return the path. */
  async write(name: string, bytes: Uint8Array): Promise<string> {
    const path = join(this.path, name.replace(/[^A-Za-z0-9._-]/g, '_'));
    await writeFile(path, bytes);
    return path;
  }

  async remove(): Promise<void> {
    await rm(this.path, { recursive: true, force: true });
  }
}

/** Run at most `n` of the given tasks at a time. */
export function limiter(n: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0;
  const queue: Array<() => void> = [];
  const next = (): void => {
    if (active >= n) return;
    const start = queue.shift();
    if (start) {
      active++;
      start();
    }
  };
  return <T>(task: () => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      queue.push(() => {
        task()
          .then(resolve, reject)
          .finally(() => {
            active--;
            next();
          });
      });
      next();
    });
}

/** The structural validator of a format (pngcheck, webpinfo), or undefined for JPEG. */
export async function validate(format: Format, file: string): Promise<ToolResult | undefined> {
  if (format === 'png') return tool('pngcheck', ['-q', file]);
  if (format === 'webp') return tool('webpinfo', ['-quiet', file]);
  return undefined;
}

/** A validator's complaint with the file's path taken out, so input and output compare. */
export function complaint(result: ToolResult, file: string): string {
  return `${result.stdout}${result.stderr}`.split(file).join('FILE').trim();
}

/**
 * Occurrences of plus:DataMining (opening tags and attributes, any prefix)
 * in raw XMP text. The prefix is not checked against the namespace here; the
 * callers only use this on packets whose DataMining is in `plus`.
 */
export function dataMiningOccurrences(xmp: string): number {
  return (xmp.match(/[<\s][\w.-]*:DataMining\b/g) ?? []).length;
}

/** The Extended XMP segments of a JPEG, read independently of src/, joined per GUID in offset order. */
export function jpegExtendedXmp(bytes: Uint8Array): Map<string, { fullLength: number; data: Buffer }> {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const signature = 'http://ns.adobe.com/xmp/extension/\0';
  const chunks = new Map<string, Array<{ offset: number; fullLength: number; data: Buffer }>>();
  let at = 2;
  while (at + 4 <= b.length && b[at] === 0xff) {
    const marker = b[at + 1]!;
    if (marker === 0xd9 || marker === 0xda) break;
    if (marker === 0xff) {
      at++;
      continue;
    }
    const length = b.readUInt16BE(at + 2);
    const payload = b.subarray(at + 4, at + 2 + length);
    if (marker === 0xe1 && payload.toString('latin1', 0, signature.length) === signature) {
      let p = signature.length;
      const guid = payload.toString('latin1', p, p + 32);
      p += 32;
      const fullLength = payload.readUInt32BE(p);
      const offset = payload.readUInt32BE(p + 4);
      const list = chunks.get(guid) ?? [];
      list.push({ offset, fullLength, data: payload.subarray(p + 8) });
      chunks.set(guid, list);
    }
    at += 2 + length;
  }
  const joined = new Map<string, { fullLength: number; data: Buffer }>();
  for (const [guid, list] of chunks) {
    list.sort((x, y) => x.offset - y.offset);
    joined.set(guid, { fullLength: list[0]!.fullLength, data: Buffer.concat(list.map((c) => c.data)) });
  }
  return joined;
}

export function md5Upper(data: Uint8Array): string {
  return createHash('md5').update(data).digest('hex').toUpperCase();
}
