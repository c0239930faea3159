/**
 * The certificates of service records, as PDF (pdf-lib: pure JavaScript, no
 * native code, no fonts to install): one record, or a batch (a summary of
 * its files, then each record). A record's certificate shows a thumbnail of
 * the marked image, the file's name, both SHA-256, the date (UTC), the value
 * with its IPTC label, the layers, the key id, the two signed records (JWS)
 * and how anyone checks them with the deployment's JWKS.
 *
 * The text uses the PDF standard fonts (Helvetica, Courier), whose encoding
 * (WinAnsi) covers Western European scripts: a character outside it (a
 * Japanese file name, an emoji) is printed as "?"; the private JWS printed on
 * the same page holds the name exactly.
 */
import { PDFDocument, StandardFonts, rgb, type PDFFont, type PDFImage, type PDFPage } from 'pdf-lib';
import type { CertificateContext, CertificateMaker, CertificateRecord, RecordLayer } from '../app/records/ports.js';

const A4 = { width: 595.28, height: 841.89 };
const MARGIN = 56;
const TEXT = rgb(0.1, 0.11, 0.13);
const MUTED = rgb(0.31, 0.35, 0.38);
const RULE = rgb(0.54, 0.58, 0.62);
const THUMB_BOX = 120;

/** `2026-11-22 10:00:00 UTC`: the same in every reader's language. */
export const utcText = (date: Date): string => `${date.toISOString().slice(0, 19).replace('T', ' ')} UTC`;

function layerWords(layers: readonly RecordLayer[]): string {
  if (layers.length === 0) return 'none besides the opt-out and the provenance tag';
  return layers
    .map((l) => `experimental in-pixel fingerprint, ${l.state === 'added' ? 'added' : 'found already in the pixels'}${l.keyVersion === null ? '' : ` (fingerprint secret version ${l.keyVersion})`}`)
    .join('; ');
}

/** A document being written top to bottom, a new page whenever the next line does not fit. */
class Writer {
  page!: PDFPage;
  y = 0;
  readonly pages: PDFPage[] = [];

  constructor(
    readonly doc: PDFDocument,
    readonly fonts: { readonly regular: PDFFont; readonly bold: PDFFont; readonly mono: PDFFont },
    private readonly charsets: Map<PDFFont, Set<number>>,
  ) {
    this.newPage();
  }

  newPage(): void {
    this.page = this.doc.addPage([A4.width, A4.height]);
    this.pages.push(this.page);
    this.y = A4.height - MARGIN;
  }

  get width(): number {
    return A4.width - 2 * MARGIN;
  }

  /** What the font can print of `text`: every other character as "?", control characters as a space. */
  printable(text: string, font: PDFFont): string {
    const set = this.charsets.get(font)!;
    let out = '';
    for (const ch of text) {
      const code = ch.codePointAt(0)!;
      out += code < 0x20 || code === 0x7f ? ' ' : set.has(code) ? ch : '?';
    }
    return out;
  }

  ensure(height: number): void {
    if (this.y - height < MARGIN + 24) this.newPage();
  }

  /** Words wrapped to `width`, each line drawn. */
  paragraph(text: string, options: { font?: PDFFont; size?: number; color?: ReturnType<typeof rgb>; indent?: number; width?: number; gap?: number } = {}): void {
    const font = options.font ?? this.fonts.regular;
    const size = options.size ?? 10;
    const indent = options.indent ?? 0;
    const width = (options.width ?? this.width) - indent;
    for (const line of wrapWords(this.printable(text, font), font, size, width)) this.line(line, font, size, indent, options.color);
    this.y -= options.gap ?? 4;
  }

  /** A text without spaces (a hash, a JWS) broken wherever the line is full. */
  block(text: string, options: { size?: number; indent?: number; width?: number } = {}): void {
    const font = this.fonts.mono;
    const size = options.size ?? 8;
    const indent = options.indent ?? 0;
    const perLine = Math.max(8, Math.floor(((options.width ?? this.width) - indent) / font.widthOfTextAtSize('0', size)));
    const printable = this.printable(text, font);
    for (let at = 0; at < printable.length; at += perLine) this.line(printable.slice(at, at + perLine), font, size, indent);
    this.y -= 4;
  }

  line(text: string, font: PDFFont, size: number, indent = 0, color = TEXT): void {
    const height = size * 1.3;
    this.ensure(height);
    this.y -= height;
    this.page.drawText(this.printable(text, font), { x: MARGIN + indent, y: this.y + size * 0.25, size, font, color });
  }

  heading(text: string, size = 13): void {
    this.ensure(size * 3);
    this.y -= size * 0.6;
    this.line(text, this.fonts.bold, size);
    this.y -= 3;
  }

  rule(): void {
    this.ensure(12);
    this.y -= 6;
    this.page.drawLine({ start: { x: MARGIN, y: this.y }, end: { x: A4.width - MARGIN, y: this.y }, thickness: 0.5, color: RULE });
    this.y -= 6;
  }

  /** A label and its value, the value wrapped beside it (or under it, in monospace, for a hash). */
  fact(label: string, value: string, options: { mono?: boolean; width?: number } = {}): void {
    const labelWidth = 112;
    const width = options.width ?? this.width;
    if (options.mono) {
      this.line(label, this.fonts.bold, 9.5);
      this.block(value, { size: 9, indent: 12, width });
      return;
    }
    const lines = wrapWords(this.printable(value, this.fonts.regular), this.fonts.regular, 10, width - labelWidth);
    this.ensure(lines.length * 13);
    const top = this.y;
    this.line(label, this.fonts.bold, 9.5);
    this.y = top;
    for (const line of lines) this.line(line, this.fonts.regular, 10, labelWidth);
    this.y -= 3;
  }
}

function wrapWords(text: string, font: PDFFont, size: number, width: number): string[] {
  const lines: string[] = [];
  for (const paragraph of text.split('\n')) {
    let current = '';
    for (const word of paragraph.split(/ +/)) {
      const candidate = current === '' ? word : `${current} ${word}`;
      if (font.widthOfTextAtSize(candidate, size) <= width) {
        current = candidate;
        continue;
      }
      if (current !== '') lines.push(current);
      // A word longer than the line (a long file name) is broken where the line is full.
      let rest = word;
      while (font.widthOfTextAtSize(rest, size) > width && rest.length > 1) {
        let cut = rest.length - 1;
        while (cut > 1 && font.widthOfTextAtSize(rest.slice(0, cut), size) > width) cut--;
        lines.push(rest.slice(0, cut));
        rest = rest.slice(cut);
      }
      current = rest;
    }
    lines.push(current);
  }
  return lines;
}

async function open(title: string, context: CertificateContext): Promise<Writer> {
  const doc = await PDFDocument.create();
  doc.setTitle(title);
  doc.setCreator('optmark');
  doc.setProducer('optmark (pdf-lib)');
  doc.setCreationDate(context.madeAt);
  doc.setModificationDate(context.madeAt);
  const fonts = { regular: await doc.embedFont(StandardFonts.Helvetica), bold: await doc.embedFont(StandardFonts.HelveticaBold), mono: await doc.embedFont(StandardFonts.Courier) };
  const charsets = new Map(Object.values(fonts).map((font) => [font, new Set(font.getCharacterSet())] as const));
  return new Writer(doc, fonts, charsets);
}

/** Page numbers and the deployment at the foot of every page; the document's bytes. */
async function finish(writer: Writer, context: CertificateContext): Promise<Uint8Array> {
  const { pages, fonts } = writer;
  pages.forEach((page, i) => {
    const foot = writer.printable(`optmark at ${context.issuer} · made ${utcText(context.madeAt)} · page ${i + 1} of ${pages.length}`, fonts.regular);
    page.drawText(foot, { x: MARGIN, y: MARGIN - 24, size: 8, font: fonts.regular, color: MUTED });
  });
  return writer.doc.save();
}

async function thumbnailOf(writer: Writer, bytes: Uint8Array | null): Promise<PDFImage | undefined> {
  if (!bytes) return undefined;
  try {
    return await writer.doc.embedJpg(bytes);
  } catch {
    return undefined;
  }
}

async function drawRecord(writer: Writer, entry: CertificateRecord, context: CertificateContext, heading: string): Promise<void> {
  const { record } = entry;
  const { fonts } = writer;
  writer.paragraph(heading, { font: fonts.bold, size: 20 });
  writer.paragraph(`A dated service record of optmark at ${context.issuer}: this service wrote the IPTC Data Mining opt-out into the file named below, and signed this record.`, { color: MUTED, size: 10 });
  writer.rule();

  // The thumbnail at the right of the first facts.
  const image = await thumbnailOf(writer, record.thumbnail);
  const top = writer.y;
  const factsWidth = image ? writer.width - THUMB_BOX - 16 : writer.width;
  if (image) {
    const scale = Math.min(THUMB_BOX / image.width, THUMB_BOX / image.height, 1);
    const w = image.width * scale;
    const h = image.height * scale;
    writer.page.drawImage(image, { x: A4.width - MARGIN - w, y: top - h, width: w, height: h });
    writer.page.drawRectangle({ x: A4.width - MARGIN - w, y: top - h, width: w, height: h, borderColor: RULE, borderWidth: 0.5 });
  }
  writer.fact('File', record.fileName === '' ? '(sent without a name)' : record.fileName, { width: factsWidth });
  writer.fact('Marked on', utcText(record.createdAt), { width: factsWidth });
  writer.fact('Account', entry.accountName, { width: factsWidth });
  writer.fact('Marked by', record.userEmail, { width: factsWidth });
  writer.fact('Opt-out written', `${entry.valueLabel} (plus:DataMining = ${record.value})`, { width: factsWidth });
  writer.fact('Layers', layerWords(record.layers), { width: factsWidth });
  writer.fact('Record', record.id, { width: factsWidth });
  writer.fact('Batch', record.batchId ?? 'none (marked on its own)', { width: factsWidth });
  if (image) writer.y = Math.min(writer.y, top - THUMB_BOX - 8);
  writer.fact('Key id (of the provenance tag)', record.kid, { mono: true });
  writer.fact('SHA-256 of the original file', record.sha256Original, { mono: true });
  writer.fact('SHA-256 of the marked file', record.sha256Marked, { mono: true });

  writer.heading('The signed record');
  writer.paragraph('Public JWS (what a public lookup shows: the record id, the time, the marked file\'s SHA-256, the value, the layers, the key id):', { size: 9.5 });
  writer.block(record.publicJws, { size: 7.5 });
  writer.paragraph('Private JWS (the rest: the account, the person, the file name, the original\'s SHA-256, the batch, and the SHA-256 of the public JWS):', { size: 9.5 });
  writer.block(record.privateJws, { size: 7.5 });

  writer.heading('How to check it');
  const jwks = new URL('/.well-known/jwks.json', context.issuer).href;
  const steps = [
    `1. Fetch the service's public keys, a JSON Web Key Set: ${jwks}`,
    '2. Verify each JWS above with any JOSE library (algorithm EdDSA, Ed25519), with the key whose "kid" its header names; the payload is JSON, base64url-encoded between the two dots. For example, with the JavaScript library jose: jwtVerify(jws, createRemoteJWKSet(new URL(JWKS_URL))).',
    '3. Compare the hashes: the SHA-256 of the marked file (sha256sum FILE) is the public payload\'s "sha256Marked"; the SHA-256 of the public JWS\'s text is the private payload\'s "publicJwsSha256"; the original\'s is the private payload\'s "sha256Original".',
    '4. The marked file also carries the provenance tag this service signed into its XMP: optmark verify --jwks URL FILE checks it without this service.',
  ];
  for (const step of steps) writer.paragraph(step, { size: 9.5, gap: 3 });
}

export function createCertificateMaker(): CertificateMaker {
  return {
    async record(entry, context) {
      const writer = await open(`Certificate of marking ${entry.record.id}`, context);
      await drawRecord(writer, entry, context, 'Certificate of marking');
      return finish(writer, context);
    },

    async batch(batchId, entries, context) {
      const writer = await open(`Certificate of the batch ${batchId}`, context);
      const { fonts } = writer;
      const first = entries[0]!.record.createdAt;
      const last = entries.at(-1)!.record.createdAt;
      writer.line('Certificate of a batch', fonts.bold, 20);
      writer.y -= 4;
      writer.paragraph(
        `A dated service record of optmark at ${context.issuer}: this service wrote the IPTC Data Mining opt-out into the ${entries.length} file${entries.length === 1 ? '' : 's'} below, marked in one batch of the dashboard, and signed a record of each. Each record follows on a page of its own.`,
        { color: MUTED },
      );
      writer.rule();
      writer.fact('Batch', batchId);
      writer.fact('Account', entries[0]!.accountName);
      writer.fact('Files', String(entries.length));
      writer.fact('Marked', first.getTime() === last.getTime() ? utcText(first) : `from ${utcText(first)} to ${utcText(last)}`);
      writer.heading('The files');
      entries.forEach(({ record, valueLabel }, i) => {
        writer.ensure(60);
        writer.paragraph(`${i + 1}. ${record.fileName || '(sent without a name)'}`, { font: fonts.bold, size: 10, gap: 0 });
        writer.paragraph(`${utcText(record.createdAt)} · ${valueLabel} · record ${record.id}`, { size: 9, indent: 14, gap: 1 });
        writer.line('SHA-256 of the marked file', fonts.regular, 8, 14, MUTED);
        writer.block(record.sha256Marked, { size: 8, indent: 14 });
      });
      for (const entry of entries) {
        writer.newPage();
        await drawRecord(writer, entry, context, `Record of ${entry.record.fileName || 'a file sent without a name'}`);
      }
      return finish(writer, context);
    },
  };
}
