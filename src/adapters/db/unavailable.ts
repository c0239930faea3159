/**
 * Which database failures mean "unavailable, try again" (503) rather than a
 * bug (500): lost or refused connections, pool timeouts, PostgreSQL's
 * connection, resource, operator-intervention and system-error classes, and
 * file-system errors of the embedded database (disk full, read-only).
 */
import { ServiceUnavailableError } from '../../errors.js';

const NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ENOSPC', 'EROFS', 'EACCES', 'EIO', 'EDQUOT']);
/** SQLSTATE classes: 08 connection, 53 insufficient resources, 57 operator intervention, 58 system error. */
const SQLSTATE_CLASSES = new Set(['08', '53', '57', '58']);
/** And single codes: 3D000, the database is gone (dropped, or not restored yet): nothing the request did. */
const SQLSTATE_CODES = new Set(['3D000']);
const MESSAGES = /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|Cannot use a pool after calling end|database is closed|PGlite is closed|the embedded database stopped|No space left|read-only file system|could not (write|extend|fsync)/i;

function isUnavailable(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | undefined;
  if (!e) return false;
  if (typeof e.code === 'string' && (NODE_CODES.has(e.code) || SQLSTATE_CODES.has(e.code) || (e.code.length === 5 && SQLSTATE_CLASSES.has(e.code.slice(0, 2))))) return true;
  return typeof e.message === 'string' && MESSAGES.test(e.message);
}

/** Run a database call, turning an availability failure into ServiceUnavailableError. */
export async function guarded<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof ServiceUnavailableError) throw error;
    if (isUnavailable(error)) throw new ServiceUnavailableError('The database is unavailable; try again shortly', 5, { cause: error });
    throw error;
  }
}
