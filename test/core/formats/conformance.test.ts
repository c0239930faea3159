/**
 * One conformance suite for every container handler, run over every image of
 * the corpus and over images generated in code:
 * write-then-read gives the value; writing twice equals writing once; every
 * non-XMP block is byte-identical; decoded pixels are identical; the handler's
 * own write/read/remove agree; broken files fail with a typed error.
 */
import { describe, expect, it } from 'vitest';
import { generateKeyPairSync } from 'node:crypto';
import { createProvenance, inspect, protect, sniff } from '../../../src/index.js';
import { protectParts } from '../../../src/app/protect-image.js';
import type { Block, ContainerHandler } from '../../../src/core/formats/handler.js';
import { HANDLERS } from '../../../src/core/formats/registry.js';
import { WEBP_FLAGS } from '../../../src/core/formats/webp.js';
import { AmbiguousXmpError, CorruptImageError, OptmarkError } from '../../../src/errors.js';
import { AMBIGUOUS_XMP, CORPUS, INTENTIONALLY_CORRUPT, ORACLE, PNGCHECK_ONLY_REJECTS } from '../../support/corpus.js';
import { generatedImages } from '../../support/generated.js';
import { decodePixels } from '../../support/pixels.js';

const URI = 'http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED-AIMLTRAINING';
const PACKET = `<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/"/><?xpacket end="w"?>`;

interface Case {
  readonly name: string;
  readonly bytes: Uint8Array;
}

const generated = (await generatedImages()).map((g) => ({ name: `generated/${g.name}`, bytes: g.bytes }));
const valid: Case[] = [
  ...CORPUS.filter((f) => !INTENTIONALLY_CORRUPT.has(f.name) && !AMBIGUOUS_XMP.has(f.name)).map((f) => ({ name: f.name, bytes: f.bytes })),
  ...generated,
];

/** A signer whose clock stands still, so that two calls sign the same tag. */
const fixedSigner = (() => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const now = new Date('2026-01-02T03:04:05Z');
  return createProvenance({ keys: { active: { kid: 'conformance', privateKey }, publicKey: () => publicKey }, issuer: () => 'http://127.0.0.1', clock: { now: () => now } }).signer;
})();

/** A JPEG with an AFCP trailer, whose marked copy is built whole (its offsets move). */
function hasAfcp(bytes: Uint8Array): boolean {
  return sniff(bytes).format === 'jpeg' && sniff(bytes).blocks(bytes).some((b) => b.type === 'AFCP offset');
}

function same(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}

function slice(bytes: Uint8Array, block: Block): Uint8Array {
  return bytes.subarray(block.offset, block.offset + block.length);
}

/** Every `other` block of `after` is, in order, byte for byte an `other` block of `before`. */
function expectOnlyXmpChanged(handler: ContainerHandler, before: Uint8Array, after: Uint8Array): void {
  const kept = (bytes: Uint8Array) => handler.blocks(bytes).filter((b) => b.kind === 'other');
  const a = kept(before);
  const b = kept(after);
  expect(b.map((x) => x.type)).toEqual(a.map((x) => x.type));
  a.forEach((block, i) => {
    if (!same(slice(before, block), slice(after, b[i]!))) throw new Error(`${block.type} block ${i} changed`);
  });
  // Header blocks change in documented fields only.
  const headers = handler.blocks(after).filter((x) => x.kind === 'header');
  // JPEG: the offsets of an AFCP trailer move by what the file's length changed (test/core/formats/jpeg.test.ts has the details).
  const afcpBefore = handler.blocks(before).filter((x) => x.type === 'AFCP offset');
  expect(headers.filter((x) => x.type === 'AFCP offset')).toHaveLength(afcpBefore.length);
  for (const [i, header] of headers.filter((x) => x.type === 'AFCP offset').entries()) {
    const read = (bytes: Uint8Array, block: Block, le: boolean) => new DataView(bytes.buffer, bytes.byteOffset + block.offset, 4).getUint32(0, le);
    const moved = [false, true].map((le) => read(after, header, le) - read(before, afcpBefore[i]!, le));
    expect(moved).toContain(after.length - before.length);
  }
  for (const header of headers) {
    const view = new DataView(after.buffer, after.byteOffset + header.offset, header.length);
    if (header.type === 'RIFF') expect(view.getUint32(4, true)).toBe(after.length - 8);
    if (header.type === 'VP8X') {
      const old = handler.blocks(before).find((x) => x.type === 'VP8X');
      const flags = after[header.offset + 8]!;
      if (old) {
        const oldBytes = Buffer.from(slice(before, old));
        const newBytes = Buffer.from(slice(after, header));
        expect((oldBytes[8]! ^ newBytes[8]!) & ~WEBP_FLAGS.XMP).toBe(0);
        oldBytes[8] = newBytes[8]!;
        expect(newBytes.equals(oldBytes)).toBe(true);
      }
      const hasXmp = handler.readXmp(after).packets.length > 0;
      expect(Boolean(flags & WEBP_FLAGS.XMP)).toBe(hasXmp);
    }
  }
}

describe('conformance over the corpus and generated images', () => {
  it('covers every image of the corpus and every format', () => {
    expect(CORPUS.length).toBeGreaterThanOrEqual(200);
    for (const handler of HANDLERS) expect(valid.some((c) => sniff(c.bytes) === handler)).toBe(true);
  });

  it.each(valid)('$name: marks losslessly, idempotently, readably', async ({ bytes }) => {
    const handler = sniff(bytes);
    const pristine = Buffer.from(bytes);
    const marked = protect(bytes).bytes;
    // The caller's bytes are never touched (a Buffer's slice shares memory).
    expect(same(bytes, pristine)).toBe(true);

    // Write-then-read gives the value, once, in element form in the standard packet.
    const read = inspect(marked);
    expect(read.result.optedOut).toBe(true);
    expect(read.result.signals).toContain('iptc.dataMining');
    expect(read.details.dataMining).toEqual([{ value: URI, code: 'DMI-PROHIBITED-AIMLTRAINING', label: 'Prohibited for AI/ML training', prohibited: true, form: 'element', extended: false }]);
    expect(read.details.format).toBe(handler.format);

    // Writing twice equals writing once.
    const again = protect(marked);
    expect(again.changed).toBe(false);
    expect(same(again.bytes, marked)).toBe(true);

    // Every non-XMP block is byte-identical, and pixels decode identically.
    expectOnlyXmpChanged(handler, bytes, marked);
    const [pixelsBefore, pixelsAfter] = await Promise.all([decodePixels(bytes), decodePixels(marked)]);
    if ('error' in pixelsBefore) expect(pixelsAfter).toEqual(pixelsBefore);
    else {
      expect('data' in pixelsAfter && pixelsAfter.info).toEqual(pixelsBefore.info);
      expect('data' in pixelsAfter && pixelsAfter.data.equals(pixelsBefore.data)).toBe(true);
    }

    // The handler's own contract: read returns what write wrote; remove removes it all.
    const written = handler.writeXmp(bytes, { packet: PACKET });
    const raw = handler.readXmp(written);
    expect(raw.packets.map((p) => p.text)).toEqual([PACKET]);
    expectOnlyXmpChanged(handler, bytes, written);
    const removed = handler.removeXmp(written);
    expect(same(bytes, pristine)).toBe(true);
    expect(handler.readXmp(removed).packets).toEqual([]);
    expect(handler.readXmp(removed).extendedChunks).toEqual([]);
    expectOnlyXmpChanged(handler, handler.removeXmp(bytes), removed);
  });

  it.each(valid)('$name: protectParts gives the file protect makes, as views on the input', ({ bytes }) => {
    for (const options of [{}, { signer: fixedSigner }, { signer: fixedSigner, value: 'DMI-PROHIBITED-SEECONSTRAINT', otherConstraints: 'Ask first.' }]) {
      const whole = protect(bytes, options);
      const { parts, ...rest } = protectParts(bytes, options);
      const { bytes: _, ...expected } = whole;
      expect(same(Buffer.concat(parts), whole.bytes)).toBe(true);
      expect(rest).toEqual(expected);
      expect(rest.sha256).toBe(whole.sha256);
      // Nothing of the input copied (but for a JPEG with an AFCP trailer, built whole): what is not a view on it is at most what is not kept of it.
      const kept = sniff(bytes).blocks(bytes).filter((b) => b.kind === 'other').reduce((n, b) => n + b.length, 0);
      const made = parts.filter((p) => p.buffer !== bytes.buffer).reduce((n, p) => n + p.length, 0);
      if (!hasAfcp(bytes)) expect(made).toBeLessThanOrEqual(whole.bytes.length - kept);
      // Marked again: unchanged, the input itself.
      const again = protectParts(whole.bytes, options);
      expect(again.changed).toBe(false);
      expect(again.parts).toEqual([whole.bytes]);
    }
  });

  it.each(CORPUS.filter((f) => INTENTIONALLY_CORRUPT.has(f.name)))('$name: fails with a typed error', ({ bytes }) => {
    expect(() => protect(bytes)).toThrow(CorruptImageError);
    expect(() => inspect(bytes)).toThrow(CorruptImageError);
  });

  it('treats as corrupt exactly what the validators reject, but for a valid date pngcheck dislikes', () => {
    const rejected = Object.entries(ORACLE).filter(([, o]) => !o.validator_ok).map(([name]) => name);
    expect(new Set(rejected)).toEqual(new Set([...INTENTIONALLY_CORRUPT, ...PNGCHECK_ONLY_REJECTS]));
  });

  it.each(CORPUS.filter((f) => AMBIGUOUS_XMP.has(f.name)))('$name: two XMP packets are read, never written', ({ bytes }) => {
    expect(() => protect(bytes)).toThrow(AmbiguousXmpError);
    const read = inspect(bytes);
    expect(read.result.optedOut).toBe(false);
    expect(read.details.warnings.join('\n')).toMatch(/2 standard XMP packets/);
  });

  it('each handler refuses the other formats cleanly', () => {
    for (const handler of HANDLERS) {
      for (const other of valid.filter((c) => sniff(c.bytes) !== handler).slice(0, 40)) {
        expect(handler.canHandle(other.bytes)).toBe(false);
        for (const call of [() => handler.blocks(other.bytes), () => handler.readXmp(other.bytes), () => handler.writeXmp(other.bytes, { packet: PACKET })]) {
          expect(call).toThrow(OptmarkError);
        }
      }
    }
  });
});
