/**
 * The two JPEG bodies of the HTTP benchmark (about 100 KB and 5 MB), made with
 * the recipe of bench/images.ts: noisy pixels so the encoder cannot compress
 * them away, EXIF, an ICC profile, a few KB of editor XMP and an IPTC-IIM
 * block. images.ts keeps its encoder private (and only makes 1/5/25 MB files),
 * so the recipe is repeated here; keep the two in step. Cached under
 * .bench-tmp/http/ by name and recipe version.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';

export interface HttpImage {
  readonly name: string;
  readonly label: string;
  readonly path: string;
  readonly bytes: Buffer;
  readonly width: number;
  readonly height: number;
}

/** Bump when the recipe changes, so stale cached files are not reused. */
const RECIPE = 'v1';
const TOLERANCE = 0.05;
const KB = 1024;

export const HTTP_IMAGES: ReadonlyArray<{ name: string; label: string; targetBytes: number; seed: number }> = [
  { name: 'jpeg-100kb', label: '100 KB', targetBytes: 100 * KB, seed: 101 },
  { name: 'jpeg-5mb', label: '5 MB', targetBytes: 5 * KB * KB, seed: 105 },
];

/** Gradient plus seeded xorshift noise (as in images.ts). */
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

function dataset(number: number, text: string): Buffer {
  const data = Buffer.from(text, 'utf8');
  return Buffer.concat([Buffer.from([0x1c, 2, number, data.length >> 8, data.length & 0xff]), data]);
}

/** APP13 Photoshop 3.0 / 8BIM 0x0404 IPTC-IIM block, inserted after the Exif APP1. */
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
  const exifEnd = 4 + jpeg.readUInt16BE(4);
  return Buffer.concat([jpeg.subarray(0, exifEnd), segment, jpeg.subarray(exifEnd)]);
}

async function encodeJpeg(width: number, height: number, seed: number): Promise<Buffer> {
  const jpeg = await sharp(noisyPixels(width, height, seed), { raw: { width, height, channels: 3 } })
    .withExif({ IFD0: { Copyright: 'bench', Make: 'Bench', Model: 'Camera' } })
    .withIccProfile('p3')
    .withXmp(EDITOR_XMP)
    .jpeg({ quality: 92 })
    .toBuffer();
  return withIptc(jpeg);
}

function dimensions(pixels: number): { width: number; height: number } {
  const width = Math.max(16, Math.round(Math.sqrt((pixels * 4) / 3)));
  return { width, height: Math.max(16, Math.round(pixels / width)) };
}

/** Calibrate bytes/pixel on a sample, then rescale until the file lands within 5% of the target. */
async function generate(targetBytes: number, seed: number): Promise<{ bytes: Buffer; width: number; height: number }> {
  const sample = await encodeJpeg(256, 192, seed);
  let pixels = (targetBytes / sample.length) * 256 * 192;
  let best: { bytes: Buffer; width: number; height: number } | undefined;
  for (let attempt = 0; attempt < 6; attempt++) {
    const { width, height } = dimensions(pixels);
    const bytes = await encodeJpeg(width, height, seed);
    if (!best || Math.abs(bytes.length - targetBytes) < Math.abs(best.bytes.length - targetBytes)) best = { bytes, width, height };
    if (Math.abs(bytes.length / targetBytes - 1) <= TOLERANCE) break;
    pixels *= targetBytes / bytes.length;
  }
  return best!;
}

export async function httpImages(dir: string, log: (line: string) => void = () => {}): Promise<HttpImage[]> {
  mkdirSync(dir, { recursive: true });
  const out: HttpImage[] = [];
  for (const spec of HTTP_IMAGES) {
    const path = join(dir, `${spec.name}-${RECIPE}.jpg`);
    const metaPath = `${path}.json`;
    if (!existsSync(path) || !existsSync(metaPath)) {
      const started = performance.now();
      const made = await generate(spec.targetBytes, spec.seed);
      writeFileSync(`${path}.part`, made.bytes);
      renameSync(`${path}.part`, path);
      writeFileSync(metaPath, JSON.stringify({ width: made.width, height: made.height }));
      log(`  generated ${spec.name}: ${made.width}x${made.height}, ${(made.bytes.length / KB).toFixed(0)} KB in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
    const { width, height } = JSON.parse(readFileSync(metaPath, 'utf8')) as { width: number; height: number };
    out.push({ name: spec.name, label: spec.label, path, bytes: readFileSync(path), width, height });
  }
  return out;
}
