/**
 * The files a protect or verify run works on: the files named, and the
 * images in the folders named (their subfolders too with --recursive). In a
 * folder, an image is a file whose name ends in .jpg, .jpeg, .jpe, .png or
 * .webp, or whose first bytes are those of a JPEG, PNG or WebP; anything
 * else is skipped and counted, and so are symbolic links (never followed)
 * and the temporary files of an interrupted run. Protect's --out folder is
 * not entered: its copies are not inputs.
 */
import { open, readdir, stat } from 'node:fs/promises';
import { basename, join, relative, resolve } from 'node:path';
import { pathOf } from '../../core/bytes/path-text.js';

export interface Input {
  /** The path as given or found. */
  readonly path: string;
  /** For a file found in a folder: its path relative to that folder, whose structure an output folder keeps. */
  readonly relative: string | undefined;
}

export interface Inputs {
  readonly files: Input[];
  /** Files in the folders that are not images (or are links, or an interrupted run's temporary files). */
  readonly skipped: string[];
  /** Whether a folder was named. */
  readonly folders: boolean;
  /** Folders that could not be read (their files are not known), each as a failed file: the rest is still done. */
  readonly unreadable: ReadonlyArray<{ readonly path: string; readonly error: string; readonly code: 'unreadable_file' }>;
  /** Subfolders not entered, without --recursive (said, so that a run over nothing is not taken for a clean one). */
  readonly notEntered: number;
}

const IMAGE_NAME = /\.(jpe?g|jpe|png|webp)$/i;
/** The temporary files the batch writer makes (write.ts). */
export const TEMPORARY_NAME = /^\.optmark-.*\.tmp$/;

/** JPEG, PNG or WebP by the first 12 bytes. */
export function looksLikeImage(head: Uint8Array): boolean {
  if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return true;
  if (head.length >= 8 && [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a].every((b, i) => head[i] === b)) return true;
  return head.length >= 12 && String.fromCharCode(...head.subarray(0, 4)) === 'RIFF' && String.fromCharCode(...head.subarray(8, 12)) === 'WEBP';
}

async function readHead(path: string): Promise<Uint8Array> {
  const file = await open(path, 'r');
  try {
    const head = new Uint8Array(12);
    const { bytesRead } = await file.read(head, 0, 12, 0);
    return head.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}

export interface CollectOptions {
  readonly recursive: boolean;
  /** A folder not entered (resolved): protect's --out, whose copies are not inputs. */
  readonly leaveOut?: string;
}

/** What a walk found besides the files. */
interface Walked {
  notEntered: number;
  readonly unreadable: Array<Inputs['unreadable'][number]>;
}

export async function collectInputs(args: readonly string[], options: CollectOptions): Promise<Inputs> {
  const files: Input[] = [];
  const skipped: string[] = [];
  const walked: Walked = { notEntered: 0, unreadable: [] };
  let folders = false;
  for (const arg of args) {
    let info;
    try {
      info = await stat(arg);
    } catch {
      // Reported as that file's failure (no such file, no permission).
      files.push({ path: arg, relative: undefined });
      continue;
    }
    if (!info.isDirectory()) {
      files.push({ path: arg, relative: undefined });
      continue;
    }
    folders = true;
    await walk(arg, arg, options, files, skipped, walked);
  }
  return { files, skipped, folders, notEntered: walked.notEntered, unreadable: walked.unreadable };
}

async function walk(root: string, dir: string, options: CollectOptions, files: Input[], skipped: string[], walked: Walked): Promise<void> {
  let listed;
  try {
    listed = await readdir(dir, { withFileTypes: true, encoding: 'buffer' });
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'EACCES' ? 'permission denied' : (error as Error).message;
    walked.unreadable.push({ path: dir, error: `cannot read the folder: ${reason}`, code: 'unreadable_file' });
    return;
  }
  const entries = [];
  for (const entry of listed) {
    // A name that is not UTF-8 (an old Latin-1 one) cannot be given as a path in text: said, not "no such file".
    const { path: name, pathBytes } = pathOf(entry.name);
    if (pathBytes) walked.unreadable.push({ path: join(dir, name), error: 'its name is not UTF-8: rename it in UTF-8 to take it (convmv -f latin1 -t utf8 does)', code: 'unreadable_file' });
    else entries.push({ name, isDirectory: () => entry.isDirectory(), isFile: () => entry.isFile() });
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (resolve(path) === options.leaveOut) continue;
      if (options.recursive) await walk(root, path, options, files, skipped, walked);
      else walked.notEntered++;
      continue;
    }
    if (!entry.isFile() || TEMPORARY_NAME.test(entry.name)) {
      skipped.push(path);
      continue;
    }
    if (IMAGE_NAME.test(entry.name) || looksLikeImage(await readHead(path).catch(() => new Uint8Array(0)))) files.push({ path, relative: relative(root, path) });
    else skipped.push(path);
  }
}

/** The extension an image of these first bytes gets (jpg, png, webp), else the one its name has. */
export async function extensionOf(path: string): Promise<string | undefined> {
  const head = await readHead(path).catch(() => new Uint8Array(0));
  if (head[0] === 0xff && head[1] === 0xd8) return 'jpg';
  if (head[0] === 0x89 && head[1] === 0x50) return 'png';
  if (head.length >= 12 && String.fromCharCode(...head.subarray(8, 12)) === 'WEBP') return 'webp';
  const ext = /\.([^.]+)$/.exec(basename(path))?.[1]?.toLowerCase();
  return ext === 'jpeg' || ext === 'jpe' ? 'jpg' : ext;
}

/** The line that says how many subfolders were not entered, or undefined when none was left out. */
export function notEnteredNote(inputs: Inputs): string | undefined {
  return inputs.notEntered > 0 ? `optmark: ${inputs.notEntered} subfolder(s) not entered: --recursive (-r) enters them` : undefined;
}
