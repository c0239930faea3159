/**
 * Read the one part an image endpoint takes: a file part named `image`.
 * The size limit is enforced while streaming (the multipart plugin stops at
 * the limit); anything else in the body is refused, not ignored.
 */
import type {} from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { ImageTooLargeError, RequestError } from '../errors.js';

export interface Upload {
  readonly bytes: Buffer;
  readonly filename: string | undefined;
}

/** Limits for the multipart parser: one image part and room to notice a second one. */
export function multipartLimits(maxUploadBytes: number) {
  return { fileSize: maxUploadBytes, files: 2, fields: 4, parts: 6, fieldSize: 1024, headerPairs: 20 };
}

export async function readImagePart(request: FastifyRequest, maxUploadBytes: number): Promise<Upload> {
  if (!request.isMultipart()) {
    throw new RequestError('unsupported_content_type', 'Send the image as multipart/form-data with one part named "image"');
  }
  let image: Upload | undefined;
  const others: string[] = [];
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file' && part.fieldname === 'image' && image === undefined) {
        const bytes = await part.toBuffer();
        if (part.file.truncated) throw new ImageTooLargeError(maxUploadBytes);
        image = { bytes, filename: part.filename };
      } else {
        others.push(`${part.type === 'file' ? 'file' : 'field'} ${JSON.stringify(part.fieldname)}`);
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
  return image;
}

function tooMany(others?: string[]): RequestError {
  const which = others?.length ? `; found also ${others.join(', ')}` : '';
  return new RequestError('multiple_parts', `Send exactly one part, the file "image"${which}`);
}
