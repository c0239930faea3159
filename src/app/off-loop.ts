/**
 * protect and verify read a file's XMP on the thread that calls them; most
 * packets take well under a millisecond, but one of 8 MiB of markup takes
 * about a second, during which a server's event loop answers nothing else
 * (eight such verifies made /healthz take 5 to 10 s). The server therefore
 * runs a file whose XMP is longer than INLINE_XMP_CHARACTERS on its worker
 * pool (src/adapters/metadata-worker.ts), within METADATA_BUDGET_MS, and
 * keeps the rest here, where it costs nothing extra. The file's container
 * is parsed here either way (to know how long its XMP is); that walk is
 * linear and cheap.
 */
import type { ProtectResult } from './protect-image.js';
import type { ProvenanceSnapshot } from './provenance.js';
import type { VerifyDetails, VerifyResult } from './verify-image.js';

/**
 * XMP text (characters of standard packets, bytes of Extended XMP) read on
 * the calling thread at most: 64 KiB of the densest markup we know parses in
 * a few milliseconds (a JPEG's standard packet, at most 65,502 bytes, always
 * stays here).
 */
export const INLINE_XMP_CHARACTERS = 64 * 1024;
/** Time a file's metadata may take on the worker pool; past it the task is stopped and the file refused as invalid_xmp. */
export const METADATA_BUDGET_MS = 5000;

export interface ProtectTask {
  readonly bytes: Uint8Array;
  readonly value: string | undefined;
  readonly keepExisting: boolean | undefined;
  readonly otherConstraints: string | undefined;
  readonly filename: string | undefined;
  readonly maxImagePixels: number | undefined;
  /** The keys to sign with, when the call signs. */
  readonly signing: ProvenanceSnapshot | undefined;
}

export interface InspectTask {
  readonly bytes: Uint8Array;
  readonly maxImagePixels: number | undefined;
  /** The keys to check a tag with. */
  readonly checking: ProvenanceSnapshot | undefined;
}

export interface Inspection {
  readonly result: VerifyResult;
  readonly details: VerifyDetails;
}

/** Where a file with long XMP is read and written (the worker pool); each rejects with the task's own typed error. */
export interface MetadataWorkers {
  protect(task: ProtectTask, signal?: AbortSignal): Promise<ProtectResult>;
  inspect(task: InspectTask, signal?: AbortSignal): Promise<Inspection>;
}

/** How a server runs protect and inspect: with its worker pool (without one, everything runs here), for a call that may be given up (client gone, deadline). */
export interface OffLoop {
  readonly workers: MetadataWorkers | undefined;
  readonly signal?: AbortSignal;
}
