/**
 * Structure-aware mutations of seed images, as fast-check arbitraries. A
 * case is a seed plus a few operations on its parsed structure (JPEG
 * segments, PNG chunks, RIFF chunks, the XMP packet, Extended XMP parts);
 * the bytes are derived from that, so fast-check shrinks the operations and
 * a failure prints as what was done to which seed.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { clone, parse, pngChunk, serialise, type Format, type Parts } from './containers.js';
import { applyField } from './header-fields.js';
import {
  editExtensionPart,
  embedPacket,
  encodePacket,
  existingPacket,
  extensionSegments,
  isExtensionApp1,
  LENGTH_LIES,
  lie,
  placeExtension,
  type LengthLie,
  type PartEdit,
} from './embed-xmp.js';
import { applyXmpEdits, TEMPLATES, xmpEdit, type XmpEdit } from './xmp-mutations.js';
import { bareXmp, md5Guid } from '../support/build.js';

export interface Seed {
  readonly name: string;
  readonly parts: Parts;
}

export function makeSeed(name: string, bytes: Buffer): Seed {
  return { name, parts: parse(bytes) };
}

export type Op =
  | { op: 'drop'; at: number }
  | { op: 'duplicate'; at: number }
  | { op: 'swap'; a: number; b: number }
  | { op: 'insert'; at: number; kind: number; payload: Uint8Array }
  | { op: 'graft'; at: number; seed: number; item: number }
  | { op: 'length'; at: number; lie: LengthLie }
  | { op: 'flip'; at: number; offset: number; xor: number }
  | { op: 'resize'; at: number; by: number }
  | { op: 'field'; kind: number; value: number }
  | { op: 'xmp'; template: number; edits: XmpEdit[]; placement: number; encoding: number }
  | { op: 'extended'; synth: boolean; template: number; edits: XmpEdit[]; chunk: number; place: number; parts: PartEdit[] };

/** The last word on the bytes: a damaged signature (the ~10% that tests the sniffer) and truncation. */
export interface Finish {
  signature?: { kind: number; value: number };
  truncate?: { permille: number } | { fromEnd: number };
}

export interface CaseSpec {
  readonly seed: string;
  readonly ops: readonly Op[];
  /** PNG: recompute every CRC, so that mutations get past the CRC check. */
  readonly fixCrc: boolean;
  readonly finish: Finish;
}

export interface FuzzCase extends CaseSpec {
  readonly format: Format;
  readonly bytes: Buffer;
  /** Options the property uses for this case. */
  readonly sign: boolean;
  readonly value: number;
}

export interface Limits {
  /** Largest XMP packet text a mutation builds. */
  readonly maxXmpBytes: number;
}

/** A list of items of any format, edited generically. */
type Items = Array<object>;

function itemsOf(parts: Parts): Items {
  return parts.format === 'jpeg' ? parts.segments : parts.chunks;
}

function payloadKey(parts: Parts): 'payload' | 'data' {
  return parts.format === 'jpeg' ? 'payload' : 'data';
}

const MARKERS = [0xe0, 0xe1, 0xe2, 0xed, 0xee, 0xfe, 0xdb, 0xc4, 0xc0, 0xc2, 0xda, 0xdd, 0xd9, 0xd8, 0xd0, 0x01, 0x00, 0xff, 0xc8, 0xdc];
const PNG_TYPES = ['IHDR', 'IDAT', 'IEND', 'PLTE', 'tRNS', 'iTXt', 'zTXt', 'tEXt', 'acTL', 'fcTL', 'fdAT', 'eXIf', 'iCCP', 'caBX', 'abcd', 'a b!', '\0\0\0\0'];
const FOURCCS = ['VP8X', 'VP8 ', 'VP8L', 'ALPH', 'ANIM', 'ANMF', 'ICCP', 'EXIF', 'XMP ', 'XMP\0', 'C2PA', 'abcd', '\0\0\0\0'];

function newItem(format: Format, kind: number, payload: Uint8Array): object {
  const data = Buffer.from(payload);
  if (format === 'jpeg') {
    const marker = MARKERS[kind % MARKERS.length]!;
    return { marker, payload: data, standalone: marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7) };
  }
  if (format === 'png') return pngChunk(PNG_TYPES[kind % PNG_TYPES.length]!, data);
  return { fourcc: FOURCCS[kind % FOURCCS.length]!, data };
}

function applyOp(parts: Parts, op: Op, seeds: readonly Seed[], limits: Limits): void {
  const items = itemsOf(parts);
  const key = payloadKey(parts);
  const nth = (n: number) => (items.length ? n % items.length : -1);
  switch (op.op) {
    case 'drop':
      if (items.length) items.splice(nth(op.at), 1);
      return;
    case 'duplicate':
      if (items.length) items.splice(nth(op.at), 0, { ...items[nth(op.at)] });
      return;
    case 'swap': {
      if (!items.length) return;
      const [a, b] = [nth(op.a), nth(op.b)];
      [items[a], items[b]] = [items[b]!, items[a]!];
      return;
    }
    case 'insert':
      items.splice(op.at % (items.length + 1), 0, newItem(parts.format, op.kind, op.payload));
      return;
    case 'graft': {
      const donors = seeds.filter((s) => s.parts.format === parts.format);
      const donor = itemsOf(donors[op.seed % donors.length]!.parts);
      if (donor.length) items.splice(op.at % (items.length + 1), 0, { ...donor[op.item % donor.length] });
      return;
    }
    case 'length': {
      if (!items.length) return;
      const item = items[nth(op.at)] as { length?: number; size?: number; payload?: Buffer; data?: Buffer };
      const actual = (item[key]?.length ?? 0) + (parts.format === 'jpeg' ? 2 : 0);
      if (parts.format === 'webp') item.size = lie(actual, op.lie);
      else item.length = lie(actual, op.lie);
      return;
    }
    case 'flip': {
      const item = items[nth(op.at)] as Record<string, Buffer> | undefined;
      const data = item?.[key];
      if (!item || !data?.length) return;
      const copy = Buffer.from(data);
      copy[op.offset % copy.length]! ^= op.xor;
      item[key] = copy;
      return;
    }
    case 'resize': {
      const item = items[nth(op.at)] as Record<string, Buffer> | undefined;
      const data = item?.[key];
      if (!item || !data) return;
      item[key] = op.by < 0 ? data.subarray(0, Math.max(0, data.length + op.by)) : Buffer.concat([data, Buffer.alloc(op.by, 0xa5)]);
      return;
    }
    case 'field':
      applyField(parts, op.kind, op.value);
      return;
    case 'xmp': {
      const base = op.template === 0 ? (existingPacket(parts) ?? TEMPLATES[0]!) : TEMPLATES[op.template % TEMPLATES.length]!;
      const text = applyXmpEdits(base, op.edits, limits.maxXmpBytes);
      embedPacket(parts, encodePacket(text, op.encoding), op.placement);
      return;
    }
    case 'extended':
      if (parts.format === 'jpeg') applyExtended(parts, op, limits);
  }
}

const EXTENDED_TEMPLATE = (body: string) =>
  bareXmp(`<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:plus="http://ns.useplus.org/ldf/xmp/1.0/">${body}</rdf:Description>`);
const EXTENDED_BODIES = [
  `<dc:description>${'extended '.repeat(200)}</dc:description>`,
  '<plus:DataMining>http://ns.useplus.org/ldf/vocab/DMI-ALLOWED</plus:DataMining>',
  '<plus:DataMining>http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED</plus:DataMining><dc:rights>r</dc:rights>',
];
const CHUNK_SIZES = [65458, 8000, 1000, 64];

/** Extended XMP: build a fresh, valid set of parts (or keep the seed's), then edit some of them. */
function applyExtended(parts: Extract<Parts, { format: 'jpeg' }>, op: Extract<Op, { op: 'extended' }>, limits: Limits): void {
  if (op.synth || !parts.segments.some(isExtensionApp1)) {
    const text = applyXmpEdits(EXTENDED_TEMPLATE(EXTENDED_BODIES[op.template % EXTENDED_BODIES.length]!), op.edits, limits.maxXmpBytes);
    const data = Buffer.from(text, 'utf8');
    const guid = md5Guid(data);
    const chunk = Math.max(CHUNK_SIZES[op.chunk % CHUNK_SIZES.length]!, Math.ceil(data.length / 200));
    const standard = applyXmpEdits(existingPacket(parts) ?? TEMPLATES[op.template % TEMPLATES.length]!, [{ op: 'guid', value: guid, form: 'element' }], limits.maxXmpBytes);
    embedPacket(parts, Buffer.from(standard, 'utf8'), 0);
    placeExtension(parts, extensionSegments(guid, data, chunk), op.place);
  }
  for (const edit of op.parts) editExtensionPart(parts, edit);
}

const OTHER_MAGIC = ['GIF89a', 'II*\0', 'MM\0*', '\0\0\0\x0cftypavif', '%PDF-1.7', '<svg ', '<?xml ', 'BM', '\xff\x0a', 'RIFF\0\0\0\0WAVE'];

function finish(bytes: Buffer, f: Finish, format: Format): Buffer {
  let out = bytes;
  if (f.signature) {
    const { kind, value } = f.signature;
    out = Buffer.from(out);
    switch (kind % 5) {
      case 0:
        if (out.length) out[value % Math.min(12, out.length)]! ^= 1 + ((value >>> 4) % 255);
        break;
      case 1:
        out = Buffer.concat([Buffer.from(OTHER_MAGIC[value % OTHER_MAGIC.length]!, 'latin1'), out.subarray(format === 'jpeg' ? 3 : 8)]);
        break;
      case 2: // what a text-mode transfer does to the PNG signature, and the like
        out = Buffer.from(out.toString('latin1').replace('\r\n', '\n').replace('\x89', value % 2 ? '\x09' : ''), 'latin1');
        break;
      case 3:
        out = out.subarray(0, value % 13);
        break;
      default:
        out = Buffer.alloc(0);
    }
  }
  if (f.truncate) {
    const keep = 'permille' in f.truncate ? Math.floor((out.length * f.truncate.permille) / 1000) : out.length - f.truncate.fromEnd;
    out = out.subarray(0, Math.max(0, keep));
  }
  return out;
}

/** The bytes a case stands for. Pure: the same spec always gives the same bytes. */
export function build(spec: CaseSpec, seeds: readonly Seed[], limits: Limits): Buffer {
  const seed = seeds.find((s) => s.name === spec.seed);
  if (!seed) throw new Error(`unknown seed ${spec.seed}`);
  const parts = clone(seed.parts);
  for (const op of spec.ops) applyOp(parts, op, seeds, limits);
  return finish(serialise(parts, { fixCrc: spec.fixCrc }), spec.finish, seed.parts.format);
}

const index = fc.nat({ max: 1000 });
const byteValue = fc.oneof(fc.constantFrom(0, 1, 0x3fff, 0x4000, 0xffff, 0xffffff, 0x1000000, 0xffffffff), fc.nat());
const partEdit: fc.Arbitrary<PartEdit> = fc.record({ part: index, kind: fc.nat({ max: 99 }), value: fc.nat() });
const xmpEdits = fc.array(xmpEdit, { minLength: 0, maxLength: 3 });

function opArbitrary(format: Format, donors: number): fc.Arbitrary<Op> {
  return fc.oneof(
    { weight: 2, arbitrary: fc.record({ op: fc.constant('drop' as const), at: index }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('duplicate' as const), at: index }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('swap' as const), a: index, b: index }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('insert' as const), at: index, kind: fc.nat({ max: 99 }), payload: fc.uint8Array({ maxLength: 48 }) }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('graft' as const), at: index, seed: fc.nat({ max: Math.max(0, donors - 1) }), item: index }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('length' as const), at: index, lie: fc.constantFrom(...LENGTH_LIES) }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('flip' as const), at: index, offset: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('resize' as const), at: index, by: fc.integer({ min: -64, max: 64 }) }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('field' as const), kind: fc.nat({ max: 99 }), value: byteValue }) },
    {
      weight: 6,
      arbitrary: fc.record({ op: fc.constant('xmp' as const), template: fc.nat({ max: 20 }), edits: xmpEdits, placement: fc.nat({ max: 99 }), encoding: fc.nat({ max: 99 }) }),
    },
    {
      weight: format === 'jpeg' ? 3 : 0,
      arbitrary: fc.record({
        op: fc.constant('extended' as const),
        synth: fc.boolean(),
        template: fc.nat({ max: 20 }),
        edits: xmpEdits,
        chunk: fc.nat({ max: 9 }),
        place: fc.nat({ max: 9 }),
        parts: fc.array(partEdit, { maxLength: 2 }),
      }),
    },
  );
}

/** 1 in 10 damages the signature, about 1 in 7 is truncated; both shrink away first. */
const finishArbitrary: fc.Arbitrary<Finish> = fc
  .record({
    roll: fc.nat({ max: 99 }),
    signature: fc.record({ kind: fc.nat({ max: 99 }), value: fc.nat() }),
    truncate: fc.oneof(fc.record({ permille: fc.nat({ max: 999 }) }), fc.record({ fromEnd: fc.integer({ min: 1, max: 16 }) })),
  })
  .map(({ roll, signature, truncate }) => ({ ...(roll >= 90 ? { signature } : {}), ...(roll % 7 === 6 ? { truncate } : {}) }));

/**
 * Mutated cases built from `seeds` of one format. About 9 in 10 keep their
 * signature, so that the parsers, not the sniffer, do the work.
 */
export function fuzzCase(seeds: readonly Seed[], format: Format, limits: Limits): fc.Arbitrary<FuzzCase> {
  const mine = seeds.filter((s) => s.parts.format === format);
  return fc
    .record({
      seed: fc.constantFrom(...mine.map((s) => s.name)),
      ops: fc.array(opArbitrary(format, mine.length), { minLength: 1, maxLength: 4 }),
      fixCrc: fc.nat({ max: 9 }).map((n) => n > 0),
      finish: finishArbitrary,
      sign: fc.boolean(),
      value: fc.nat({ max: 6 }),
    })
    .map((spec) => {
      const bytes = build(spec, seeds, limits);
      return Object.assign({ ...spec, format, bytes }, { [fc.toStringMethod]: () => describeCase({ ...spec, format, bytes }) });
    });
}

export function shortHash(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex').slice(0, 10);
}

/** One line for a failure report: seed, operations and the size and hash of the bytes (not the bytes). */
function describeCase(c: Omit<FuzzCase, 'sign' | 'value'> & Partial<FuzzCase>): string {
  const ops = JSON.stringify(c.ops, (_k, v: unknown) => (v instanceof Uint8Array ? `<${v.length} bytes>` : v));
  return `${c.format} seed=${c.seed} ops=${ops} fixCrc=${c.fixCrc} finish=${JSON.stringify(c.finish)} sign=${c.sign} -> ${c.bytes.length} bytes sha256:${shortHash(c.bytes)}`;
}

/** A case's recipe as JSON, for a parent process to rebuild the bytes with `build`. */
export function specToJson(c: CaseSpec): string {
  const { seed, ops, fixCrc, finish } = c;
  return JSON.stringify({ seed, ops, fixCrc, finish }, (_k, v: unknown) => (v instanceof Uint8Array ? { bytes: [...v] } : v));
}

export function specFromJson(json: string): CaseSpec {
  const revive = (_k: string, v: unknown) => (v && typeof v === 'object' && 'bytes' in v ? Uint8Array.from((v as { bytes: number[] }).bytes) : v);
  return JSON.parse(json, revive) as CaseSpec;
}
