// The built server (dist/), started as `optmark serve` starts it, with one
// step added between the vault's two writes: once a marking's bytes are
// durable in storage and before the database says they are stored, the
// process kills itself (SIGKILL: no handler, no cleanup), as a power cut or
// the kernel's OOM killer would. Prints its address as one JSON line.
import { loadConfig } from '../../dist/config.js';
import { startServer } from '../../dist/server/start.js';

process.umask(0o077);
const server = await startServer(loadConfig(), {
  logger: false,
  adminSocket: false,
  vault: {
    afterBytes: () => {
      process.stdout.write(`${JSON.stringify({ crashing: true })}\n`);
      process.kill(process.pid, 'SIGKILL');
      return new Promise(() => {});
    },
  },
});
process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);
