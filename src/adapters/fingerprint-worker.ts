/**
 * Runs in the fingerprint pool's worker threads: detection is a few to a few
 * tens of milliseconds of arithmetic on the reduced copy (decoding the file,
 * done before, costs more) and embedding over half a second for 12
 * megapixels, neither of which must hold up the event loop that serves
 * every other request. The CLI calls the same functions in its own thread
 * (src/cli/fingerprint-for-cli.ts).
 */
import { createHash } from 'node:crypto';
import { move, transferableSymbol, valueSymbol } from 'piscina';
import type { DetectTask, EmbedOutcome, EmbedTask } from '../app/fingerprint.js';
import type { FingerprintCheck } from '../app/verify-image.js';
import { deriveFingerprintKey, detectFingerprint, FingerprintRefusedError, markStoredPixels, type FingerprintKey } from '../core/fingerprint/index.js';

/** Derived keys, by version and secret digest: deriving builds the key's whole tile, which costs more than a lookup. */
const derived = new Map<string, FingerprintKey>();

function keyFor(version: number, secret: Uint8Array): FingerprintKey {
  const id = `${version}:${createHash('sha256').update(secret).digest('base64')}`;
  let key = derived.get(id);
  if (!key) {
    key = deriveFingerprintKey(secret, String(version));
    derived.set(id, key);
  }
  return key;
}

export default function detect(task: DetectTask): FingerprintCheck {
  const keys = task.secrets.map((s) => keyFor(s.version, s.secret));
  const result = detectFingerprint({ data: task.data, width: task.width, height: task.height, channels: task.channels }, keys);
  // The version found goes back too (a marking records it), never into a verify answer (app/fingerprint.ts).
  return { present: result.present, confidence: result.confidence, blocks: result.blocks, ...(result.present && result.keyVersion !== undefined ? { keyVersion: Number(result.keyVersion) } : {}) };
}

/**
 * A refusal comes back as a value: an error's class does not survive the
 * trip between threads. Every FingerprintRefusedError message starts "The
 * image is ..." (too small, too elongated, too hard to mark within the
 * quality bound), which reads "it is ..." after the app's "This image
 * cannot be fingerprinted: ".
 */
export function embed(task: EmbedTask): EmbedOutcome {
  const stored = { data: task.data, width: task.width, height: task.height, channels: task.channels };
  try {
    return { marked: markStoredPixels(stored, task.orientation, keyFor(task.secret.version, task.secret.secret), task.grey) };
  } catch (error) {
    if (error instanceof FingerprintRefusedError) return { refused: error.message.replace(/^The image is /, 'it is ') };
    throw error;
  }
}

/**
 * `embed` for the pool: the marked pixels (as large as the image, 300 MB at
 * 100 megapixels) go back to the main thread transferred, not copied.
 */
export function embedAndTransfer(task: EmbedTask): EmbedOutcome {
  const outcome = embed(task);
  if ('refused' in outcome) return outcome;
  const moved = move({ [transferableSymbol]: outcome.marked.data.buffer, [valueSymbol]: outcome });
  return moved as unknown as EmbedOutcome;
}

/** CPU-seconds this thread spent since `started` (process.threadCpuUsage). */
function cpuSince(started: NodeJS.CpuUsage): number {
  const used = process.threadCpuUsage(started);
  return (used.user + used.system) / 1e6;
}

/** `detect` as the server's pool runs it: with the CPU time it took, which the call is charged (app/work-meter.ts). */
export function detectMetered(task: DetectTask): { value: FingerprintCheck; cpu: number } {
  const started = process.threadCpuUsage();
  const value = detect(task);
  return { value, cpu: cpuSince(started) };
}

/** `embedAndTransfer` as the server's pool runs it: with the CPU time it took. */
export function embedMetered(task: EmbedTask): { value: EmbedOutcome; cpu: number } {
  const started = process.threadCpuUsage();
  const outcome = embed(task);
  const answer = { value: outcome, cpu: cpuSince(started) };
  if ('refused' in outcome) return answer;
  return move({ [transferableSymbol]: outcome.marked.data.buffer, [valueSymbol]: answer }) as unknown as { value: EmbedOutcome; cpu: number };
}
