/**
 * Every error optmark raises on purpose, each with a stable snake_case `code`.
 *
 * These classes carry data and a readable message, never an HTTP status: the
 * one place that maps codes to statuses is the HTTP error handler. A failure
 * that is not one of these is a bug.
 */

export type ImageFormat = 'jpeg' | 'png' | 'webp';

export type ErrorCode =
  | 'empty_image'
  | 'unsupported_image_format'
  | 'corrupt_image'
  | 'invalid_xmp'
  | 'ambiguous_xmp'
  | 'invalid_option';

export abstract class OptmarkError extends Error {
  abstract readonly code: ErrorCode;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The input has no bytes at all. */
export class EmptyImageError extends OptmarkError {
  readonly code = 'empty_image';
  constructor() {
    super('The image is empty (0 bytes)');
  }
}

/** The bytes are not JPEG, PNG or WebP. `detected` names what they look like, when known. */
export class UnsupportedFormatError extends OptmarkError {
  readonly code = 'unsupported_image_format';
  constructor(readonly detected?: string) {
    super(
      detected
        ? `${detected} is not supported: send a JPEG, PNG or WebP image`
        : 'The file is not a JPEG, PNG or WebP image (judged by its bytes, not its name or declared type)',
    );
  }
}

/** The container is broken: truncated, a length that lies, a bad checksum, a missing required part. */
export class CorruptImageError extends OptmarkError {
  readonly code = 'corrupt_image';
  constructor(
    readonly format: ImageFormat,
    readonly reason: string,
  ) {
    super(`Corrupt ${FORMAT_NAMES[format]}: ${reason}`);
  }
}

/** The XMP metadata is malformed or hostile (DTD, too deep, too large, bad Extended XMP). */
export class InvalidXmpError extends OptmarkError {
  readonly code = 'invalid_xmp';
  constructor(
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`Invalid XMP metadata: ${reason}`, options);
  }
}

/** The file carries more than one standard XMP packet; writing into it would have to pick one. */
export class AmbiguousXmpError extends OptmarkError {
  readonly code = 'ambiguous_xmp';
  constructor(
    readonly format: ImageFormat,
    readonly count: number,
  ) {
    super(
      `The ${FORMAT_NAMES[format]} carries ${count} XMP packets where there must be one; ` +
        'refusing to guess which one to change',
    );
  }
}

/** A caller passed an option outside its domain. Message shape: "Expected X for name but received Y". */
export class InvalidOptionError extends OptmarkError {
  readonly code = 'invalid_option';
  constructor(
    readonly option: string,
    readonly expected: string,
    readonly actual: unknown,
  ) {
    super(`Expected ${expected} for ${option} but received ${describe(actual)}`);
  }
}

export const FORMAT_NAMES: Readonly<Record<ImageFormat, string>> = {
  jpeg: 'JPEG',
  png: 'PNG',
  webp: 'WebP',
};

function describe(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : String(value);
  const short = text.length > 80 ? `${text.slice(0, 77)}...` : text;
  return `${short} of type ${typeof value}`;
}

export function isOptmarkError(error: unknown): error is OptmarkError {
  return error instanceof OptmarkError;
}
