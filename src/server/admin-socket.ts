/**
 * While `optmark serve` holds the embedded database, operators reach it
 * through this Unix socket in the data directory. The directory is 0700 and
 * the socket 0600, so only the directory's owner can use it; the server
 * runs the operation on its own database connection, so nothing is opened twice.
 */
import { chmodSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { isOptmarkError } from '../errors.js';
import { ADMIN_SOCKET, runAdminOp, type AdminServices } from './admin-protocol.js';

const MAX_REQUEST_BYTES = 64 * 1024;

export interface AdminSocket {
  readonly path: string;
  close(): Promise<void>;
}

/** Unix socket paths are limited to about 107 bytes (sun_path). */
const MAX_SOCKET_PATH = 100;

export async function startAdminSocket(dataDir: string, services: AdminServices, log: FastifyBaseLogger): Promise<AdminSocket | undefined> {
  const path = join(dataDir, ADMIN_SOCKET);
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH) {
    log.warn({ path }, 'the data directory path is too long for a Unix socket: administration commands will not work while the server runs');
    return undefined;
  }
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
  // directory lock already proves no other server runs here).
  rmSync(path, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
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
  const socketPath = join(dataDir, ADMIN_SOCKET);
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
