/**
 * Benchmark inputs made in code with sharp: noisy pixels so the encoders
 * cannot compress them away, sized to about 100 KB, 1, 5 and 25 MB per format.
 * Generating the big ones takes seconds, so each file is cached under
 * .bench-tmp/images/ by name and reused on later runs.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';

export type Format = 'jpeg' | 'png' | 'webp';

export interface BenchImage {
  readonly name: string;
  readonly format: Format;
  readonly targetBytes: number;
  readonly path: string;
  readonly bytes: Buffer;
  readonly width: number;
  readonly height: number;
}

const MB = 1024 * 1024;
export const FORMATS: readonly Format[] = ['jpeg', 'png', 'webp'];
/** About 100 KB, 1, 5 and 25 MB of each format. */
export const SIZES_MB: readonly number[] = [0.1, 1, 5, 25];
const EXT: Record<Format, string> = { jpeg: 'jpg', png: 'png', webp: 'webp' };
/** Bump when the recipe changes, so stale cached files are not reused. */
const RECIPE = 'v3';
/** Aim well inside the ±15% the brief allows; calibration stops once within this. */
const TOLERANCE = 0.05;
/** WebP cannot exceed 16383 px per side. */
const MAX_SIDE = 16383;

/**
 * Structured noise: a gradient plus strong per-pixel noise from a seeded
 * xorshift, so runs are reproducible and files look like busy photos to the
 * encoders rather than flat colour.
 */
function noisyPixels(width: number, height: number, seed: number): Buffer {
  const data = Buffer.allocUnsafe(width * height * 3);
  let s = (seed * 2654435761) >>> 0 || 1;
  let i = 0;
  for (let y = 0; y < height; y++) {
    const gy = (y * 255) / height;
    for (let x = 0; x < width; x++) {
      s ^= s << 13;
      s ^= s >>> 17;
      s ^= s << 5;
      const gx = (x * 255) / width;
      data[i++] = (gx + (s & 0xff)) & 0xff;
      data[i++] = (gy + ((s >>> 8) & 0xff)) & 0xff;
      data[i++] = (gx + gy + ((s >>> 16) & 0xff)) & 0xff;
    }
  }
  return data;
}

/**
 * The metadata an edited photo carries (EXIF, an ICC profile, a few KB of XMP
 * from the editing tool), so both optmark and ExifTool have the work they have
 * on real files: ExifTool parses and rewrites the XMP it finds.
 */
const EDITOR_XMP = `<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="Adobe XMP Core 7.0">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:xmp="http://ns.adobe.com/xap/1.0/"
    xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/" xmlns:xmpRights="http://ns.adobe.com/xap/1.0/rights/"
    xmlns:xmpMM="http://ns.adobe.com/xap/1.0/mm/" xmlns:stEvt="http://ns.adobe.com/xap/1.0/sType/ResourceEvent#"
    xmp:CreatorTool="Editor 25.0" xmp:CreateDate="2026-05-01T10:00:00+02:00" xmp:ModifyDate="2026-05-02T09:30:00+02:00"
    photoshop:City="Lisbon" photoshop:Country="Portugal" photoshop:Credit="Bench Studio" xmpRights:Marked="True">
   <dc:creator><rdf:Seq><rdf:li>Bench Photographer</rdf:li></rdf:Seq></dc:creator>
   <dc:rights><rdf:Alt><rdf:li xml:lang="x-default">(c) 2026 Bench Studio. All rights reserved.</rdf:li></rdf:Alt></dc:rights>
   <dc:title><rdf:Alt><rdf:li xml:lang="x-default">Harbour at dusk</rdf:li></rdf:Alt></dc:title>
   <dc:subject><rdf:Bag>${Array.from({ length: 24 }, (_, i) => `<rdf:li>keyword ${i}</rdf:li>`).join('')}</rdf:Bag></dc:subject>
   <xmpMM:History><rdf:Seq>${Array.from({ length: 12 }, (_, i) => `<rdf:li rdf:parseType="Resource"><stEvt:action>saved</stEvt:action><stEvt:instanceID>xmp.iid:${i.toString(16).padStart(32, '0')}</stEvt:instanceID><stEvt:when>2026-05-02T09:${String(i).padStart(2, '0')}:00+02:00</stEvt:when><stEvt:softwareAgent>Editor 25.0</stEvt:softwareAgent></rdf:li>`).join('')}</rdf:Seq></xmpMM:History>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
<?xpacket end="w"?>`;

async function encode(format: Format, width: number, height: number, seed: number): Promise<Buffer> {
  const image = sharp(noisyPixels(width, height, seed), { raw: { width, height, channels: 3 } })
    .withExif({ IFD0: { Copyright: 'bench', Make: 'Bench', Model: 'Camera' } })
    .withIccProfile('p3')
    .withXmp(EDITOR_XMP);
  switch (format) {
    case 'jpeg':
      return withIptc(await image.jpeg({ quality: 92 }).toBuffer());
    // Lowest zlib effort: noise does not compress anyway, and it keeps generation quick.
    case 'png':
      return image.png({ compressionLevel: 1, adaptiveFiltering: false }).toBuffer();
    // Lossless at low effort: near 3 bytes/pixel of noise, fast to encode.
    case 'webp':
      return image.webp({ lossless: true, effort: 0 }).toBuffer();
  }
}

/** One IPTC-IIM dataset: tag marker, record 2, dataset number, length, data. */
function dataset(number: number, text: string): Buffer {
  const data = Buffer.from(text, 'utf8');
  return Buffer.concat([Buffer.from([0x1c, 2, number, data.length >> 8, data.length & 0xff]), data]);
}

/**
 * Add the IPTC-IIM block (APP13 Photoshop 3.0, resource 0x0404) that photo
 * agencies and editors still write, right after the Exif APP1, so the file
 * has the Exif + IIM + XMP set of a typical edited photo.
 */
function withIptc(jpeg: Buffer): Buffer {
  const iim = Buffer.concat([
    dataset(0, '\u0000\u0004'),
    dataset(5, 'Harbour at dusk'),
    ...Array.from({ length: 24 }, (_, i) => dataset(25, `keyword ${i}`)),
    dataset(80, 'Bench Photographer'),
    dataset(116, '(c) 2026 Bench Studio'),
    dataset(120, 'A busy harbour at dusk, seen from the old fort.'),
  ]);
  const padded = iim.length % 2 ? Buffer.concat([iim, Buffer.alloc(1)]) : iim;
  const size = Buffer.alloc(4);
  size.writeUInt32BE(iim.length);
  const payload = Buffer.concat([Buffer.from('Photoshop 3.0\0', 'latin1'), Buffer.from('8BIM', 'latin1'), Buffer.from([0x04, 0x04, 0, 0]), size, padded]);
  const segment = Buffer.concat([Buffer.from([0xff, 0xed, (payload.length + 2) >> 8, (payload.length + 2) & 0xff]), payload]);
  // SOI, then the Exif APP1 sharp wrote first: insert after it.
  const exifEnd = 4 + jpeg.readUInt16BE(4);
  return Buffer.concat([jpeg.subarray(0, exifEnd), segment, jpeg.subarray(exifEnd)]);
}

/** 4:3 dimensions holding about `pixels` pixels. */
function dimensions(pixels: number): { width: number; height: number } {
  const width = Math.min(MAX_SIDE, Math.max(16, Math.round(Math.sqrt((pixels * 4) / 3))));
  const height = Math.min(MAX_SIDE, Math.max(16, Math.round(pixels / width)));
  return { width, height };
}

/** Encode a small sample for bytes/pixel, then rescale until the file lands near the target. */
export async function generate(format: Format, targetBytes: number, seed: number): Promise<{ bytes: Buffer; width: number; height: number }> {
  const sample = await encode(format, 256, 192, seed);
  let pixels = (targetBytes / sample.length) * 256 * 192;
  let best: { bytes: Buffer; width: number; height: number } | undefined;
  for (let attempt = 0; attempt < 4; attempt++) {
    const { width, height } = dimensions(pixels);
    const bytes = await encode(format, width, height, seed);
    if (!best || Math.abs(bytes.length - targetBytes) < Math.abs(best.bytes.length - targetBytes)) best = { bytes, width, height };
    if (Math.abs(bytes.length / targetBytes - 1) <= TOLERANCE) break;
    pixels *= targetBytes / bytes.length;
  }
  return best!;
}

/** All twelve benchmark images, generated once and then read from the cache. */
export async function benchImages(dir: string, log: (line: string) => void = () => {}): Promise<BenchImage[]> {
  mkdirSync(dir, { recursive: true });
  const images: BenchImage[] = [];
  let seed = 1;
  for (const format of FORMATS) {
    for (const mb of SIZES_MB) {
      seed++;
      const name = mb < 1 ? `${format}-${Math.round(mb * 1000)}kb` : `${format}-${mb}mb`;
      const path = join(dir, `${name}-${RECIPE}.${EXT[format]}`);
      const metaPath = `${path}.json`;
      const targetBytes = mb * MB;
      if (!existsSync(path) || !existsSync(metaPath)) {
        const started = performance.now();
        const made = await generate(format, targetBytes, seed);
        // Write then rename, so an interrupted run never leaves a truncated cache entry.
        writeFileSync(`${path}.part`, made.bytes);
        renameSync(`${path}.part`, path);
        writeFileSync(metaPath, JSON.stringify({ width: made.width, height: made.height }));
        log(`  generated ${name}: ${made.width}x${made.height}, ${(made.bytes.length / MB).toFixed(2)} MB in ${((performance.now() - started) / 1000).toFixed(1)} s`);
      }
      const { width, height } = JSON.parse(readFileSync(metaPath, 'utf8')) as { width: number; height: number };
      images.push({ name, format, targetBytes, path, bytes: readFileSync(path), width, height });
    }
  }
  return images;
}
