import sharp from 'sharp';

/** Decode every frame to raw pixels, or the decoder's error message when it refuses. */
export async function decodePixels(bytes: Uint8Array): Promise<{ data: Buffer; info: object } | { error: string }> {
  try {
    const { data, info } = await sharp(bytes, { pages: -1 }).raw().toBuffer({ resolveWithObject: true });
    return { data, info };
  } catch (error) {
    return { error: (error as Error).message };
  }
}
