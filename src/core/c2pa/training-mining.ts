/**
 * C2PA and CAWG opt-out signals: find the file's C2PA manifest store (JPEG
 * APP11 JUMBF, PNG `caBX`, WebP `C2PA` chunk) and read the active manifest's
 * training-and-data-mining assertion, in its CAWG form (`cawg.training-mining`,
 * current) or its C2PA 1.x form (`c2pa.training-mining`). An entry for AI
 * training, generative AI training or data mining that says `notAllowed` or
 * `constrained` (which C2PA reads as notAllowed) is a signal.
 *
 * The manifest store is parsed with @trustnxt/c2pa-ts. Its signatures are
 * not checked and nothing here says a manifest is trusted: there is no trust
 * list. A store that cannot be parsed, or is deeper or larger than any real
 * one (jumbf-shape.ts), is ignored, never an error.
 */
import { JPEG } from '@trustnxt/c2pa-ts/asset';
import { SuperBox } from '@trustnxt/c2pa-ts/jumbf';
import { ManifestStore, TrainingAndDataMiningAssertion } from '@trustnxt/c2pa-ts/manifest';
import type { ImageFormat } from '../../errors.js';
import { startsWithAt } from '../bytes/view.js';
import type { Block } from '../formats/handler.js';
import { SIGNAL } from '../signals.js';
import { jumbfWithinBounds } from './jumbf-shape.js';

export type C2paSignal = typeof SIGNAL.cawgTrainingMining | typeof SIGNAL.c2paTrainingMining;

/** Larger stores are not parsed (a 25 MB image has no need of one). */
const MAX_STORE_BYTES = 16 * 1024 * 1024;
const PROHIBITING = new Set(['notAllowed', 'constrained']);
const USES = /^(c2pa|cawg)\.(ai_training|ai_generative_training|data_mining)$/;

/** Whether the file carries a C2PA manifest store, judged from its blocks alone. */
export function hasManifestStore(bytes: Uint8Array, blocks: readonly Block[]): boolean {
  return blocks.some(
    (b) => (b.type === 'APP11' && startsWithAt(bytes, b.offset + 4, 'JP')) || b.type === 'caBX' || b.type === 'C2PA',
  );
}

/** The manifest store's JUMBF bytes, or undefined. */
export function manifestStore(format: ImageFormat, bytes: Uint8Array, blocks: readonly Block[]): Uint8Array | undefined {
  if (!hasManifestStore(bytes, blocks)) return undefined;
  try {
    if (format === 'jpeg') return new JPEG(bytes).getManifestJUMBF(); // APP11 segments to reassemble
    const block = blocks.find((b) => b.type === 'caBX' || b.type === 'C2PA')!;
    const size = format === 'png' ? block.length - 12 : new DataView(bytes.buffer, bytes.byteOffset).getUint32(block.offset + 4, true);
    return bytes.subarray(block.offset + 8, block.offset + 8 + size);
  } catch {
    return undefined;
  }
}

/** The training-and-data-mining signals of the active manifest; none when the store cannot be read. */
export function trainingMiningSignals(jumbf: Uint8Array | undefined): C2paSignal[] {
  if (!jumbf || jumbf.length > MAX_STORE_BYTES || !jumbfWithinBounds(jumbf)) return [];
  try {
    const active = ManifestStore.read(SuperBox.fromBuffer(jumbf as Uint8Array<ArrayBuffer>)).getActiveManifest();
    const found = new Set<C2paSignal>();
    for (const assertion of active?.assertions?.assertions ?? []) {
      if (!(assertion instanceof TrainingAndDataMiningAssertion)) continue;
      const prohibits = Object.entries(assertion.entries ?? {}).some(([use, entry]) => USES.test(use) && PROHIBITING.has(String(entry?.choice)));
      if (prohibits) found.add(assertion.isCAWG ? SIGNAL.cawgTrainingMining : SIGNAL.c2paTrainingMining);
    }
    return [...found];
  } catch {
    return [];
  }
}
