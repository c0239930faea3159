/**
 * What `optmark protect --fingerprint` delivers, per format, from synthetic
 * images made here: WebP stays lossy (VP8) or lossless (VP8L) as it came,
 * keeps its alpha exactly, carries the opt-out and is found by verify;
 * animated images (WebP, APNG) are refused in words, and so is a file in
 * which verify would not find the mark; and the PSNR of the
 * delivered file against the original, measured here from both decoded by
 * sharp, is within the mark's bound for PNG and, for JPEG and lossy WebP,
 * costs little beyond what re-encoding the unmarked image the same way costs.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { createPixelDecoder } from '../../src/adapters/pixels.js';
import { criticalMatches } from '../../src/core/fingerprint/binomial.js';
import { png } from '../../src/core/formats/png.js';
import { webp } from '../../src/core/formats/webp.js';
import { chunk, PNG_SIGNATURE, u32be } from '../support/build.js';
import { meanSquaredError, psnrOfMse } from '../support/psnr.js';
import { optmark } from '../process/support.js';
import { tool } from '../support/tools.js';
import { cliWorkspace, fixFingerprintKey, texturedPhoto } from './support.js';

const { dir, env, exiftool } = cliWorkspace('optmark-fp-delivered-');
// One fixed key for the whole file: whether a mark is found depends on the key as well as the picture, and on
// some pictures here it is not always found. Uniform noise at 512 x 384 (the PSNR test) carries a mark that
// verify finds with about 997 keys in 1000 (1993 of 2000 measured; the rest fall just under the threshold,
// and protect --fingerprint refuses them); with a key drawn per run, a run in a few hundred failed.
fixFingerprintKey(env.OPTMARK_DATA_DIR!, 'optmark test: delivered');

interface Protected {
  file: string;
  output?: string;
  code?: string;
  error?: string;
}
interface Verified {
  file: string;
  optedOut: boolean;
  fingerprint: { present: boolean; confidence: number; blocks: number };
}

/** The JSON lines of one command run over several files, by file. */
async function jsonLines<T extends { file: string }>(args: readonly string[]): Promise<Map<string, T>> {
  const run = await optmark([...args, '--json'], env, 120_000);
  const lines = run.stdout.trim().split('\n').filter(Boolean);
  if (lines.length === 0) throw new Error(`optmark ${args.join(' ')} printed nothing (exit ${run.code})\n${run.stderr}`);
  return new Map(lines.map((line) => JSON.parse(line) as T).map((entry) => [entry.file, entry]));
}

/** `protect --fingerprint` over the files, then `verify` over what it wrote. */
async function markAll(files: Record<string, Uint8Array>, into: string): Promise<Map<string, { protected: Protected; output?: Uint8Array; verified?: Verified }>> {
  const inputs = join(dir, into);
  mkdirSync(inputs, { recursive: true });
  const paths = Object.entries(files).map(([name, bytes]) => {
    const path = join(inputs, name);
    writeFileSync(path, bytes);
    return path;
  });
  const marked = await jsonLines<Protected>(['protect', '--fingerprint', '--out', join(inputs, 'out'), ...paths]);
  const outputs = [...marked.values()].flatMap((m) => (m.output ? [m.output] : []));
  const verified = outputs.length ? await jsonLines<Verified>(['verify', ...outputs]) : new Map<string, Verified>();
  const results = new Map<string, { protected: Protected; output?: Uint8Array; verified?: Verified }>();
  for (const [name, path] of Object.entries(files).map(([name], i) => [name, paths[i]!] as const)) {
    const p = marked.get(path)!;
    results.set(name, { protected: p, output: p.output ? readFileSync(p.output) : undefined, verified: p.output ? verified.get(p.output) : undefined });
  }
  return results;
}

/** A seeded generator of 32-bit values (an LCG: what matters is that it is fixed). */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0);
}

type Raw = { data: Buffer; width: number; height: number; channels: 3 | 4 };
const rawImage = (r: Raw) => sharp(r.data, { raw: { width: r.width, height: r.height, channels: r.channels } });

/** Uniform RGB noise: the worst case for a lossy encoder. */
function noise(width: number, height: number): Raw {
  const next = lcg(11);
  const data = Buffer.alloc(width * height * 3);
  for (let i = 0; i < data.length; i++) data[i] = next() >>> 24;
  return { data, width, height, channels: 3 };
}

/**
 * A smooth two-way colour gradient: the best case for a lossy encoder, the
 * one where a mark shows most. Pure, it is refused as too flat to carry the
 * mark unseen; with a grain of +/- `grain` levels (the same on R, G and B)
 * it has texture the mark hides in.
 */
function gradient(width: number, height: number, grain = 0): Raw {
  const next = lcg(13);
  const data = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      const g = grain ? grain * ((next() >>> 0) / 0x8000_0000 - 1) : 0;
      const v = (c: number) => Math.max(0, Math.min(255, Math.round(c + g)));
      data[i] = v((x * 255) / (width - 1));
      data[i + 1] = v((y * 255) / (height - 1));
      data[i + 2] = v(((x + y) * 255) / (width + height - 2));
    }
  }
  return { data, width, height, channels: 3 };
}

/**
 * Text-like: lines of dark glyphs on paper (white unless said), each glyph
 * a fixed random 5x7 bitmap drawn at 3x (15 x 21 pixels, 3 pixels apart),
 * with hard edges and no anti-aliasing, as a screenshot of text has.
 */
function text(width: number, height: number, paper = 255): Raw {
  const next = lcg(5);
  const glyphs = Array.from({ length: 26 }, () => Array.from({ length: 35 }, () => next() >>> 31 === 1));
  const data = Buffer.alloc(width * height * 3, paper);
  for (let top = 12, line = 0; top + 21 < height; top += 30, line++) {
    for (let left = 12, n = 0; left + 15 < width - 12; left += 18, n++) {
      const glyph = glyphs[(line * 7 + n * 3 + ((next() >>> 28) & 3)) % 26]!;
      if ((next() >>> 28) < 2) continue; // a space
      for (let gy = 0; gy < 21; gy++) {
        for (let gx = 0; gx < 15; gx++) {
          if (!glyph[Math.floor(gy / 3) * 5 + Math.floor(gx / 3)]) continue;
          const i = ((top + gy) * width + left + gx) * 3;
          data.fill(20, i, i + 3);
        }
      }
    }
  }
  return { data, width, height, channels: 3 };
}

/** The photo-like picture the other fingerprint tests use (smooth shapes and fine texture). */
async function photo(width: number, height: number): Promise<Raw> {
  const { data, info } = await sharp(await texturedPhoto(width, height, 'png')).raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: 3 };
}

/** As sharp decodes it: sRGB, 8 bits, RGB (alpha removed). */
const rgbOf = async (bytes: Uint8Array) => sharp(bytes).removeAlpha().raw().toBuffer();
/** Every fourth value of an RGBA decode. */
const alphaOf = async (bytes: Uint8Array) => Buffer.from((await sharp(bytes).ensureAlpha().raw().toBuffer()).filter((_, i) => i % 4 === 3));


const chunkTypes = (bytes: Uint8Array) => webp.blocks(bytes).map((b) => b.type);

describe('WebP', () => {
  const W = 512;
  const H = 384;
  it('lossy stays lossy (VP8), lossless stays lossless (VP8L), alpha is kept exactly; each carries the opt-out and verify finds the mark', async () => {
    const rgb = await photo(W, H);
    const rgba = Buffer.alloc(W * H * 4);
    for (let i = 0; i < W * H; i++) rgba.set([rgb.data[i * 3]!, rgb.data[i * 3 + 1]!, rgb.data[i * 3 + 2]!, (i * 7 + (i >> 9)) & 255], i * 4);
    const withAlpha = { data: rgba, width: W, height: H, channels: 4 as const };
    const inputs = {
      'lossy.webp': await rawImage(rgb).webp({ quality: 90 }).toBuffer(),
      'lossless.webp': await rawImage(rgb).webp({ lossless: true }).toBuffer(),
      'lossy-alpha.webp': await rawImage(withAlpha).webp({ quality: 90, alphaQuality: 100 }).toBuffer(),
      'lossless-alpha.webp': await rawImage(withAlpha).webp({ lossless: true }).toBuffer(),
    };
    // The inputs are what their names say.
    expect(chunkTypes(inputs['lossy.webp'])).toContain('VP8 ');
    expect(chunkTypes(inputs['lossless.webp'])).toContain('VP8L');
    expect(chunkTypes(inputs['lossy-alpha.webp'])).toEqual(expect.arrayContaining(['ALPH', 'VP8 ']));
    expect(chunkTypes(inputs['lossless-alpha.webp'])).toContain('VP8L');

    const results = await markAll(inputs, 'webp');
    for (const [name, input] of Object.entries(inputs)) {
      const { protected: p, output, verified } = results.get(name)!;
      expect(p.code, `${name}: ${p.error}`).toBeUndefined();
      const types = chunkTypes(output!);
      const lossless = name.startsWith('lossless');
      expect(types, name).toContain(lossless ? 'VP8L' : 'VP8 ');
      expect(types, name).not.toContain(lossless ? 'VP8 ' : 'VP8L');
      expect(types.includes('ALPH'), name).toBe(name === 'lossy-alpha.webp');
      const [before, after] = await Promise.all([sharp(input).metadata(), sharp(output!).metadata()]);
      expect([after.format, after.width, after.height, after.hasAlpha], name).toEqual(['webp', before.width, before.height, before.hasAlpha]);
      if (before.hasAlpha) expect((await alphaOf(output!)).equals(await alphaOf(input)), `${name}: alpha`).toBe(true);
      expect((await tool('webpinfo', ['-quiet', p.output!])).code, name).toBe(0);
      expect(verified, name).toMatchObject({ optedOut: true, fingerprint: { present: true } });
      const tags = await exiftool.readJson(p.output!, ['-XMP-plus:DataMining']);
      expect(tags['XMP-plus:DataMining'], name).toBe('DMI-PROHIBITED-AIMLTRAINING');
    }
  }, 180_000);
});

describe('animated images', () => {
  const W = 320;
  const H = 256;

  /** An APNG of two frames: acTL and the first fcTL before IDAT (the default image is frame 1), then fcTL + fdAT. */
  async function apng(): Promise<Buffer> {
    const still = await texturedPhoto(W, H, 'png');
    const second = await texturedPhoto(W, H, 'png', 9);
    const chunks = (file: Buffer) => png.blocks(file).map((b) => ({ type: b.type, bytes: file.subarray(b.offset, b.offset + b.length) }));
    const idatData = (file: Buffer) => Buffer.concat(chunks(file).filter((c) => c.type === 'IDAT').map((c) => c.bytes.subarray(8, c.bytes.length - 4)));
    const fctl = (sequence: number) => chunk('fcTL', Buffer.concat([u32be(sequence), u32be(W), u32be(H), u32be(0), u32be(0), Buffer.from([0, 10, 0, 100, 0, 0])]));
    const parts = chunks(still);
    const ihdr = parts.find((c) => c.type === 'IHDR')!.bytes;
    return Buffer.concat([
      PNG_SIGNATURE,
      ihdr,
      chunk('acTL', Buffer.concat([u32be(2), u32be(0)])),
      fctl(0),
      chunk('IDAT', idatData(still)),
      fctl(1),
      chunk('fdAT', Buffer.concat([u32be(2), idatData(second)])),
      chunk('IEND', Buffer.alloc(0)),
    ]);
  }

  it('an animated WebP and an APNG are refused in words (fingerprint_not_possible), and nothing is written', async () => {
    const frames = Buffer.concat([(await photo(W, H)).data, (await photo(W, H)).data.map((v) => 255 - v)]);
    const animatedWebp = await sharp(frames, { raw: { width: W, height: H * 2, channels: 3, pageHeight: H } }).webp({ quality: 90, loop: 0, delay: [100, 100] }).toBuffer();
    expect(chunkTypes(animatedWebp)).toEqual(expect.arrayContaining(['ANIM', 'ANMF']));
    expect((await sharp(animatedWebp).metadata()).pages).toBe(2);
    const animatedPng = await apng();
    expect(png.blocks(animatedPng).map((b) => b.type)).toEqual(['signature', 'IHDR', 'acTL', 'fcTL', 'IDAT', 'fcTL', 'fdAT', 'IEND']);
    const apngFile = join(dir, 'check-animated.png');
    writeFileSync(apngFile, animatedPng);
    expect((await tool('pngcheck', [apngFile])).stdout).toMatch(/OK: .*animated/);
    // libvips reads only the default image of an APNG and reports one page: the refusal cannot rest on it.
    expect((await sharp(animatedPng).metadata()).pages ?? 1).toBe(1);

    const results = await markAll({ 'animated.webp': animatedWebp, 'animated.png': animatedPng }, 'animated');
    for (const name of ['animated.webp', 'animated.png']) {
      const { protected: p, output } = results.get(name)!;
      expect(output, name).toBeUndefined();
      expect(p, name).toMatchObject({ code: 'fingerprint_not_possible', error: 'This image cannot be fingerprinted: it is animated' });
    }
  }, 120_000);
});

describe('a mark that verify would not find', () => {
  it('is not delivered: a page of text on white, as JPEG, is refused in words and nothing is written; without the fingerprint it is protected', async () => {
    // A fixed secret instead of a random one: text on white is found with some keys and not with others, and
    // with this one the file protect makes holds far fewer matching blocks than the 92 of 128 needed (55 when
    // this was written; the count moves with the codec libraries, so it is checked against the threshold).
    const data = join(dir, 'fixed-key');
    fixFingerprintKey(data, 'optmark test: text on white 0');
    const input = join(dir, 'page.jpg');
    writeFileSync(input, await rawImage(text(512, 384)).jpeg({ quality: 90 }).toBuffer());
    const out = join(dir, 'page-out');

    const refused = await optmark(['protect', '--fingerprint', '--json', '--out', out, input], { OPTMARK_DATA_DIR: data }, 120_000);
    expect(refused.code, refused.stderr).not.toBe(0);
    const failure = JSON.parse(refused.stdout.trim()) as { code: string; error: string };
    expect(failure.code).toBe('fingerprint_not_possible');
    const words = /^This image cannot be fingerprinted: the mark would not be found in it \((\d+) of (\d+) blocks matched\), as happens with text on white and other near-white or flat pictures; protect it without the fingerprint$/.exec(failure.error);
    expect(words, failure.error).not.toBeNull();
    const [matched, voted] = [Number(words![1]), Number(words![2])];
    expect(voted).toBeGreaterThan(0);
    expect(matched).toBeLessThan(criticalMatches(voted, 1e-6));
    expect(existsSync(join(out, 'page-optout.jpg'))).toBe(false);

    const plain = await optmark(['protect', '--json', '--out', out, input], { OPTMARK_DATA_DIR: data }, 120_000);
    expect(plain.code, plain.stderr).toBe(0);
    expect(JSON.parse(plain.stdout.trim())).toMatchObject({ output: join(out, 'page-optout.jpg') });
  }, 120_000);
});

describe('a picture too flat to carry the mark unseen', () => {
  it('is refused in words (too flat) and nothing is written: a pure gradient', async () => {
    const input = join(dir, 'smooth.png');
    writeFileSync(input, await rawImage(gradient(512, 384)).png().toBuffer());
    const out = join(dir, 'smooth-out');
    const refused = await optmark(['protect', '--fingerprint', '--json', '--out', out, input], env, 120_000);
    expect(refused.code, refused.stderr).not.toBe(0);
    const failure = JSON.parse(refused.stdout.trim()) as { code: string; error: string };
    expect(failure.code).toBe('fingerprint_not_possible');
    expect(failure.error).toMatch(/^This image cannot be fingerprinted: it is too flat to carry the mark unseen: 0\.0 % of it has texture the mark can hide in, and the fingerprint needs 15 % \(flat, white and clipped areas are never marked\)$/);
    expect(existsSync(join(out, 'smooth-optout.png'))).toBe(false);
  }, 120_000);
});

describe('PSNR of the delivered file (RGB: every R, G and B sample of sharp decodes, peak 255)', () => {
  const W = 512;
  const H = 384;
  /** What re-encoding costs the unmarked image when it is encoded the same way (the production encoder, in a slot of its own). */
  const decoder = createPixelDecoder({ maxPixels: 1e8, concurrency: 1, queue: 8 });
  const reencodeOnly = (original: Uint8Array) =>
    decoder.withSlot(original, async (held) => held.encodeLike(original, await held.decode(original, { stored: true })));

  it('PNG >= 42 dB; JPEG and WebP: the mark adds at most its own budget to the re-encoding loss', async () => {
    // No text: its flat paper takes no mark (visibility.ts), and on the glyphs' edges alone the
    // mark is not found, so a page of text is not delivered (above); a pure gradient is refused as too flat.
    const kinds: Record<string, Raw> = { noise: noise(W, H), gradient: gradient(W, H, 3), photo: await photo(W, H) };
    const inputs: Record<string, Buffer> = {};
    for (const [kind, raw] of Object.entries(kinds)) {
      inputs[`${kind}.png`] = await rawImage(raw).png().toBuffer();
      inputs[`${kind}.jpg`] = await rawImage(raw).jpeg({ quality: 90 }).toBuffer();
      inputs[`${kind}.webp`] = await rawImage(raw).webp({ quality: 90 }).toBuffer();
    }
    const results = await markAll(inputs, 'psnr');

    const rows: string[] = [];
    const measured: Array<{ name: string; delivered: number; reencoded: number; markMse: number }> = [];
    for (const [name, input] of Object.entries(inputs)) {
      const { protected: p, output, verified } = results.get(name)!;
      expect(p.code, `${name}: ${p.error}`).toBeUndefined();
      expect(verified?.fingerprint.present, name).toBe(true);
      const original = await rgbOf(input);
      const delivered = meanSquaredError(original, await rgbOf(output!));
      const reencoded = name.endsWith('.png') ? 0 : meanSquaredError(original, await rgbOf(await reencodeOnly(input)));
      measured.push({ name, delivered: psnrOfMse(delivered), reencoded: psnrOfMse(reencoded), markMse: delivered - reencoded });
      rows.push(
        `${name.padEnd(14)} delivered ${psnrOfMse(delivered).toFixed(2).padStart(6)} dB  re-encode only ${name.endsWith('.png') ? '   n/a' : psnrOfMse(reencoded).toFixed(2).padStart(6)} dB  ` +
          `difference ${name.endsWith('.png') ? '  n/a' : (psnrOfMse(reencoded) - psnrOfMse(delivered)).toFixed(2).padStart(5)} dB  mark's share ${psnrOfMse(delivered - reencoded).toFixed(2)} dB`,
      );
    }
    console.info(`PSNR of what protect --fingerprint delivers, against the original (RGB):\n${rows.join('\n')}`);

    for (const m of measured) {
      if (m.name.endsWith('.png')) {
        // Lossless: the delivered file is the marked pixels, which the embedder keeps at 42 dB or more.
        expect(m.delivered, m.name).toBeGreaterThanOrEqual(42);
        continue;
      }
      // Lossy: re-encoding and the mark add up (squared errors), so a difference in dB says little on its
      // own: over a near-lossless re-encode (gradient, text) the mark is nearly all the loss. What the mark
      // itself costs is the squared error the delivered file has beyond re-encoding alone; as a PSNR of its
      // own it stays within the embedder's bound (42 dB), less 1.5 dB for the encoder's reaction to the mark
      // (the file re-encoded at the original's quality, here 90, no longer at 95). Measured with this key:
      // 40.96 (noise.webp) to 42.33 dB; over a near-lossless re-encode the marked file can even come out closer
      // to the original than the re-encoding alone (the gradient's WebP: the mark's grain dithers the encoder),
      // and then the mark costs nothing.
      if (m.markMse > 0) expect(psnrOfMse(m.markMse), m.name).toBeGreaterThanOrEqual(40.5);
      // Where re-encoding alone already costs as much as a mark at the bound (42 dB or under: noise, the
      // photo), the delivered file stays within 3 dB of it (a mark of exactly that cost would take 3 dB).
      // Measured: 0.2 to 2.3 dB.
      if (m.reencoded <= 42) expect(m.reencoded - m.delivered, m.name).toBeLessThanOrEqual(3);
    }
  }, 240_000);
});
