/**
 * The HTTP server's connections while it stops. Node's server.close() waits
 * for every open connection, and stops enforcing the header and request
 * timeouts the moment it begins (its checking interval is cleared): a
 * connection opened and left silent (a browser's speculative preconnect, a
 * slow or hostile client) then held the shutdown open for as long as its
 * client liked. Seen in a browser test: the restart waited past a minute.
 *
 * So, from the stop:
 * - a connection serving no request and with nothing received since its
 *   last answer (or since it opened) is closed at once;
 * - one whose next request has begun to arrive gets until the headers
 *   timeout for the rest (it is then answered 503, "stopping"), and is
 *   closed after that;
 * - one serving a request is closed as its answer ends, rather than kept
 *   alive for another;
 * - any still open at `limitMs` (the request timeout: no call may take
 *   longer) is closed.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

interface Connection {
  /** Requests read and not yet answered (more than one when pipelined). */
  serving: number;
  /** socket.bytesRead when it last had nothing to read: at its opening, and at each answer's end. */
  readAtRest: number;
}

export interface Connections {
  /** Start closing, as above. */
  stop(options: { readonly headersMs: number; readonly limitMs: number }): void;
}

export function trackConnections(server: Server): Connections {
  const open = new Map<Socket, Connection>();
  let stopping = false;
  const timers: NodeJS.Timeout[] = [];

  const quiet = (socket: Socket, connection: Connection) => connection.serving === 0 && socket.bytesRead === connection.readAtRest;

  server.on('connection', (socket: Socket) => {
    open.set(socket, { serving: 0, readAtRest: socket.bytesRead });
    socket.once('close', () => open.delete(socket));
  });
  server.on('request', (request, response) => {
    const socket = request.socket;
    const connection = open.get(socket);
    if (!connection) return;
    connection.serving++;
    // 'close' follows 'finish' for an answer sent whole, and comes alone when the connection goes first.
    response.once('close', () => {
      connection.serving--;
      if (connection.serving > 0) return;
      connection.readAtRest = socket.bytesRead;
      if (stopping) socket.destroy();
    });
  });

  return {
    stop({ headersMs, limitMs }) {
      if (stopping) return;
      stopping = true;
      for (const [socket, connection] of open) if (quiet(socket, connection)) socket.destroy();
      const closeIf = (keep: (connection: Connection) => boolean) => {
        for (const [socket, connection] of open) if (!keep(connection)) socket.destroy();
      };
      timers.push(setTimeout(() => closeIf((connection) => connection.serving > 0), headersMs).unref());
      timers.push(setTimeout(() => closeIf(() => false), limitMs).unref());
      server.once('close', () => {
        for (const timer of timers) clearTimeout(timer);
      });
    },
  };
}
