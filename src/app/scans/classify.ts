/**
 * Which files of a tree a scan checks (DESIGN §6 "Scan definitions"): a
 * candidate is a file whose name has a JPEG, PNG or WebP extension or whose
 * bytes begin as one; a symbolic link is never followed (one with such a
 * name is a skipped candidate); over 25 MB, a Git LFS pointer, deeper than
 * 64 folders: skipped with the reason. Everything else is only counted.
 */
import type { ScanItem, SourceEntry } from './ports.js';

/** The API's upload limit: larger images are skipped. */
export const MAX_SCAN_FILE_BYTES = 25 * 1024 * 1024;
export const MAX_FOLDER_DEPTH = 64;
/** Enough of a file to tell an image or an LFS pointer from its first bytes. */
export const HEAD_BYTES = 64;
/** Git LFS pointer files are small text files that begin with this line. */
const LFS_POINTER = Buffer.from('version https://git-lfs.github.com/spec/v1\n');
const MAX_LFS_POINTER_BYTES = 1024;

const IMAGE_NAME = /\.(jpe?g|jpe|jfif|png|webp)$/i;

export const hasImageName = (path: string): boolean => IMAGE_NAME.test(path);

/** What the first bytes say: a JPEG, PNG or WebP file begins with its signature. */
export function sniff(head: Uint8Array): 'jpeg' | 'png' | 'webp' | null {
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'jpeg';
  if (head.length >= 8 && Buffer.from(head.subarray(0, 8)).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'png';
  if (head.length >= 12 && Buffer.from(head.subarray(0, 4)).toString('latin1') === 'RIFF' && Buffer.from(head.subarray(8, 12)).toString('latin1') === 'WEBP') return 'webp';
  return null;
}

export const isLfsPointer = (size: number, head: Uint8Array): boolean =>
  size <= MAX_LFS_POINTER_BYTES && head.length >= LFS_POINTER.length && Buffer.from(head.subarray(0, LFS_POINTER.length)).equals(LFS_POINTER);

const depthOf = (path: string) => path.split('/').length - 1;
const tooDeep = (entry: SourceEntry) => depthOf(entry.path) > MAX_FOLDER_DEPTH;
const tooDeepItem = (entry: SourceEntry) => skipped(entry, 'too_deep', `deeper than ${MAX_FOLDER_DEPTH} folders`);

/** A skipped candidate's report line. */
export function skipped(entry: SourceEntry, code: string, reason: string): ScanItem {
  return { path: entry.path, status: 'skipped', reason, code, bytes: entry.size, sha256: null, format: null, signals: [], value: null, provenance: null, fingerprint: null };
}

/**
 * What the listing alone decides: `other` (not a candidate), a skipped
 * candidate, or `read` (its first bytes are needed).
 */
export function classifyListed(entry: SourceEntry): { kind: 'other' } | { kind: 'skip'; item: ScanItem } | { kind: 'read' } {
  const named = hasImageName(entry.path);
  if (entry.kind === 'submodule') return { kind: 'other' };
  if (entry.kind === 'symlink') return named ? { kind: 'skip', item: skipped(entry, 'symlink', 'a symbolic link (links are not followed)') } : { kind: 'other' };
  // Deeper than the limit: not checked, but a candidate all the same (one without an image's name is told by its first bytes).
  if (named && tooDeep(entry)) return { kind: 'skip', item: tooDeepItem(entry) };
  return { kind: 'read' };
}

/** What the first bytes decide, for a file the listing left open. */
export function classifyHead(entry: SourceEntry, head: Uint8Array): { kind: 'other' } | { kind: 'skip'; item: ScanItem } | { kind: 'check' } {
  const named = hasImageName(entry.path);
  if (isLfsPointer(entry.size, head)) {
    return named ? { kind: 'skip', item: skipped(entry, 'lfs_pointer', 'a Git LFS pointer (the image itself is not fetched)') } : { kind: 'other' };
  }
  if (!named && sniff(head) === null) return { kind: 'other' };
  if (tooDeep(entry)) return { kind: 'skip', item: tooDeepItem(entry) };
  if (entry.size > MAX_SCAN_FILE_BYTES) return { kind: 'skip', item: skipped(entry, 'too_large', `${entry.size} bytes, over the ${MAX_SCAN_FILE_BYTES}-byte limit of a check`) };
  return { kind: 'check' };
}
