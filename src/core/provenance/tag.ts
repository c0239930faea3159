/**
 * The provenance tag: a compact JWS (RFC 7515), EdDSA over Ed25519, whose
 * payload says who signed what:
 *
 *   header  {"alg":"EdDSA","kid":"<key id>","typ":"JWT"}
 *   payload {"iss":"<deployment base URL>","kid":"<key id>","iat":<seconds>,
 *            "dmi":"<plus:DataMining URI written>","sha256":"<base64url content digest>"}
 *
 * It is a JWT, so any JOSE library checks it with the deployment's JWKS.
 * Parsing is bounded and strict: anything unexpected makes a tag invalid,
 * never an error of the call.
 */
import { sign as edSign, verify as edVerify, type KeyObject } from 'node:crypto';

export interface TagClaims {
  readonly iss: string;
  readonly kid: string;
  readonly iat: number;
  readonly dmi: string;
  readonly sha256: string;
}

/** Longer than any tag we write (about 400 characters); checked before any decoding. */
export const MAX_TAG_LENGTH = 2048;
const PART = /^[A-Za-z0-9_-]+$/;

const b64url = (bytes: Uint8Array | string): string => Buffer.from(bytes).toString('base64url');

export function signTag(claims: TagClaims, privateKey: KeyObject): string {
  return signJws(claims, claims.kid, privateKey);
}

/**
 * A compact JWS (RFC 7515) of any JSON payload, EdDSA over Ed25519, with the
 * header every JWS of this service carries: `{"alg":"EdDSA","kid":KID,"typ":"JWT"}`.
 * Ed25519 is deterministic: the same payload and key give the same text.
 */
export function signJws(payload: object, kid: string, privateKey: KeyObject): string {
  const header = b64url(JSON.stringify({ alg: 'EdDSA', kid, typ: 'JWT' }));
  const body = b64url(JSON.stringify(payload));
  const signature = edSign(null, Buffer.from(`${header}.${body}`), privateKey);
  return `${header}.${body}.${b64url(signature)}`;
}

export interface ParsedTag {
  readonly kid: string;
  readonly claims: TagClaims;
  readonly signingInput: Buffer;
  readonly signature: Buffer;
}

function decodeJson(part: string): unknown {
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

const isString = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= 512;

/** The tag's parts, or undefined when it is not a well-formed tag of ours. */
export function parseTag(tag: string): ParsedTag | undefined {
  if (tag.length > MAX_TAG_LENGTH) return undefined;
  const parts = tag.trim().split('.');
  if (parts.length !== 3 || !parts.every((p) => PART.test(p))) return undefined;
  const [h, p, s] = parts as [string, string, string];
  const header = decodeJson(h) as Record<string, unknown> | undefined;
  if (!header || header.alg !== 'EdDSA' || !isString(header.kid) || header.crit !== undefined) return undefined;
  const payload = decodeJson(p) as Record<string, unknown> | undefined;
  if (!payload || !isString(payload.iss) || !isString(payload.dmi) || !isString(payload.sha256) || payload.kid !== header.kid) return undefined;
  if (typeof payload.iat !== 'number' || !Number.isFinite(payload.iat)) return undefined;
  const signature = Buffer.from(s, 'base64url');
  if (signature.length !== 64) return undefined;
  return {
    kid: header.kid,
    claims: { iss: payload.iss, kid: header.kid, iat: payload.iat, dmi: payload.dmi, sha256: payload.sha256 },
    signingInput: Buffer.from(`${h}.${p}`),
    signature,
  };
}

export interface TagCheck {
  readonly present: boolean;
  /** The tag's key is one of the keys we check against. */
  readonly verifiable: boolean;
  /** Verifiable, the signature holds, and the digest and value match the file. */
  readonly valid: boolean;
}

export const NO_TAG: TagCheck = { present: false, valid: false, verifiable: false };

/**
 * Check a tag found in a file against the keys we know (by key id), the
 * file's content digest and its plus:DataMining value.
 */
export function checkTag(
  tag: string,
  publicKey: (kid: string) => KeyObject | undefined,
  file: { readonly digest: Uint8Array; readonly dataMining: string | undefined },
): TagCheck {
  const parsed = parseTag(tag);
  if (!parsed) return { present: true, verifiable: false, valid: false };
  const key = publicKey(parsed.kid);
  if (!key) return { present: true, verifiable: false, valid: false };
  let signed = false;
  try {
    signed = edVerify(null, parsed.signingInput, key, parsed.signature);
  } catch {
    signed = false;
  }
  const valid = signed && parsed.claims.sha256 === b64url(file.digest) && parsed.claims.dmi === file.dataMining;
  return { present: true, verifiable: true, valid };
}

export function digestClaim(digest: Uint8Array): string {
  return b64url(digest);
}
