/**
 * Why an image cannot carry the fingerprint. A plain Error subclass: the
 * application maps it to its own error classes.
 */
export type FingerprintRefusal =
  /** The shorter side is below MIN_EMBED_SIDE: the analysis canvas would be finer than the image. */
  | 'too_small'
  /** Longer than MAX_ASPECT times the shorter side. */
  | 'too_elongated'
  /**
   * Too little of the picture has texture the mark can hide in (under
   * MIN_CARRYING of its pixels): flat, white and clipped areas are never
   * marked, and what is left would not carry a mark the detector finds.
   */
  | 'too_flat'
  /**
   * The embedder's attempts all stayed under MIN_PSNR_DB or MIN_SSIM
   * (embed.ts). Not seen in practice (each attempt scales the strength
   * down by the shortfall); a safeguard, so the bounds hold.
   */
  | 'quality';

export class FingerprintRefusedError extends Error {
  readonly reason: FingerprintRefusal;

  constructor(reason: FingerprintRefusal, message: string) {
    super(message);
    this.name = 'FingerprintRefusedError';
    this.reason = reason;
  }
}
