// The built server (dist/), started as `optmark serve` starts it, with a
// crash added in the Private Vault's keeping of a marking: the process kills
// itself (SIGKILL: no handler, no cleanup), as a power cut or the kernel's
// OOM killer would,
//   after-bytes:  once both files' bytes are durable in storage, before the
//                 database says they are stored;
//   during-write: as the second file's write begins (the first one's is
//                 under way, not finished; the rows may or may not be
//                 written down yet).
// With an account name, an email and a password after that, it first makes
// the account (Pro), its owner and turns its vault on, if not done yet.
// Prints its address as one JSON line.
import { loadConfig } from '../../dist/config.js';
import { openBlobStore } from '../../dist/adapters/storage/open.js';
import { startServer } from '../../dist/server/start.js';

const when = process.argv[2];
const die = () => {
  process.kill(process.pid, 'SIGKILL');
  return new Promise(() => {});
};
process.umask(0o077);
const config = loadConfig();
const blobs = openBlobStore(config);
let writes = 0;
const crashing = {
  kind: blobs.kind,
  put: (name, bytes) => (when === 'during-write' && ++writes === 2 ? die() : blobs.put(name, bytes)),
  stage: (name, bytes) => (when === 'during-write' && ++writes === 2 ? die() : blobs.stage(name, bytes)),
  get: (name) => blobs.get(name),
  delete: (name) => blobs.delete(name),
  list: () => blobs.list(),
  identity: () => blobs.identity(),
  close: () => blobs.close(),
};
const server = await startServer(config, {
  logger: false,
  adminSocket: false,
  vault: { blobs: crashing, afterBytes: when === 'after-bytes' ? die : undefined },
});
const [, , , account, email, password] = process.argv;
if (account && !(await server.admin.listAccounts()).some((a) => a.name === account)) {
  await server.admin.createAccount(account, 'pro');
  const { user } = await server.people.createUser({ account, email, role: 'owner', password, actor: 'cli' });
  await server.vault.setEnabled(user, 'pro', true, false, null);
}
process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);
