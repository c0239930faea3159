/**
 * Runs in the fingerprint pool's worker threads: detection is tens to
 * hundreds of milliseconds of arithmetic, which must not hold up the event
 * loop that serves every other request.
 */
import { createHash } from 'node:crypto';
import type { DetectTask } from '../app/fingerprint.js';
import type { FingerprintCheck } from '../app/verify-image.js';
import { deriveFingerprintKey, detectFingerprint, type FingerprintKey } from '../core/fingerprint/index.js';

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
  return { present: result.present, confidence: result.confidence, blocks: result.blocks };
}
