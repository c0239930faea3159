import type { ImageFormat } from '../../errors.js';
import type { ContainerHandler } from './handler.js';
import { jpeg } from './jpeg.js';
import { png } from './png.js';
import { webp } from './webp.js';

/** Every supported container, in sniffing order. Adding a format = one line here (see docs/formats.md). */
export const HANDLERS: readonly ContainerHandler[] = [jpeg, png, webp];

export function handlerFor(format: ImageFormat): ContainerHandler {
  const handler = HANDLERS.find((h) => h.format === format);
  if (!handler) throw new Error(`internal: no handler for ${format}`);
  return handler;
}
