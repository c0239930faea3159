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
import type * as Asset from '@trustnxt/c2pa-ts/asset';
import type * as Jumbf from '@trustnxt/c2pa-ts/jumbf';
import type * as Manifest from '@trustnxt/c2pa-ts/manifest';
import type { ImageFormat } from '../../errors.js';
import { startsWithAt } from '../bytes/view.js';
import type { Block } from '../formats/handler.js';
import { SIGNAL } from '../signals.js';
import { jumbfWithinBounds } from './jumbf-shape.js';

export type C2paSignal = typeof SIGNAL.cawgTrainingMining | typeof SIGNAL.c2paTrainingMining;

interface C2paTs {
  readonly JPEG: typeof Asset.JPEG;
  readonly SuperBox: typeof Jumbf.SuperBox;
  readonly ManifestStore: typeof Manifest.ManifestStore;
  readonly TrainingAndDataMiningAssertion: typeof Manifest.TrainingAndDataMiningAssertion;
}

let c2paTs: C2paTs | undefined;

/**
 * @trustnxt/c2pa-ts, loaded when the first file that carries a manifest
 * store is read: loading it takes about 0.2 s, which every start of the
 * command line would otherwise pay, for the few files that have one. Loaded
 * synchronously (require of its ES modules), so reading stays a plain call.
 */
function c2pa(): C2paTs {
  if (!c2paTs) {
    const load = process.getBuiltinModule('node:module').createRequire(import.meta.url);
    const { fileURLToPath } = process.getBuiltinModule('node:url');
    const from = <T>(specifier: string) => load(fileURLToPath(import.meta.resolve(specifier))) as T;
    const manifest = from<typeof Manifest>('@trustnxt/c2pa-ts/manifest');
    c2paTs = {
      JPEG: from<typeof Asset>('@trustnxt/c2pa-ts/asset').JPEG,
      SuperBox: from<typeof Jumbf>('@trustnxt/c2pa-ts/jumbf').SuperBox,
      ManifestStore: manifest.ManifestStore,
      TrainingAndDataMiningAssertion: manifest.TrainingAndDataMiningAssertion,
    };
  }
  return c2paTs;
}

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
    if (format === 'jpeg') return new (c2pa().JPEG)(bytes).getManifestJUMBF(); // APP11 segments to reassemble
    const block = blocks.find((b) => b.type === 'caBX' || b.type === 'C2PA')!;
    const size = format === 'png' ? block.length - 12 : new DataView(bytes.buffer, bytes.byteOffset).getUint32(block.offset + 4, true);
    return bytes.subarray(block.offset + 8, block.offset + 8 + size);
  } catch {
    return undefined;
  }
}

/** One training-and-data-mining assertion of the active manifest, as it reads. */
export interface TrainingMiningAssertion {
  /** `cawg.training-mining` (the current form) or `c2pa.training-mining` (C2PA 1.x). */
  readonly assertion: 'cawg.training-mining' | 'c2pa.training-mining';
  /** Each use the assertion names (`cawg.ai_training`, ...) and its choice (`allowed`, `notAllowed`, `constrained`). */
  readonly entries: Readonly<Record<string, string>>;
  /** The signal it makes, or null when no AI-training or data-mining entry prohibits. */
  readonly signal: C2paSignal | null;
}

/** What a file's C2PA manifest store says about training and data mining. Its signature is not checked. */
export interface C2paReading {
  /** The file carries a manifest store. */
  readonly present: boolean;
  /** The store could be parsed (false when there is none, or it is hostile or broken: then it is ignored). */
  readonly readable: boolean;
  readonly trainingMining: readonly TrainingMiningAssertion[];
}

export const NO_C2PA: C2paReading = { present: false, readable: false, trainingMining: [] };

/** The training-and-data-mining assertions of the active manifest; none, unreadable, when the store cannot be read. */
export function readTrainingMining(jumbf: Uint8Array | undefined): C2paReading {
  const unreadable: C2paReading = { present: true, readable: false, trainingMining: [] };
  if (!jumbf || jumbf.length > MAX_STORE_BYTES || !jumbfWithinBounds(jumbf)) return unreadable;
  try {
    const { ManifestStore, SuperBox, TrainingAndDataMiningAssertion } = c2pa();
    const active = ManifestStore.read(SuperBox.fromBuffer(jumbf as Uint8Array<ArrayBuffer>)).getActiveManifest();
    const trainingMining: TrainingMiningAssertion[] = [];
    for (const assertion of active?.assertions?.assertions ?? []) {
      if (!(assertion instanceof TrainingAndDataMiningAssertion)) continue;
      const entries = Object.fromEntries(Object.entries(assertion.entries ?? {}).map(([use, entry]) => [use, String(entry?.choice)]));
      const prohibits = Object.entries(entries).some(([use, choice]) => USES.test(use) && PROHIBITING.has(choice));
      const signal = prohibits ? (assertion.isCAWG ? SIGNAL.cawgTrainingMining : SIGNAL.c2paTrainingMining) : null;
      trainingMining.push({ assertion: assertion.isCAWG ? 'cawg.training-mining' : 'c2pa.training-mining', entries, signal });
    }
    return { present: true, readable: true, trainingMining };
  } catch {
    return unreadable;
  }
}

/** The training-and-data-mining signals a reading makes, each once. */
export function trainingMiningSignals(reading: C2paReading): C2paSignal[] {
  return [...new Set(reading.trainingMining.flatMap((a) => (a.signal ? [a.signal] : [])))];
}
