import type { ImageFormat } from '../../errors.js';
import { join } from '../bytes/assemble.js';

/**
 * A byte range of a container file. Vocabulary, fixed for every handler:
 * `offset` is the first byte of the block (marker, length, type included) and
 * `length` covers the whole block (payload, CRC and padding included).
 * A file's blocks are ordered, do not overlap, and cover it from first to last byte.
 *
 * `kind`:
 * - `xmp`: a block that carries XMP (JPEG standard and extension APP1, PNG
 *   XMP text chunk, WebP `XMP ` chunk). Writers replace, insert or drop these.
 * - `header`: container bookkeeping an XMP edit must update, and only in
 *   documented fields: the WebP RIFF header (file size), the WebP VP8X chunk
 *   (the XMP flag bit), and each 4-byte absolute offset of a JPEG's AFCP
 *   trailer (formats/afcp.ts). No other block ever changes.
 * - `other`: everything else, copied byte for byte.
 */
export type BlockKind = 'xmp' | 'header' | 'other';

export interface Block {
  readonly kind: BlockKind;
  /** 'APP1', 'SOS', 'ECS' (entropy-coded data), 'IDAT', 'iTXt', 'VP8X', 'XMP ', 'trailer', ... */
  readonly type: string;
  readonly offset: number;
  readonly length: number;
}

/** One standard XMP packet as the container holds it, decoded to text but not parsed. */
export interface RawXmpPacket {
  readonly text: string;
  readonly block: Block;
}

/** One JPEG Extended XMP chunk (an APP1 `http://ns.adobe.com/xmp/extension/` segment). */
export interface ExtendedXmpChunk {
  /** 32 characters as stored; a valid GUID is uppercase hex. */
  readonly guid: string;
  /** Length of the whole extended serialisation, as this chunk declares it. */
  readonly fullLength: number;
  /** Where this chunk's data sits in the whole serialisation. */
  readonly offset: number;
  readonly data: Uint8Array;
  readonly block: Block;
}

export interface RawXmp {
  /** Standard packets in file order. More than one is an ambiguity the caller must handle. */
  readonly packets: readonly RawXmpPacket[];
  /** JPEG only: every Extended XMP chunk, of any GUID, in file order. */
  readonly extendedChunks: readonly ExtendedXmpChunk[];
  /** Tolerated deviations worth telling a user (XMP after IDAT, a wrong chunk id, ...). */
  readonly warnings: readonly string[];
  /**
   * The XMP sits where some readers miss it (those deviations): writing it
   * back, even unchanged, moves it to the canonical place.
   */
  readonly misplaced: boolean;
}

export interface XmpToWrite {
  /** The standard packet, complete (wrapper and padding included). */
  readonly packet: string;
  /**
   * JPEG only: a new Extended XMP serialisation. Every extension chunk whose
   * GUID is `replaces` is dropped and the new chunks follow the standard packet.
   * Without this field, existing extension chunks are kept byte for byte.
   */
  readonly extended?: { readonly guid: string; readonly data: Uint8Array; readonly replaces?: string };
}

/**
 * A container handler moves bytes and never interprets XMP. It is a stateless
 * object; every method works on a whole file in memory.
 *
 * Methods that parse the container (`blocks`, `readXmp`, `writeXmp`,
 * `removeXmp`) validate it first and throw CorruptImageError when it is
 * broken, InvalidXmpError when an XMP block cannot be decoded.
 */
export interface ContainerHandler {
  readonly format: ImageFormat;
  readonly mimeType: string;
  /** File extension of this format, without the dot. */
  readonly extension: string;
  /** Largest standard packet (UTF-8 bytes) one XMP block may hold when we write. */
  readonly maxPacketBytes: number;
  /** Whether packets over `maxPacketBytes` can spill into Extended XMP. */
  readonly supportsExtendedXmp: boolean;
  /** Cheap magic-byte test. Never throws. */
  canHandle(bytes: Uint8Array): boolean;
  blocks(bytes: Uint8Array): Block[];
  readXmp(bytes: Uint8Array): RawXmp;
  /** Replace the XMP block in place, or insert one at the canonical spot. */
  writeXmp(bytes: Uint8Array, xmp: XmpToWrite): Uint8Array;
  /** Drop every XMP block (standard and extended). */
  removeXmp(bytes: Uint8Array): Uint8Array;
  /** Parse once, then read and write without parsing again (the protect path). */
  open(bytes: Uint8Array): OpenContainer;
}

export interface OpenContainer {
  readonly blocks: readonly Block[];
  readonly xmp: RawXmp;
  write(xmp: XmpToWrite): Uint8Array;
  /**
   * The file `write` makes, as the views that make it, in order (ranges of
   * the input and the new blocks), nothing copied: valid while the input is
   * unchanged.
   */
  writeParts(xmp: XmpToWrite): readonly Uint8Array[];
}

/** What a format supplies; `defineHandler` builds the ContainerHandler from it. */
export interface ContainerFormat<Layout extends { readonly blocks: Block[] }>
  extends Pick<ContainerHandler, 'format' | 'mimeType' | 'extension' | 'maxPacketBytes' | 'supportsExtendedXmp' | 'canHandle'> {
  /** Validate the whole container and locate its blocks. */
  scan(bytes: Uint8Array): Layout;
  /**
   * A cheaper scan that is enough to read and write the metadata (it may
   * leave image data as one opaque block). Defaults to `scan`.
   */
  scanMetadata?(bytes: Uint8Array): Layout;
  read(bytes: Uint8Array, layout: Layout): RawXmp;
  /** The new file as its parts in order (views on `bytes` where it is unchanged; see OpenContainer.writeParts). */
  write(bytes: Uint8Array, layout: Layout, xmp: XmpToWrite): readonly Uint8Array[];
  remove(bytes: Uint8Array, layout: Layout): Uint8Array;
}

export function defineHandler<Layout extends { readonly blocks: Block[] }>(f: ContainerFormat<Layout>): ContainerHandler {
  const metadataScan = (bytes: Uint8Array) => (f.scanMetadata ?? f.scan)(bytes);
  return {
    format: f.format,
    mimeType: f.mimeType,
    extension: f.extension,
    maxPacketBytes: f.maxPacketBytes,
    supportsExtendedXmp: f.supportsExtendedXmp,
    canHandle: (bytes) => f.canHandle(bytes),
    blocks: (bytes) => f.scan(bytes).blocks,
    readXmp: (bytes) => f.read(bytes, metadataScan(bytes)),
    writeXmp: (bytes, xmp) => join(f.write(bytes, metadataScan(bytes), xmp)),
    removeXmp: (bytes) => f.remove(bytes, metadataScan(bytes)),
    open(bytes) {
      const layout = metadataScan(bytes);
      return { blocks: layout.blocks, xmp: f.read(bytes, layout), write: (xmp) => join(f.write(bytes, layout, xmp)), writeParts: (xmp) => f.write(bytes, layout, xmp) };
    },
  };
}

/** Hard limit on one XMP packet's size, for every container (see docs/formats.md). */
export const MAX_XMP_BYTES = 8 * 1024 * 1024;
