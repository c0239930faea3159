/**
 * Reassemble a JPEG's Extended XMP from its chunks, validated the way Skia
 * does (src/codec/SkJpegXmp.cpp): the GUID is 32 uppercase hex characters,
 * every chunk agrees on the full length, chunks (in any order) tile the whole
 * without gap or overlap, and the MD5 of the result equals the GUID.
 */
import { InvalidXmpError } from '../../errors.js';
import { md5HexUpper } from '../bytes/digest.js';
import { MAX_XMP_BYTES, type ExtendedXmpChunk } from './handler.js';

export const GUID_PATTERN = /^[0-9A-F]{32}$/;

export function assembleExtendedXmp(chunks: readonly ExtendedXmpChunk[], guid: string): Uint8Array {
  if (!GUID_PATTERN.test(guid)) {
    throw new InvalidXmpError(`xmpNote:HasExtendedXMP is ${JSON.stringify(guid.slice(0, 40))}, not a 32-digit uppercase hex GUID`);
  }
  const mine = chunks.filter((c) => c.guid === guid).sort((a, b) => a.offset - b.offset);
  if (mine.length === 0) throw new InvalidXmpError(`Extended XMP ${guid} is announced but no segment carries it`);
  const fullLength = mine[0]!.fullLength;
  if (fullLength > MAX_XMP_BYTES) throw new InvalidXmpError(`Extended XMP of ${fullLength} bytes is over the ${MAX_XMP_BYTES}-byte limit`);
  const whole = new Uint8Array(fullLength);
  let expected = 0;
  for (const chunk of mine) {
    if (chunk.fullLength !== fullLength) {
      throw new InvalidXmpError(`Extended XMP segments disagree on the full length (${fullLength} and ${chunk.fullLength})`);
    }
    if (chunk.offset !== expected) {
      throw new InvalidXmpError(
        chunk.offset < expected
          ? `Extended XMP segments overlap at offset ${chunk.offset}`
          : `Extended XMP is missing bytes ${expected} to ${chunk.offset}`,
      );
    }
    if (chunk.offset + chunk.data.length > fullLength) {
      throw new InvalidXmpError(`an Extended XMP segment runs past the declared length ${fullLength}`);
    }
    whole.set(chunk.data, chunk.offset);
    expected += chunk.data.length;
  }
  if (expected !== fullLength) throw new InvalidXmpError(`Extended XMP is missing bytes ${expected} to ${fullLength}`);
  const md5 = md5HexUpper(whole);
  if (md5 !== guid) throw new InvalidXmpError(`the MD5 of the Extended XMP is ${md5}, not the announced GUID ${guid}`);
  return whole;
}
