/**
 * What the user receives: each picture saved as an "original" file (a
 * JPEG, a lossy WebP and a PNG), marked as the product marks a file (its
 * stored pixels decoded, the mark embedded, encodeMarked writing the result
 * with the original's settings, or at a higher quality where those lost the
 * mark or, for a WebP of quality 90 and more, 40 dB) and measured:
 *
 * - the size of the delivered file against the original's;
 * - the delivered file's PSNR: its decode against the original's decode;
 * - SSIM on luma: for PNG the delivered pixels against the original's; for
 *   the lossy formats the delivered file against the unmarked original
 *   re-encoded with the same settings, the delivered file's quality
 *   included (what the re-encoding alone would have given), so the figure
 *   is the mark's;
 * - the flat-area rule on the marked pixels before encoding;
 * - whether the detector finds the mark in the delivered file.
 *
 * The originals' settings are spread as files met in use are: JPEG
 * quality 75, 85, 90 and 95 in turn (every third progressive, 4:2:0, as
 * sharp writes by default), WebP quality 75, 80 and 90 in turn.
 */
import sharp from 'sharp';
import { detectFingerprint, embedFingerprint, FingerprintRefusedError, type FingerprintKey } from '../src/core/fingerprint/index.js';
import type { PixelDecoder } from '../src/adapters/pixels.js';
import { encodingLike } from '../src/core/formats/encoding-like.js';
import { encodeMarked } from '../src/app/fingerprint-encode.js';
import type { RgbImage } from './fingerprint-images.js';
import { decodeForDetection } from './fingerprint-latency.js';
import { psnr } from './fingerprint-stats.js';
import { flatChanges, ssimLuma, type FlatChanges, type Pixels } from './fingerprint-visibility.js';

export const JPEG_QUALITIES = [75, 85, 90, 95] as const;
export const WEBP_QUALITIES = [75, 80, 90] as const;

export interface DeliveryRow {
  readonly name: string;
  readonly format: 'jpeg' | 'webp' | 'png';
  /** The original's quality as written (lossy formats). */
  readonly writtenQuality?: number;
  /** The quality the product read from the original's headers. */
  readonly estimatedQuality?: number;
  /** Set when the product wrote the file at a higher quality than estimatedQuality (the original's lost the mark or, for a WebP of quality 90 and more, 40 dB). */
  readonly deliveredQuality?: number;
  readonly progressive?: boolean;
  /** Set when the embedder refused the picture (its reason). */
  readonly refused?: string;
  readonly bytesBefore: number;
  readonly bytesAfter?: number;
  /** Delivered file's decode against the original's decode, dB. */
  readonly psnr?: number;
  /** The unmarked original re-encoded with the same settings, against the original's decode, dB (lossy formats): what the re-encoding alone costs. */
  readonly psnrReencoded?: number;
  readonly ssim?: number;
  readonly flat?: FlatChanges;
  readonly detected?: boolean;
}

async function decodeRaw(bytes: Uint8Array): Promise<Pixels> {
  const { data, info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), width: info.width, height: info.height, channels: info.channels };
}

/** The originals of picture `index`: one per format. */
async function originals(image: RgbImage, index: number): Promise<Array<{ format: DeliveryRow['format']; bytes: Uint8Array; writtenQuality?: number; progressive?: boolean }>> {
  const open = () => sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } });
  const jq = JPEG_QUALITIES[index % JPEG_QUALITIES.length]!;
  const progressive = index % 3 === 2;
  const wq = WEBP_QUALITIES[index % WEBP_QUALITIES.length]!;
  return [
    { format: 'jpeg', bytes: await open().jpeg({ quality: jq, progressive }).toBuffer(), writtenQuality: jq, progressive },
    { format: 'webp', bytes: await open().webp({ quality: wq }).toBuffer(), writtenQuality: wq },
    { format: 'png', bytes: await open().png().toBuffer() },
  ];
}

/** Every picture through the product's marking, as three originals. */
export async function deliveryRows(images: readonly RgbImage[], decoder: PixelDecoder, key: FingerprintKey): Promise<DeliveryRow[]> {
  const rows: DeliveryRow[] = [];
  for (const [index, image] of images.entries()) {
    for (const original of await originals(image, index)) {
      const settings = encodingLike(original.bytes);
      const base = {
        name: image.name,
        format: original.format,
        bytesBefore: original.bytes.length,
        ...(original.writtenQuality !== undefined ? { writtenQuality: original.writtenQuality, progressive: original.progressive ?? false } : {}),
        ...(!settings.lossless ? { estimatedQuality: settings.quality } : {}),
      };
      const decoded = await decodeRaw(original.bytes);
      let marked;
      try {
        marked = embedFingerprint(decoded, key).data;
      } catch (error) {
        if (!(error instanceof FingerprintRefusedError)) throw error;
        rows.push({ ...base, refused: error.reason });
        continue;
      }
      const pixels = { ...decoded, data: marked };
      // Written as the product writes it (src/app/fingerprint-encode.ts): at the original's settings, or higher where that lost the mark or, for a WebP, 40 dB.
      const written = await decoder.withSlot(original.bytes, (held) =>
        encodeMarked(held, original.bytes, pixels, async (bytes) => {
          const { present, confidence, blocks } = detectFingerprint(await decodeForDetection(Buffer.from(bytes)), [key]);
          return { present, confidence, blocks };
        }),
      );
      const delivered = written.bytes;
      const quality = written.encoding.lossless ? undefined : written.encoding.quality;
      const deliveredPixels = await decodeRaw(delivered);
      // The same settings as the delivered file, its quality included.
      const reference = original.format === 'png' ? decoded : await decodeRaw(await decoder.withSlot(original.bytes, (held) => held.encodeLike(original.bytes, decoded, quality)));
      rows.push({
        ...base,
        ...(!settings.lossless && quality !== settings.quality ? { deliveredQuality: quality } : {}),
        bytesAfter: delivered.length,
        psnr: psnr(decoded.data, deliveredPixels.data),
        ...(original.format === 'png' ? {} : { psnrReencoded: psnr(decoded.data, reference.data) }),
        ssim: ssimLuma(reference, deliveredPixels),
        flat: flatChanges(decoded, pixels),
        // A file whose mark was lost at every quality tried is refused by the product; counted here as not found.
        detected: !written.lost,
      });
    }
  }
  return rows;
}

export interface SyntheticRow {
  readonly name: string;
  readonly refused?: string;
  readonly flatShare: number;
  readonly changedOver1?: number;
  readonly fraction?: number;
  readonly maxChange?: number;
  readonly ssim?: number;
  readonly psnr?: number;
}

/** The flat pictures drawn in code: refused, or marked with their flat areas untouched. */
export function syntheticRows(pictures: ReadonlyArray<{ name: string; image: Pixels }>, key: FingerprintKey): SyntheticRow[] {
  return pictures.map(({ name, image }) => {
    const none = flatChanges(image, image);
    try {
      const { data } = embedFingerprint(image, key);
      const marked = { ...image, data };
      const flat = flatChanges(image, marked);
      return { name, flatShare: flat.flatShare, changedOver1: flat.changedOver1, fraction: flat.fraction, maxChange: flat.maxChange, ssim: ssimLuma(image, marked), psnr: psnr(image.data, data) };
    } catch (error) {
      if (!(error instanceof FingerprintRefusedError)) throw error;
      return { name, refused: error.reason, flatShare: none.flatShare };
    }
  });
}
