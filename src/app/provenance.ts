/**
 * Signing and checking provenance tags with a key ring: the signer protect
 * uses, and the check verify uses. The keys come from the deployment's key
 * ring, or, to check another deployment's tags offline, from its JWKS.
 */
import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import type { TagSigner } from '../core/metadata.js';
import { checkTag, digestClaim, signJws, signTag, type TagCheck } from '../core/provenance/tag.js';
import type { Clock } from './ports.js';

/** What signing and checking need from a key ring. */
export interface KeySource {
  readonly active?: { readonly kid: string; readonly privateKey: KeyObject };
  publicKey(kid: string): KeyObject | undefined;
  /** Every public key, by kid (what a snapshot for another thread carries); a source without it gives none. */
  publicKeys?(): ReadonlyMap<string, KeyObject>;
}

/**
 * Everything signing and checking need, as of one moment, in a form that can
 * be sent to a worker thread (KeyObjects are cloned by postMessage): the
 * issuer, the time a tag signed there says, the active key, the public keys.
 */
export interface ProvenanceSnapshot {
  readonly issuer: string;
  /** Milliseconds since the epoch. */
  readonly now: number;
  readonly active: { readonly kid: string; readonly privateKey: KeyObject } | undefined;
  readonly publicKeys: ReadonlyMap<string, KeyObject>;
}

export interface Provenance {
  readonly signer: TagSigner;
  /**
   * This provenance with its clock stopped at `iat` (seconds since the
   * epoch): its tags say `iat` instead of now, here and on another thread
   * (its snapshot), so a repeated call is answered with the very bytes of
   * the first (Ed25519 is deterministic), as long as the same key is the
   * active one.
   */
  at(iat: number): Provenance;
  /** The active key's id (what a tag signed now names). */
  activeKid(): string | undefined;
  check(tag: string, file: { digest: Uint8Array; dataMining: string | undefined }): TagCheck;
  /** The keys and the time, for signing or checking on another thread (provenanceFromSnapshot). */
  snapshot(): ProvenanceSnapshot;
  /**
   * Sign a statement of this service other than a tag (a service record:
   * app/records) with the same key ring, so that the same JWKS checks it:
   * a compact JWS whose header names the signing key (`kid`), and whose
   * payload is `claims` with `iss` (this deployment) added, and `kid` (the
   * signing key's id) unless the claims name one.
   */
  signStatement(claims: Readonly<Record<string, unknown>>): { readonly jws: string; readonly kid: string };
}

export function createProvenance(deps: { keys: KeySource; issuer: () => string; clock: Clock }): Provenance {
  const { keys } = deps;
  const check: Provenance['check'] = (tag, file) => checkTag(tag, (kid) => keys.publicKey(kid), file);
  return {
    check,
    snapshot: () => ({ issuer: deps.issuer(), now: deps.clock.now().getTime(), active: keys.active, publicKeys: new Map(keys.publicKeys?.() ?? []) }),
    signer: {
      sign(digest, dataMining) {
        const active = keys.active;
        if (!active) throw new Error('internal: no active signing key');
        const claims = { iss: deps.issuer(), kid: active.kid, iat: Math.floor(deps.clock.now().getTime() / 1000), dmi: dataMining, sha256: digestClaim(digest) };
        return signTag(claims, active.privateKey);
      },
      accepts: (tag, digest, dataMining) => check(tag, { digest, dataMining }).valid,
    },
    signStatement(claims) {
      const active = keys.active;
      if (!active) throw new Error('internal: no active signing key');
      return { jws: signJws({ ...claims, kid: claims.kid ?? active.kid, iss: deps.issuer() }, active.kid, active.privateKey), kid: active.kid };
    },
    at: (iat) => createProvenance({ ...deps, clock: { now: () => new Date(iat * 1000) } }),
    activeKid: () => keys.active?.kid,
  };
}

/** The provenance a snapshot describes: the same signer and check, on another thread. */
export function provenanceFromSnapshot(snapshot: ProvenanceSnapshot): Provenance {
  return createProvenance({
    keys: { active: snapshot.active, publicKey: (kid) => snapshot.publicKeys.get(kid), publicKeys: () => snapshot.publicKeys },
    issuer: () => snapshot.issuer,
    clock: { now: () => new Date(snapshot.now) },
  });
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
  return { publicKey: (kid) => byKid.get(kid), publicKeys: () => byKid };
}
