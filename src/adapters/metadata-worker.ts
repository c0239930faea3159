/**
 * Runs in the worker pool's threads: protect and inspect of a file whose
 * XMP is too long to read on the server's event loop (app/off-loop.ts).
 * The signing and checking keys come with the task (KeyObjects clone across
 * threads); a typed refusal comes back as its code and message, since an
 * error's class does not survive the trip; the marked bytes come back
 * transferred, not copied. Each answer says how much CPU time it took.
 */
import { isMarkedAsUntransferable } from 'node:worker_threads';
import { move, transferableSymbol, valueSymbol } from 'piscina';
import type { InspectTask, Inspection, ProtectTask } from '../app/off-loop.js';
import { protect, type ProtectResult } from '../app/protect-image.js';
import { provenanceFromSnapshot } from '../app/provenance.js';
import { inspect } from '../app/verify-image.js';
import { isOptmarkError, type ErrorCode } from '../errors.js';

/** What a metadata task answers: its value, or the typed refusal; and the CPU-seconds this thread spent. */
export type MetadataAnswer<T> = { readonly value: T; readonly cpu: number } | { readonly refused: { readonly code: ErrorCode; readonly message: string }; readonly cpu: number };

function measured<T>(work: () => T): MetadataAnswer<T> {
  const started = process.threadCpuUsage();
  const cpu = () => {
    const used = process.threadCpuUsage(started);
    return (used.user + used.system) / 1e6;
  };
  try {
    const value = work();
    return { value, cpu: cpu() };
  } catch (error) {
    if (isOptmarkError(error)) return { refused: { code: error.code, message: error.message }, cpu: cpu() };
    throw error;
  }
}

export function protectTask(task: ProtectTask): MetadataAnswer<ProtectResult> {
  const signer = task.signing && provenanceFromSnapshot(task.signing).signer;
  const answer = measured(() => protect(task.bytes, { value: task.value, keepExisting: task.keepExisting, otherConstraints: task.otherConstraints, filename: task.filename, maxImagePixels: task.maxImagePixels, signer }));
  if (!('value' in answer)) return answer;
  // The marked file (as large as the upload) goes back without a copy, where Node lets its memory go.
  const { buffer } = answer.value.bytes;
  if (!(buffer instanceof ArrayBuffer) || isMarkedAsUntransferable(buffer)) return answer;
  return move({ [transferableSymbol]: buffer, [valueSymbol]: answer }) as unknown as MetadataAnswer<ProtectResult>;
}

export function inspectTask(task: InspectTask): MetadataAnswer<Inspection> {
  const provenance = task.checking && provenanceFromSnapshot(task.checking);
  return measured(() => inspect(task.bytes, { maxImagePixels: task.maxImagePixels, provenance }));
}
