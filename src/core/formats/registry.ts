import type { ContainerHandler } from './handler.js';
import { jpeg } from './jpeg.js';
import { png } from './png.js';
import { webp } from './webp.js';

/** Every supported container, in sniffing order. Adding a format = one line here (see docs/formats.md). */
export const HANDLERS: readonly ContainerHandler[] = [jpeg, png, webp];
