/**
 * While `optmark serve` holds the embedded database, operators reach it
 * through a Unix socket; the server runs the operation on its own database
 * connection, so nothing is opened twice. The socket is
 * OPTMARK_DATA_DIR/admin.sock (0600, in the 0700 data directory: only the
 * directory's owner can use it), unless that path is too long for a Unix
 * socket (about 107 bytes): then it is /tmp/optmark-UID/<hash of the data
 * directory>.sock, in a directory of this user's alone (0700, refused
 * otherwise), where the server and the CLI both find it. A server that
 * cannot listen on it does not start.
 */
import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, rmSync, type Stats } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { join, resolve } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { isOptmarkError } from '../errors.js';
import { UnsafePermissionsError } from '../adapters/private-paths.js';
import { ADMIN_SOCKET, runAdminOp, type AdminServices } from './admin-protocol.js';

const MAX_REQUEST_BYTES = 64 * 1024;

/** The admin socket cannot be served: the server does not start without it (revoking keys must work while it runs). */
export class AdminSocketError extends Error {}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

export interface AdminSocket {
  readonly path: string;
  close(): Promise<void>;
}

/** Unix socket paths are limited to about 107 bytes (sun_path); a little kept in reserve. */
const MAX_SOCKET_PATH = 100;
/** Where sockets of data directories with long paths go: short on every system. */
const SHORT_SOCKET_ROOT = '/tmp';

/**
 * The admin socket of `dataDir`: in it when the path fits a Unix socket,
 * else in this user's private directory under /tmp. With `prepare`, that
 * directory is made (0700) and checked: it must be this user's own, a
 * directory and not a link, that no one else can enter.
 * @throws UnsafePermissionsError when the short directory is not private
 */
export function adminSocketPath(dataDir: string, prepare = false): string {
  const inDataDir = join(dataDir, ADMIN_SOCKET);
  if (Buffer.byteLength(inDataDir) <= MAX_SOCKET_PATH) return inDataDir;
  const uid = process.getuid?.() ?? 0;
  const directory = join(SHORT_SOCKET_ROOT, `optmark-${uid}`);
  const name = createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 24);
  if (prepare) {
    mkdirSync(directory, { mode: 0o700, recursive: true });
    const stats = lstatSync(directory);
    if (!stats.isDirectory() || stats.uid !== uid || (stats.mode & 0o077) !== 0) {
      throw new UnsafePermissionsError(
        `the admin socket's directory ${directory} is not this user's private directory (${stats.isDirectory() ? `mode 0${(stats.mode & 0o777).toString(8)}, uid ${stats.uid}` : 'not a directory'}), so others could reach or replace the socket; refusing to start`,
      );
    }
  }
  return join(directory, `${name}.sock`);
}

export async function startAdminSocket(dataDir: string, services: AdminServices, log: FastifyBaseLogger): Promise<AdminSocket> {
  const path = adminSocketPath(dataDir, true);
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) req.destroy();
      else chunks.push(chunk);
    });
    req.on('end', () => {
      const reply = (status: number, body: unknown) => {
        res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
      };
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      } catch {
        return reply(400, { error: 'not JSON', code: 'malformed_request' });
      }
      runAdminOp(services, parsed).then(
        (result) => reply(200, { result }),
        (error: unknown) => {
          if (isOptmarkError(error)) return reply(400, { error: error.message, code: error.code });
          log.error({ err: error }, 'admin operation failed');
          return reply(500, { error: 'internal error', code: 'internal_error' });
        },
      );
    });
  });
  // A socket file left by a crash answers nobody: remove it (the data
  // directory lock already proves no other server runs here). Anything
  // else in its place is not ours to remove.
  const left = lstatOrUndefined(path);
  if (left && !left.isSocket()) throw new AdminSocketError(`could not listen on the admin socket ${path}: something that is not a socket is in its place`);
  if (left) rmSync(path, { force: true });
  await new Promise<void>((done, fail) => {
    server.once('error', (error) => fail(new AdminSocketError(`could not listen on the admin socket ${path}: ${error.message}`, { cause: error })));
    server.listen(path, () => done());
  });
  chmodSync(path, 0o600);
  return {
    path,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        try {
          rmSync(path, { force: true });
        } catch {
          // A data directory gone read-only keeps the socket file; the next
          // start replaces it. The rest of the shutdown must still run.
        }
      }),
  };
}

/** Send one operation to a running server; undefined when no server listens on the socket. */
export function callAdminSocket(dataDir: string, op: object): Promise<{ status: number; body: Record<string, unknown> } | undefined> {
  const socketPath = adminSocketPath(dataDir);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ socketPath, method: 'POST', path: '/', headers: { 'Content-Type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 500, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> });
        } catch (error) {
          reject(error);
        }
      });
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' || error.code === 'ECONNREFUSED') resolve(undefined);
      else reject(error);
    });
    req.end(JSON.stringify(op));
  });
}
