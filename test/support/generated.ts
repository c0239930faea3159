/**
 * Images made in code with sharp, one per layout worth covering that the
 * corpus may lack: baseline and progressive JPEG with EXIF and ICC, 8/16-bit,
 * palette and interlaced PNG, lossy and lossless WebP with and without alpha,
 * an animated WebP, and files that already carry XMP.
 */
import sharp from 'sharp';

export interface GeneratedImage {
  readonly name: string;
  readonly bytes: Buffer;
}

/** Deterministic pseudo-random RGB(A) pixels, so encoders have real work to do. */
function noise(width: number, height: number, channels: 3 | 4, seed = 1): Buffer {
  const data = Buffer.alloc(width * height * channels);
  let s = seed;
  for (let i = 0; i < data.length; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    const x = (i / channels) % width;
    data[i] = ((x * 4 + (s >>> 24)) >>> 1) & 0xff;
  }
  return data;
}

const raw = (w: number, h: number, c: 3 | 4, seed?: number) => sharp(noise(w, h, c, seed), { raw: { width: w, height: h, channels: c } });

export const SAMPLE_XMP = `<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:iptcx="http://ns.useplus.org/ldf/xmp/1.0/"
    iptcx:DataMining="http://ns.useplus.org/ldf/vocab/DMI-ALLOWED">
   <dc:title><rdf:Alt><rdf:li xml:lang="x-default">A test image</rdf:li></rdf:Alt></dc:title>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
<?xpacket end="w"?>`;

export async function generatedImages(): Promise<GeneratedImage[]> {
  const exif = { IFD0: { Copyright: 'optmark test', Artist: 'Test' } };
  const list: Array<[string, Promise<Buffer>]> = [
    ['baseline.jpg', raw(64, 48, 3).jpeg({ quality: 90 }).toBuffer()],
    ['progressive-exif-icc.jpg', raw(80, 60, 3).withExif(exif).withIccProfile('p3').jpeg({ progressive: true }).toBuffer()],
    ['unoptimised-huffman.jpg', raw(96, 64, 3).jpeg({ quality: 80, optimiseCoding: false }).toBuffer()],
    ['with-xmp.jpg', raw(32, 32, 3).withXmp(SAMPLE_XMP).jpeg().toBuffer()],
    ['rgb8.png', raw(40, 30, 3).png().toBuffer()],
    ['rgba16.png', raw(40, 30, 4).toColourspace('rgb16').png().toBuffer()],
    ['palette.png', raw(40, 30, 3).png({ palette: true, colours: 16 }).toBuffer()],
    ['interlaced-grey.png', raw(40, 30, 3).greyscale().png({ progressive: true }).toBuffer()],
    ['with-xmp.png', raw(32, 32, 4).withXmp(SAMPLE_XMP).png().toBuffer()],
    ['lossy.webp', raw(64, 48, 3).webp({ quality: 80 }).toBuffer()],
    ['lossless.webp', raw(64, 48, 3).webp({ lossless: true }).toBuffer()],
    ['lossy-alpha.webp', raw(64, 48, 4).webp({ quality: 70 }).toBuffer()],
    ['lossless-alpha.webp', raw(63, 47, 4).webp({ lossless: true }).toBuffer()],
    ['exif.webp', raw(64, 48, 3).withExif(exif).webp().toBuffer()],
    ['with-xmp.webp', raw(32, 32, 3).withXmp(SAMPLE_XMP).webp().toBuffer()],
    ['animated.webp', sharp(noise(32, 96, 4), { raw: { width: 32, height: 96, channels: 4, pageHeight: 32 } } as never).webp({ loop: 0, delay: [100, 100, 100] }).toBuffer()],
  ];
  return Promise.all(list.map(async ([name, bytes]) => ({ name, bytes: await bytes })));
}
