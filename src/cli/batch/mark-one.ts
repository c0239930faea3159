/**
 * One file of `optmark protect`, wherever it is marked: is it done already
 * (its output is its marked copy), is a file in the way, should it be left
 * as it is (--skip-marked); else mark it and write the copy. Run in the main
 * thread when a server marks (or with --fingerprint), and in the worker
 * threads when this machine does (mark-worker.ts).
 */
import { readFile, realpath } from 'node:fs/promises';
import { resolve } from 'node:path';
import { markedCopyOf, optOutOf } from '../../app/marked-copy.js';
import { CliError } from '../files.js';
import { writeAtomically, type Bytes } from './write.js';

export interface MarkTask {
  readonly file: string;
  /**
   * Where its marked copy goes, as planned before marking: the copy is
   * written there, whatever name the answer suggests (a server may clean a
   * name otherwise, and a run done again looks for the copy here).
   */
  readonly output: string;
  readonly inPlace: boolean;
  readonly overwrite: boolean;
  readonly fingerprint: boolean;
  readonly skipMarked: boolean;
  readonly value: string | undefined;
  /** The plus:OtherConstraints text written with DMI-PROHIBITED-SEECONSTRAINT. */
  readonly otherConstraints?: string;
}

/** What marking one file gave, wherever it was marked. */
export interface Marked {
  readonly bytes: Bytes;
  readonly filename: string;
  readonly value: string;
  readonly alreadyCarried: boolean;
  readonly changed: boolean;
  readonly c2paInvalidated: boolean;
  /** The fields --json prints. */
  readonly json: Record<string, unknown>;
  readonly requestId?: string;
}

export type MarkOutcome =
  | { readonly kind: 'done-before'; readonly output: string; readonly value: string }
  | { readonly kind: 'carries'; readonly value: string }
  | { readonly kind: 'marked'; readonly output: string; readonly value: string; readonly alreadyCarried: boolean; readonly changed: boolean; readonly c2paInvalidated: boolean; readonly json: Record<string, unknown>; readonly requestId?: string };

/** The file access of one file's work: asynchronous in the main thread, synchronous in a worker (whose thread has nothing else to do). */
export interface FileAccess {
  /** The input's bytes (CliError unreadable_file when it cannot be read). */
  read(path: string): Promise<Uint8Array>;
  /** A file's bytes, or undefined when there is none. */
  existing(path: string): Promise<Uint8Array | undefined>;
  write(path: string, bytes: Bytes, options: { replace: boolean }): Promise<void>;
}

export const ASYNC_ACCESS = (read: (path: string) => Promise<Uint8Array>): FileAccess => ({
  read,
  existing: (path) => readFile(path).catch(() => undefined),
  write: writeAtomically,
});

export async function markOne(task: MarkTask, io: FileAccess, mark: (bytes: Uint8Array) => Promise<Marked>): Promise<MarkOutcome> {
  const { file, inPlace } = task;
  const bytes = await io.read(file);
  const sameFile = resolve(task.output) === resolve(file);
  // Done before? The output there is this input's marked copy (in place: the file is its own).
  // (Not with --fingerprint: its copy's pixels, so its content digest, are not the input's.)
  if (task.fingerprint && !inPlace && !sameFile) {
    if (!task.overwrite && (await io.existing(task.output)) !== undefined) throw new CliError(`${task.output} is in the way; pass --overwrite to replace it`, 'output_exists');
  } else {
    // A file that is its own output (photo-optout.jpg) is done when it is already its own marked copy:
    // a server would be paid to answer with the same bytes.
    const existing = inPlace || sameFile ? bytes : await io.existing(task.output);
    if (existing !== undefined) {
      const copy = markedCopyOf(existing, bytes, task.value, task.otherConstraints);
      if (copy) return { kind: 'done-before', output: task.output, value: copy.value };
      if (!inPlace && !sameFile && !task.overwrite) throw new CliError(`${task.output} is in the way and is not this file's marked copy; pass --overwrite to replace it`, 'output_exists');
    }
  }
  if (task.skipMarked) {
    const carried = optOutOf(bytes);
    if (carried !== undefined) return { kind: 'carries', value: carried };
  }
  const result = await mark(bytes);
  const output = inPlace ? file : task.output;
  if (resolve(output) === resolve(file) && !inPlace) {
    if (result.changed || task.fingerprint) throw new CliError(`refusing to overwrite ${file} with its marked copy; pass --out DIR or --in-place`, 'would_overwrite_input');
  } else if (result.changed || !inPlace) {
    // In place, a symbolic link's file is marked and the link kept: replacing the
    // link with the marked copy left the file it points to unmarked.
    await io.write(inPlace ? await realpath(file) : output, result.bytes, { replace: inPlace || task.overwrite });
  }
  const { bytes: _, filename: __, ...rest } = result;
  return { kind: 'marked', output, ...rest };
}
