/**
 * Provenance tags end to end: what keeps a tag valid (adding XMP with a
 * standard tool), what breaks it (pixels, EXIF, the value, another image),
 * other deployments, rotation, hostile tags, and a check with `jose` alone.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as zlib from 'node:zlib';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inspect, protect, verify } from '../../src/index.js';
import { createProvenance, keysFromJwks, type Provenance } from '../../src/app/provenance.js';
import { SigningKeys } from '../../src/adapters/signing-keys.js';
import { parseXmp } from '../../src/core/xmp/document.js';
import { SERVICE_TAG } from '../../src/core/xmp/namespaces.js';
import { findProperty } from '../../src/core/xmp/properties.js';
import { sniff } from '../../src/core/formats/sniff.js';
import { parseTag } from '../../src/core/provenance/tag.js';
import { corpusFile } from '../support/corpus.js';
import { ExifTool } from '../support/exiftool.js';

let dir: string;
let exiftool: ExifTool;
let ours: Provenance;
let keys: SigningKeys;
const clock = { now: () => new Date('2026-11-22T10:00:00Z') };

function deployment(name: string): { keys: SigningKeys; provenance: Provenance } {
  const ring = SigningKeys.open(join(dir, name, 'signing-keys.json'));
  return { keys: ring, provenance: createProvenance({ keys: ring, issuer: () => `https://${name}.example`, clock }) };
}

const FILES = {
  jpeg: corpusFile('exiftool/XMP.jpg').bytes,
  png: corpusFile('exiv2/ReaganSmallPng.png').bytes,
  webp: corpusFile('pillow/flower2.webp').bytes,
  'simple webp': corpusFile('libwebp-test-data/test.webp').bytes,
};

function tagOf(bytes: Uint8Array): string {
  const packet = sniff(bytes).readXmp(bytes).packets[0]!.text;
  return findProperty(parseXmp(packet), SERVICE_TAG.uri, SERVICE_TAG.local)[0]!.value!;
}

/** Let ExifTool edit a copy of `bytes`; returns the edited bytes. */
async function withExifTool(bytes: Uint8Array, args: string[], name: string): Promise<Buffer> {
  const file = join(dir, name);
  writeFileSync(file, bytes);
  const { stderr } = await exiftool.run([...args, '-overwrite_original', file]);
  expect(stderr).toBe('');
  return readFileSync(file);
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'optmark-provenance-'));
  exiftool = new ExifTool();
  ({ keys, provenance: ours } = deployment('ours'));
});
afterAll(async () => {
  await exiftool.close();
  rmSync(dir, { recursive: true, force: true });
});

describe.each(Object.entries(FILES))('a tag on a %s file', (kind, input) => {
  let marked: Uint8Array;
  beforeAll(() => {
    marked = protect(input, { signer: ours.signer }).bytes;
  });

  it('is present, verifiable and valid, and protecting again changes nothing', () => {
    expect(verify(marked, { provenance: ours }).provenance).toEqual({ present: true, valid: true, verifiable: true });
    expect(Buffer.from(protect(marked, { signer: ours.signer }).bytes).equals(Buffer.from(marked))).toBe(true);
  });

  it('stays valid when ExifTool adds an unrelated XMP property', async () => {
    const edited = await withExifTool(marked, ['-XMP-dc:Title=Harbour at dusk'], `${kind}-title`);
    expect(inspect(edited).details.dataMining).toHaveLength(1);
    expect(verify(edited, { provenance: ours }).provenance).toEqual({ present: true, valid: true, verifiable: true });
  });

  it('is invalid once ExifTool changes the Data Mining value', async () => {
    const edited = await withExifTool(marked, ['-XMP-plus:DataMining#=DMI-PROHIBITED'], `${kind}-value`);
    expect(verify(edited, { provenance: ours })).toMatchObject({ optedOut: true, provenance: { present: true, valid: false, verifiable: true } });
  });

  it('is invalid once one byte of the image data changes', () => {
    const blocks = sniff(marked).blocks(marked);
    const data = blocks.filter((b) => b.kind === 'other' && /ECS|IDAT|VP8/.test(b.type)).at(-1)!;
    const edited = Buffer.from(marked);
    const at = data.offset + data.length - 20;
    edited[at] = edited[at]! ^ 0x01;
    // Keep PNG's CRC right, so the change is one of content, not of a broken container.
    if (data.type === 'IDAT') {
      const crc = (zlib.crc32 as (b: Uint8Array) => number)(edited.subarray(data.offset + 4, data.offset + data.length - 4));
      edited.writeUInt32BE(crc, data.offset + data.length - 4);
    }
    expect(verify(edited, { provenance: ours }).provenance).toEqual({ present: true, valid: false, verifiable: true });
  });

  it('is not verifiable by another deployment, and not valid either', () => {
    const other = deployment(`other-${kind.replace(' ', '-')}`).provenance;
    expect(verify(marked, { provenance: other }).provenance).toEqual({ present: true, valid: false, verifiable: false });
  });
});



describe('tags and non-XMP metadata', () => {
  it('an EXIF edit invalidates the tag (JPEG and WebP)', async () => {
    for (const [kind, input] of [['jpeg', FILES.jpeg], ['webp', FILES.webp]] as const) {
      const marked = protect(input, { signer: ours.signer }).bytes;
      const edited = await withExifTool(marked, ['-EXIF:Artist=Someone else'], `${kind}-exif`);
      expect(verify(edited, { provenance: ours }).provenance, kind).toEqual({ present: true, valid: false, verifiable: true });
    }
  });

  it('a tag copied into another image is invalid there', () => {
    const tagged = protect(FILES.jpeg, { signer: ours.signer }).bytes;
    const tag = tagOf(tagged);
    // Another JPEG, marked with the same value, carrying the first one's tag.
    const other = protect(corpusFile('exiv2/smiley1.jpg').bytes).bytes;
    const packet = sniff(other).readXmp(other).packets[0]!.text.replace(
      '</rdf:RDF>',
      `<rdf:Description rdf:about="" xmlns:optmark="${SERVICE_TAG.uri}"><optmark:ServiceTag>${tag}</optmark:ServiceTag></rdf:Description></rdf:RDF>`,
    );
    const forged = sniff(other).writeXmp(other, { packet });
    expect(verify(forged, { provenance: ours })).toMatchObject({ optedOut: true, provenance: { present: true, valid: false, verifiable: true } });
  });
});

describe('key rotation and the JWKS', () => {
  it('old tags verify after a rotation, new ones use the new key, and the JWKS lists both', () => {
    const { keys: ring, provenance } = deployment('rotating');
    const before = protect(FILES.png, { signer: provenance.signer }).bytes;
    const oldKid = ring.active.kid;
    const rotated = ring.rotate();
    expect(rotated.kid).not.toBe(oldKid);
    const after = protect(FILES.jpeg, { signer: provenance.signer }).bytes;
    expect(parseTag(tagOf(after))!.kid).toBe(rotated.kid);
    expect(verify(before, { provenance }).provenance.valid).toBe(true);
    expect(verify(after, { provenance }).provenance.valid).toBe(true);
    expect(ring.jwks().keys.map((k) => k.kid).sort()).toEqual([oldKid, rotated.kid].sort());
    // The retired key keeps only its public half.
    expect(JSON.parse(readFileSync(ring.path, 'utf8')).keys.filter((k: { privateKey?: string }) => k.privateKey)).toHaveLength(1);
  });

  it('a JWKS alone (another deployment, offline) verifies the tags it published', () => {
    const jwks = JSON.parse(JSON.stringify(keys.jwks()));
    const offline = createProvenance({ keys: keysFromJwks(jwks), issuer: () => 'unused', clock });
    const marked = protect(FILES.webp, { signer: ours.signer }).bytes;
    expect(verify(marked, { provenance: offline }).provenance).toEqual({ present: true, valid: true, verifiable: true });
  });

  it('jose verifies our tag with our JWKS, and the digest recomputed here matches', async () => {
    const marked = Buffer.from(protect(FILES.jpeg, { signer: ours.signer }).bytes);
    const jwks = createLocalJWKSet(JSON.parse(JSON.stringify(keys.jwks())));
    const { payload, protectedHeader } = await jwtVerify(tagOf(marked), jwks, { issuer: 'https://ours.example', algorithms: ['EdDSA'] });
    expect(protectedHeader.alg).toBe('EdDSA');
    expect(payload.dmi).toBe('http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED-AIMLTRAINING');
    // docs/provenance.md: for JPEG, every byte except the XMP APP1 segments before the first SOS.
    const kept: Buffer[] = [marked.subarray(0, 2)];
    let at = 2;
    while (marked[at + 1] !== 0xda) {
      const length = marked.readUInt16BE(at + 2);
      const segment = marked.subarray(at, at + 2 + length);
      const xmp = marked[at + 1] === 0xe1 && /^http:\/\/ns\.adobe\.com\/(xap\/1\.0\/|xmp\/extension\/)\0/.test(segment.subarray(4, 40).toString('latin1'));
      if (!xmp) kept.push(segment);
      at += 2 + length;
    }
    kept.push(marked.subarray(at));
    expect(payload.sha256).toBe(createHash('sha256').update(Buffer.concat(kept)).digest('base64url'));
  });
});

describe('hostile tags', () => {
  const file = (tag: string) => {
    const base = protect(FILES.jpeg).bytes;
    const packet = sniff(base).readXmp(base).packets[0]!.text.replace(
      '</rdf:RDF>',
      `<rdf:Description rdf:about="" xmlns:optmark="${SERVICE_TAG.uri}"><optmark:ServiceTag>${tag}</optmark:ServiceTag></rdf:Description></rdf:RDF>`,
    );
    return sniff(base).writeXmp(base, { packet });
  };
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const real = () => tagOf(protect(FILES.jpeg, { signer: ours.signer }).bytes);

  it.each([
    ['huge', () => 'A'.repeat(60_000)],
    ['not base64', () => 'not a tag at all!'],
    ['two parts', () => `${b64({ alg: 'EdDSA' })}.${b64({})}`],
    ['alg none', () => `${b64({ alg: 'none', kid: parseTag(real())!.kid })}.${real().split('.')[1]}.`],
    ['wrong alg', () => { const [, p, s] = real().split('.'); return `${b64({ alg: 'HS256', kid: parseTag(real())!.kid, typ: 'JWT' })}.${p}.${s}`; }],
    ['a bad signature', () => { const [h, p] = real().split('.'); return `${h}.${p}.${Buffer.alloc(64).toString('base64url')}`; }],
    ['a changed payload', () => { const [h, , s] = real().split('.'); return `${h}.${b64({ ...parseTag(real())!.claims, iss: 'https://evil.example' })}.${s}`; }],
  ])('%s: present, not valid, no error', (_, make) => {
    const tag = make();
    const bytes = file(tag);
    const result = verify(bytes, { provenance: ours });
    expect(result.provenance.present).toBe(true);
    expect(result.provenance.valid).toBe(false);
    // Parsing alone stays far under a millisecond, whatever the tag.
    const started = performance.now();
    for (let i = 0; i < 1000; i++) parseTag(tag);
    expect((performance.now() - started) / 1000).toBeLessThan(0.1);
  });
});
