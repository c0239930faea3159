/**
 * The secret tokens of the people's side (session cookies, one-time links,
 * sign-up links): 32 random bytes as base64url, handed out once and stored
 * only as their SHA-256, so the database never holds one that works.
 */
import { createHash, randomBytes } from 'node:crypto';

/** A new token: 43 base64url characters (256 bits). */
export const newToken = (): string => randomBytes(32).toString('base64url');

/** What is stored of a token: its SHA-256. */
export const tokenDigest = (token: string): Buffer => createHash('sha256').update(token).digest();

/** Whether a string has a token's shape (anything else is refused before a lookup). */
export const isTokenShaped = (token: string): boolean => /^[A-Za-z0-9_-]{43}$/.test(token);
