/**
 * What must hold for any input, however broken. protect and verify either
 * succeed or refuse with a client error code (anything else would be a 500),
 * within a time bound; verify and protect agree on what is wrong with a file;
 * and a protected file reads back opted out with the value asked for, stays
 * so when protected again, keeps every non-XMP byte of the input (its
 * content digest, so a signed tag stays valid) and, whenever the input
 * decodes (up to 4 megapixels), decodes to the same pixels. With a
 * pixel path given (the long fuzz), verify is also run as the server runs it,
 * with the fingerprint check that decodes pixels (src/adapters/pixels.ts).
 * `checkResidentMemory` is the per-input memory bound, checked by the callers
 * after each input.
 *
 * Free of test-runner imports: the long fuzz runs it under plain tsx.
 */
import { createHash, generateKeyPairSync } from 'node:crypto';
import sharp from 'sharp';
import type { Fingerprinting } from '../../src/app/fingerprint.js';
import { inspectWithFingerprint } from '../../src/app/verify-image.js';
import { declaredDimensions, jpegFrameHeaderAt } from '../../src/core/formats/dimensions.js';
import type { ContainerHandler } from '../../src/core/formats/handler.js';
import { uriFor } from '../../src/core/xmp/vocabulary.js';
import { createProvenance, inspect, OptmarkError, sniff, PROHIBITED_CODES, protect, verify, type ErrorCode, type ProhibitedCode } from '../../src/index.js';

/** The codes a bad image may get: all 4xx. image_dimensions_too_large is new and may not be raised yet. */
const CLIENT_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'corrupt_image',
  'invalid_xmp',
  'ambiguous_xmp',
  'conflicting_xmp',
  'unsupported_image_format',
  'empty_image',
  'image_dimensions_too_large',
]);
/** verify reads the first of two packets, and a packet that repeats a property, instead of refusing (docs/formats.md). */
const VERIFY_CODES: ReadonlySet<ErrorCode> = new Set([...CLIENT_CODES].filter((c) => c !== 'ambiguous_xmp' && c !== 'conflicting_xmp'));
/** What protect may refuse in a file verify reads: it has to pick a packet or one of a property's values, or make the merged packet fit. */
const PROTECT_ONLY: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['ambiguous_xmp', 'conflicting_xmp', 'invalid_xmp']);
const NONE: ReadonlySet<ErrorCode> = new Set();

/** Far above a normal call (milliseconds), far below a hang or a quadratic blow-up. */
const CALL_BUDGET_MS = 2000;
/** Pixel comparison only for images this small: the decode, not the property, would dominate. */
const MAX_DECODE_PIXELS = 4_000_000;
// Every input is new: libvips' operation cache would only hold memory across thousands of them.
sharp.cache(false);

export class PropertyViolation extends Error {}
/**
 * The process's resident size over its bound after an input. Not shrunk:
 * resident memory does not come back down when the next candidate runs (the
 * allocator keeps what it got), so every candidate would "fail" alike.
 */
export class MemoryBoundViolation extends PropertyViolation {}

const MB = 1024 * 1024;

/**
 * The bounds on the process's resident size after each input. Measured
 * after every input: at most 250 MB in the fuzz step's test process (a
 * vitest worker; about 200 MB of it there before the first input: vitest,
 * sharp, the code, the seeds), at most 445 MB in the long run's child (XMP
 * up to 2 MB, so a few megabytes of strings and buffers per input, and
 * every input through the pixel decoder too; about 150 MB before the first
 * input). Each bound is about twice the highest seen, room for the garbage
 * collector's timing, and still crossed within a few dozen inputs by an
 * input that keeps its buffers (a 4-megapixel decode is 16 MB, a 2 MB
 * packet's copies a few tens of MB).
 */
export const MAX_RSS_AFTER_INPUT = 512 * MB;
export const MAX_RSS_AFTER_INPUT_LONG_RUN = 896 * MB;

/**
 * The per-input memory bound: throws MemoryBoundViolation when the process's
 * resident size is over `boundBytes` now, after an input (callers call it
 * after each one). Reading it costs a few microseconds (one /proc read).
 */
export function checkResidentMemory(boundBytes: number, rss = process.memoryUsage.rss()): number {
  if (rss > boundBytes) throw new MemoryBoundViolation(`resident memory ${(rss / MB).toFixed(0)} MB after this input (bound ${(boundBytes / MB).toFixed(0)} MB)`);
  return rss;
}

const KID = 'fuzz';
const keyPair = generateKeyPairSync('ed25519');
const provenance = createProvenance({
  keys: { active: { kid: KID, privateKey: keyPair.privateKey }, publicKey: (kid) => (kid === KID ? keyPair.publicKey : undefined) },
  issuer: () => 'https://fuzz.invalid',
  // A fixed clock makes signing deterministic, so protecting twice can give the same bytes.
  clock: { now: () => new Date(Date.UTC(2025, 0, 1)) },
});

export interface CheckOptions {
  readonly sign?: boolean;
  /** Index into PROHIBITED_CODES. */
  readonly value?: number;
  readonly budgetMs?: number;
  /**
   * Also verify as the server does, with the fingerprint check that decodes
   * pixels (src/app/verify-image.ts inspectWithFingerprint): the decoder path
   * of /api/v1/verify, run in process.
   */
  readonly pixelPath?: Fingerprinting;
}

export interface CheckReport {
  readonly verify: 'ok' | ErrorCode;
  readonly protect: 'ok' | ErrorCode;
  /** Protecting the output again gave the same bytes (undefined when protect refused). */
  readonly idempotent?: boolean;
  /** The input decoded, so the output's pixels were compared with it. */
  readonly pixelsCompared: boolean;
  /** With a pixel path: blocks the fingerprint check examined (0: not decoded, too small, or refused by the decoder). */
  readonly fingerprintBlocks?: number;
  readonly slowestMs: number;
}

type Outcome<T> = { ok: true; value: T } | { ok: false; code: ErrorCode };

function fail(message: string, cause?: unknown): never {
  throw new PropertyViolation(message, cause === undefined ? undefined : { cause });
}

function describeError(error: unknown): string {
  return error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
}

export async function checkInput(bytes: Uint8Array, options: CheckOptions = {}): Promise<CheckReport> {
  const budget = options.budgetMs ?? CALL_BUDGET_MS;
  let slowestMs = 0;
  /** A call's error: a typed client error it may give becomes an outcome; anything else fails the property. */
  function refused(what: string, error: unknown, allowed: ReadonlySet<ErrorCode>): Outcome<never> {
    if (!(error instanceof OptmarkError) || !allowed.has(error.code)) fail(`${what} threw ${describeError(error)}`, error);
    return { ok: false, code: error.code };
  }
  /** The time bound, on a call that started at `started`. */
  function clocked<T>(what: string, started: number, outcome: Outcome<T>): Outcome<T> {
    const ms = performance.now() - started;
    slowestMs = Math.max(slowestMs, ms);
    if (ms > budget) fail(`${what} took ${ms.toFixed(0)} ms (bound ${budget} ms)`);
    return outcome;
  }
  function timed<T>(what: string, call: () => T, allowed: ReadonlySet<ErrorCode>): Outcome<T> {
    const started = performance.now();
    let outcome: Outcome<T>;
    try {
      outcome = { ok: true, value: call() };
    } catch (error) {
      outcome = refused(what, error, allowed);
    }
    return clocked(what, started, outcome);
  }
  async function timedAsync<T>(what: string, call: () => Promise<T>, allowed: ReadonlySet<ErrorCode>): Promise<Outcome<T>> {
    const started = performance.now();
    let outcome: Outcome<T>;
    try {
      outcome = { ok: true, value: await call() };
    } catch (error) {
      outcome = refused(what, error, allowed);
    }
    return clocked(what, started, outcome);
  }

  const value = PROHIBITED_CODES[(options.value ?? 0) % PROHIBITED_CODES.length] as ProhibitedCode;
  // DMI-PROHIBITED-SEECONSTRAINT needs its text, which goes into plus:OtherConstraints: written and checked too.
  const otherConstraints = value === 'DMI-PROHIBITED-SEECONSTRAINT' ? `Terms & <conditions> "apply" — ${value}` : undefined;
  const protectOptions = { value, ...(otherConstraints ? { otherConstraints } : {}), ...(options.sign ? { signer: provenance.signer } : {}) };
  const read = timed('verify', () => verify(bytes, { provenance }), VERIFY_CODES);
  const written = timed('protect', () => protect(bytes, protectOptions), CLIENT_CODES);
  const verdict = (o: Outcome<unknown>): 'ok' | ErrorCode => (o.ok ? 'ok' : o.code);

  let fingerprintBlocks: number | undefined;
  if (options.pixelPath) {
    // What /api/v1/verify runs: the library's answer, then the decoder for the fingerprint. The decoder may refuse
    // pixel data (the check then examines no block); any other exception is a 500 the server would send.
    const fingerprint = options.pixelPath;
    const served = await timedAsync('verify with the pixel check', () => inspectWithFingerprint(bytes, { provenance, fingerprint }), VERIFY_CODES);
    if (verdict(served) !== verdict(read)) fail(`verify with the pixel check says ${verdict(served)}, without it ${verdict(read)}`);
    if (served.ok && read.ok) {
      const { fingerprint: f, ...rest } = served.value.result;
      const { fingerprint: _none, ...expected } = read.value;
      if (JSON.stringify(rest) !== JSON.stringify(expected)) fail('the pixel check changed the rest of the verify result');
      if (!Number.isInteger(f.blocks) || f.blocks < 0 || !(f.confidence >= 0 && f.confidence <= 1) || typeof f.present !== 'boolean') {
        fail(`the fingerprint check answered ${JSON.stringify(f)}`);
      }
      fingerprintBlocks = f.blocks;
    }
  }
  const report = { verify: verdict(read), protect: verdict(written), pixelsCompared: false, slowestMs, fingerprintBlocks };

  if (written.ok && !read.ok) fail(`protect succeeded on a file verify refuses (${read.code})`);
  if (!written.ok && read.ok && !PROTECT_ONLY.has(written.code)) fail(`verify reads the file but protect refuses it with ${written.code}`);
  if (!written.ok && !read.ok && written.code !== read.code) fail(`protect says ${written.code}, verify says ${read.code}`);
  if (!written.ok) return report;

  const out = written.value;
  const handler = sniff(bytes);
  if (out.sha256 !== createHash('sha256').update(out.bytes).digest('hex')) fail('protect reported a sha256 that is not its output');
  if (out.mimeType !== handler.mimeType || !handler.canHandle(out.bytes)) fail(`protect changed the format to ${out.mimeType}`);

  const reread = timed('verify of the output', () => inspect(out.bytes, { provenance }), NONE);
  if (reread.ok) {
    const { result, details } = reread.value;
    if (!result.optedOut) fail('the output of protect is not opted out');
    // The value verify decides on (the first one it reads) is the one protect was asked to write.
    if (details.dataMining[0]?.value !== uriFor(value)) fail(`protect wrote ${value} but the output reads ${JSON.stringify(details.dataMining.map((d) => d.value))}`);
    if (otherConstraints && details.otherConstraints !== otherConstraints) fail(`protect wrote plus:OtherConstraints ${JSON.stringify(otherConstraints)} but the output reads ${JSON.stringify(details.otherConstraints)}`);
    if (options.sign && !result.provenance.valid) fail(`the output's provenance tag does not verify: ${JSON.stringify(result.provenance)}`);
  }

  const again = timed('protect of the output', () => protect(out.bytes, protectOptions), NONE);
  const idempotent = again.ok && Buffer.from(again.value.bytes).equals(Buffer.from(out.bytes));
  if (again.ok && !idempotent) {
    const third = timed('verify of the output protected twice', () => verify(again.value.bytes), NONE);
    if (third.ok && !third.value.optedOut) fail('protecting the output again lost the opt-out');
  }

  checkNonXmpBytes(handler, bytes, out.bytes);
  const pixelsCompared = await samePixels(handler, bytes, out.bytes);
  return { ...report, idempotent, pixelsCompared, slowestMs, fingerprintBlocks };
}

/** The input's non-XMP blocks, in order, byte for byte; undefined when our own full parse refuses the file. */
function nonXmpBytes(handler: ContainerHandler, bytes: Uint8Array): Buffer | undefined {
  let blocks;
  try {
    blocks = handler.blocks(bytes);
  } catch (error) {
    if (error instanceof OptmarkError) return undefined;
    fail(`blocks() threw ${describeError(error)}`, error);
  }
  return Buffer.concat(blocks.filter((b) => b.kind === 'other').map((b) => bytes.subarray(b.offset, b.offset + b.length)));
}

function checkNonXmpBytes(handler: ContainerHandler, input: Uint8Array, output: Uint8Array): void {
  // protect reads only up to the image data when the file ends in EOI; the full walk may still refuse the scan.
  const before = nonXmpBytes(handler, input);
  if (before === undefined) return;
  const after = nonXmpBytes(handler, output);
  if (after === undefined) fail('the output of protect is refused by our own full parse, the input was not');
  if (!before.equals(after)) fail('protect changed bytes outside the XMP blocks');
}

/**
 * Whether libvips will see CMYK: a JPEG whose first frame header has four
 * components (CMYK or YCCK; PNG and WebP have no CMYK). Read from the header
 * rather than asked of sharp, whose metadata() is a second load of the file
 * (EXIF and ICC parsed again): a fifth of the decoding time of the fuzz
 * inputs, most of them small images with a lot of metadata. A wrong guess
 * costs time, not correctness: input and output are decoded by the same
 * pipeline, chosen once from the input.
 */
function storedAsCmyk(bytes: Uint8Array, format: string): boolean {
  if (format !== 'jpeg') return false;
  const frame = jpegFrameHeaderAt(bytes);
  return frame !== undefined && bytes[frame + 9] === 4;
}

async function decode(bytes: Uint8Array, cmyk: boolean): Promise<{ data: Buffer; shape: string } | undefined> {
  try {
    // The samples as stored, not a colour-managed rendering of them: converting through an embedded ICC profile or
    // from CMYK builds a colour transform per call (40 ms for a 100 x 100 CMYK JPEG, most of the fuzz step's time).
    let pipeline = sharp(bytes, { pages: -1, limitInputPixels: MAX_DECODE_PIXELS * 4 }).keepIccProfile();
    if (cmyk) pipeline = pipeline.pipelineColourspace('cmyk').toColourspace('cmyk');
    const { data, info } = await pipeline.raw().toBuffer({ resolveWithObject: true });
    return { data, shape: `${info.width}x${info.height}x${info.channels}` };
  } catch {
    return undefined;
  }
}

async function samePixels(handler: ContainerHandler, input: Uint8Array, output: Uint8Array): Promise<boolean> {
  const size = declaredDimensions(input, handler.format);
  if (!size || size.width * size.height > MAX_DECODE_PIXELS) return false;
  const cmyk = storedAsCmyk(input, handler.format);
  const before = await decode(input, cmyk);
  if (!before) return false;
  const after = await decode(output, cmyk);
  if (!after) fail('the input decodes but the output of protect does not');
  if (after.shape !== before.shape || !after.data.equals(before.data)) fail(`protect changed the pixels (${before.shape} -> ${after.shape})`);
  return true;
}
