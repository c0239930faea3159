/** Photo-like test images made in code: smooth shapes plus fine texture, so the detector has something to vote on. */
import sharp from 'sharp';

export async function texturedPhoto(width: number, height: number, format: 'jpeg' | 'png' | 'webp' = 'jpeg', seed = 7): Promise<Buffer> {
  const data = Buffer.alloc(width * height * 3);
  let s = seed;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      s = (s * 1103515245 + 12345) >>> 0;
      const v = (128 + 60 * Math.sin(x / 23 + seed) + 40 * Math.cos(y / 17) + (s >>> 27)) | 0;
      const i = (y * width + x) * 3;
      data[i] = v;
      data[i + 1] = (v + 30) & 255;
      data[i + 2] = (v * 2) & 255;
    }
  }
  const image = sharp(data, { raw: { width, height, channels: 3 } });
  return format === 'jpeg' ? image.jpeg({ quality: 90 }).toBuffer() : format === 'png' ? image.png().toBuffer() : image.webp({ quality: 90 }).toBuffer();
}
