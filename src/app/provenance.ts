/**
 * Signing and checking provenance tags with a key ring: the signer protect
 * uses, and the check verify uses. The keys come from the deployment's key
 * ring, or, to check another deployment's tags offline, from its JWKS.
 */
import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import type { TagSigner } from '../core/metadata.js';
import { checkTag, digestClaim, signTag, type TagCheck } from '../core/provenance/tag.js';
import type { Clock } from './ports.js';

/** What signing and checking need from a key ring. */
export interface KeySource {
  readonly active?: { readonly kid: string; readonly privateKey: KeyObject };
  publicKey(kid: string): KeyObject | undefined;
}

export interface Provenance {
  readonly signer: TagSigner;
  /**
   * A signer whose tags say `iat` (seconds since the epoch) instead of now:
   * a repeated call is answered with the very bytes of the first (Ed25519 is
   * deterministic), as long as the same key is the active one.
   */
  signerAt(iat: number): TagSigner;
  /** The active key's id (what a tag signed now names). */
  activeKid(): string | undefined;
  check(tag: string, file: { digest: Uint8Array; dataMining: string | undefined }): TagCheck;
}

export function createProvenance(deps: { keys: KeySource; issuer: () => string; clock: Clock }): Provenance {
  const { keys } = deps;
  const check: Provenance['check'] = (tag, file) => checkTag(tag, (kid) => keys.publicKey(kid), file);
  const signerAt = (iat: () => number): TagSigner => ({
    sign(digest, dataMining) {
      const active = keys.active;
      if (!active) throw new Error('internal: no active signing key');
      const claims = { iss: deps.issuer(), kid: active.kid, iat: iat(), dmi: dataMining, sha256: digestClaim(digest) };
      return signTag(claims, active.privateKey);
    },
    accepts: (tag, digest, dataMining) => check(tag, { digest, dataMining }).valid,
  });
  return {
    check,
    signer: signerAt(() => Math.floor(deps.clock.now().getTime() / 1000)),
    signerAt: (iat) => signerAt(() => iat),
    activeKid: () => keys.active?.kid,
  };
}

/** Public keys from a JWKS document (RFC 7517), for checking another deployment's tags. */
export function keysFromJwks(jwks: unknown): KeySource {
  const entries = (jwks as { keys?: unknown }).keys;
  if (!Array.isArray(entries)) throw new Error('not a JWKS: no "keys" array');
  const byKid = new Map<string, KeyObject>();
  for (const entry of entries as Array<JsonWebKey & { kid?: unknown }>) {
    if (typeof entry.kid !== 'string' || entry.kty !== 'OKP' || entry.crv !== 'Ed25519') continue;
    byKid.set(entry.kid, createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: entry.x }, format: 'jwk' }));
  }
  return { publicKey: (kid) => byKid.get(kid) };
}
