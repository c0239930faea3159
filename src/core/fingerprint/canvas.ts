/**
 * The analysis canvas an image of a given size maps onto: shorter side
 * CANVAS_SIDE, aspect ratio kept (rounded to whole pixels). A copy resized
 * by any factor maps onto the same canvas, which is why resizing does not
 * move the mark. One function for embedder and detector, so they agree.
 */
import { CANVAS_SIDE } from './scheme.js';

export interface Size {
  readonly width: number;
  readonly height: number;
}

export function canvasSize(width: number, height: number): Size {
  const k = CANVAS_SIDE / Math.min(width, height);
  return { width: Math.max(CANVAS_SIDE, Math.round(width * k)), height: Math.max(CANVAS_SIDE, Math.round(height * k)) };
}
