/**
 * Read the one part an image endpoint takes: a file part named `image`, and
 * the text fields the caller names (the dashboard's form options; the API
 * takes none). The size limit is enforced while streaming (the multipart
 * plugin stops at the limit); anything else in the body is refused, not
 * ignored. A body that stalls (less than 64 KiB in a window) is cut off with
 * 408, so a slow client cannot hold a slot and its buffers for the whole
 * request timeout.
 */
import type {} from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { ImageTooLargeError, RequestError } from '../errors.js';

/** Bytes an upload must deliver in each stall window (a 26 kbit/s link). */
export const STALL_BYTES = 64 * 1024;

export interface UploadLimits {
  readonly maxUploadBytes: number;
  readonly stallSeconds: number;
}

export interface Upload {
  readonly bytes: Buffer;
  readonly filename: string | undefined;
  /** The named text fields that were sent, by name. */
  readonly fields: Readonly<Record<string, string>>;
}

/** Limits for the multipart parser: one image part and room to notice a second one. */
export function multipartLimits(maxUploadBytes: number) {
  return { fileSize: maxUploadBytes, files: 2, fields: 4, parts: 6, fieldSize: 1024, headerPairs: 20 };
}

export async function readImagePart(request: FastifyRequest, limits: UploadLimits, fieldNames: readonly string[] = []): Promise<Upload> {
  if (!request.isMultipart()) {
    throw new RequestError('unsupported_content_type', 'Send the image as multipart/form-data with one part named "image"');
  }
  const reading = readParts(request, limits.maxUploadBytes, fieldNames);
  const watch = watchProgress(request, limits.stallSeconds);
  try {
    return await Promise.race([reading, watch.stalled]);
  } finally {
    watch.stop();
    // After a stall the reading goes on failing once the connection closes; nobody waits for it.
    reading.catch(() => {});
  }
}

/** Rejects with 408 when a window of `seconds` passes with less than STALL_BYTES received. */
function watchProgress(request: FastifyRequest, seconds: number): { stalled: Promise<never>; stop: () => void } {
  const raw = request.raw;
  let received = 0;
  const count = (chunk: Buffer) => {
    received += chunk.length;
  };
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setInterval(() => {
      if (received < STALL_BYTES && !raw.complete) {
        reject(new RequestError('request_timeout', `The upload stalled: less than ${STALL_BYTES} bytes arrived in ${seconds} s`));
      }
      received = 0;
    }, seconds * 1000);
  });
  stalled.catch(() => {});
  raw.on('data', count);
  return {
    stalled,
    stop() {
      clearInterval(timer);
      raw.off('data', count);
    },
  };
}

async function readParts(request: FastifyRequest, maxUploadBytes: number, fieldNames: readonly string[]): Promise<Upload> {
  let image: Omit<Upload, 'fields'> | undefined;
  const fields: Record<string, string> = {};
  const others: string[] = [];
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file' && part.fieldname === 'image' && image === undefined) {
        image = { bytes: await collect(part.file, maxUploadBytes), filename: part.filename };
      } else if (part.type === 'field' && fieldNames.includes(part.fieldname) && !Object.hasOwn(fields, part.fieldname)) {
        fields[part.fieldname] = String(part.value);
      } else {
        const kind = part.type === 'file' ? 'file part' : 'field';
        others.push(part.fieldname ? `${kind} ${JSON.stringify(part.fieldname)}` : `a ${kind} without a name`);
        if (part.type === 'file') part.file.resume();
      }
    }
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'FST_PARTS_LIMIT' || code === 'FST_FILES_LIMIT' || code === 'FST_FIELDS_LIMIT') throw tooMany();
    throw error;
  }
  if (!image) {
    const seen = others.length ? ` (the body has ${others.join(', ')})` : '';
    throw new RequestError('missing_image_part', `The request has no file part named "image"${seen}`);
  }
  if (others.length > 0) throw tooMany(others);
  return { ...image, fields };
}

/**
 * The file's bytes. Over the limit, fail at once rather than when the part
 * ends: the answer (413, connection closed) then stops an upload that would
 * otherwise go on streaming, for as long as the client likes, into a parser
 * that discards it.
 */
function collect(file: NodeJS.ReadableStream & { truncated?: boolean }, maxUploadBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    file.on('data', (chunk: Buffer) => chunks.push(chunk));
    file.once('limit', () => reject(new ImageTooLargeError(maxUploadBytes)));
    file.once('error', reject);
    file.once('end', () => (file.truncated ? reject(new ImageTooLargeError(maxUploadBytes)) : resolve(Buffer.concat(chunks))));
  });
}

function tooMany(others?: string[]): RequestError {
  const which = others?.length ? `; found also ${others.join(', ')}` : '';
  return new RequestError('multiple_parts', `Send exactly one part, the file "image"${which}`);
}
