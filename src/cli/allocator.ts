/**
 * `optmark serve` runs with the glibc allocator settings of
 * SERVE_MALLOC_TUNABLES however it is started (npm start, a service
 * manager, a shell). glibc reads GLIBC_TUNABLES only when a process starts,
 * so a server started without them replaces itself once, before anything
 * else is loaded, with the same program, arguments and process id and the
 * variable set (process.execve): a signal sent to the process a service
 * manager or npm started reaches the server itself. Setting the variable in
 * npm's start script made npm run a shell with the server as its child, and
 * a SIGTERM to npm ended npm and the shell and left the server running.
 */
import { servingTunables } from '../config.js';

/** Whether this process runs on glibc (musl and other C libraries ignore GLIBC_TUNABLES). */
function onGlibc(): boolean {
  if (process.platform !== 'linux') return false;
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return typeof header?.glibcVersionRuntime === 'string';
}

/** Re-execute this process with the server's allocator settings, unless it has them (or cannot have them); returns only when it does not. */
export function withServingAllocator(): void {
  const tunables = servingTunables();
  if (tunables === undefined || typeof process.execve !== 'function' || !onGlibc()) return;
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], { ...process.env, GLIBC_TUNABLES: tunables });
}
