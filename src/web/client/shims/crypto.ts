/**
 * node:crypto in the browser bundle: the quick opt-out read never hashes
 * (Extended XMP, whose MD5 it would check, is not read there), so a hash
 * asked for is a mistake to hear about, not to compute wrongly.
 */
export function createHash(algorithm: string): never {
  throw new Error(`createHash(${algorithm}) is not available in the browser`);
}
