/**
 * `optmark serve` (and `npm start`): run the HTTP API until SIGTERM or
 * SIGINT, then stop in order: no new connections, in-flight requests
 * finish, the database closes.
 */
import { FingerprintKeys } from '../adapters/fingerprint-keys.js';
import { PRIVATE_UMASK } from '../adapters/private-paths.js';
import { SigningKeys } from '../adapters/signing-keys.js';
import { VaultKeys } from '../adapters/vault-keys.js';
import { loadConfig } from '../config.js';
import { LOCAL_OWNER } from '../app/first-start.js';
import { startServer, type RunningServer } from '../server/start.js';
import { parse } from './files.js';
import { announceCreatedFingerprintKey } from './fingerprint-for-cli.js';
import { announceCreatedKeyRing } from './keys-for-cli.js';
import { holdStopSignals } from './stop-signals.js';
import { UsageError } from './usage-error.js';

/**
 * Where the first start's secrets are: the file's path and how to issue new
 * ones, on standard error; the key itself only when standard error is a
 * terminal (a person watching), never into a service manager's log.
 */
function announceFirstStart(start: NonNullable<RunningServer['firstStart']>, url: string): void {
  const lines: string[] = [];
  if (start.local) {
    const { key } = start.local;
    lines.push(
      `optmark: first start: created the account "${key.account}" (Lifetime plan) with its owner ${LOCAL_OWNER}.`,
      `optmark: its API key and the owner's set-up link are in ${start.path} (only you can read it; it is removed once the owner sets a password).`,
      `optmark: lost them? Issue new ones: optmark keys issue --account ${key.account} --user ${LOCAL_OWNER}; optmark users reset ${LOCAL_OWNER}`,
    );
    if (process.stderr.isTTY) {
      lines.push('', `    API key: ${key.key}`, '', `    curl -H "Authorization: Bearer ${key.key}" -F image=@photo.jpg ${url}/api/v1/protect`, '');
    }
  }
  if (start.ownerLinks > 0) {
    lines.push(`optmark: ${start.ownerLinks} account(s) made before sign-in existed have no users: a link for each first owner is in ${start.path}.`);
  }
  process.stderr.write(`${lines.join('\n')}\n`);
}

export async function serveCommand(args: readonly string[]): Promise<number> {
  const { positionals, values } = parse(args, { workers: { type: 'string' } });
  if (positionals.length > 0) throw new UsageError('serve takes no arguments but --workers N; configure it with environment variables (see README)');
  if (values.workers !== undefined && !/^[1-9]\d{0,2}$/.test(values.workers)) throw new UsageError(`--workers must be a whole number from 1 to 256, got ${JSON.stringify(values.workers)}`);
  const config = loadConfig(values.workers !== undefined ? { ...process.env, OPTMARK_WORKERS: values.workers } : process.env);
  const { default: cluster } = await import('node:cluster');
  if (config.workers > 1 && cluster.isPrimary) {
    process.umask(PRIVATE_UMASK);
    // The key files are made here, once, before the workers start (each would otherwise race to create them).
    const signing = SigningKeys.open(config.signingKeysPath);
    if (signing.created) announceCreatedKeyRing(signing);
    const fingerprint = FingerprintKeys.open(config.fingerprintKeysPath);
    if (fingerprint.created) announceCreatedFingerprintKey(fingerprint);
    VaultKeys.open(config.vaultKeysPath);
    const { runPrimary } = await import('../server/workers.js');
    return runPrimary({ workers: config.workers, port: config.port, host: config.host, log: (line) => process.stderr.write(`${line}\n`) });
  }
  const workerIndex = cluster.isWorker ? Number(process.env.OPTMARK_WORKER_INDEX ?? '0') : 0;
  // Whatever the server, PGlite and the admin socket create is for this user alone.
  process.umask(PRIVATE_UMASK);
  // A key file that exists and cannot be used refuses the start in one line
  // (InvalidKeyFileError), before the data directory is locked and the
  // database opened. Missing files are created by the server.
  SigningKeys.openExisting(config.signingKeysPath);
  FingerprintKeys.openExisting(config.fingerprintKeysPath);
  // A signal that arrives while the server starts (after it listens, the
  // first start still writes its file) is kept and acted on once it has
  // started: without a handler, it would end the process on the spot.
  // A worker is stopped by its primary (SIGTERM); a Ctrl-C reaches the whole process group, and the primary acts on it.
  const signals = holdStopSignals({ interrupt: !cluster.isWorker });
  let server: RunningServer;
  try {
    // Of several workers, the first makes what a first start makes.
    server = await startServer(config, { firstStart: workerIndex === 0, reusePort: cluster.isWorker });
  } catch (error) {
    // A worker that could not start ends (its primary starts another), whatever handle is left.
    if (cluster.isWorker) {
      process.stderr.write(`optmark: worker ${workerIndex} could not start: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    }
    signals.release();
    throw error;
  }
  // Said as protect says it: a secret made now is what every tag or mark
  // from this deployment will depend on, so its place is worth a line.
  if (server.signingKeys.created) announceCreatedKeyRing(server.signingKeys);
  if (server.fingerprintKeys.created) announceCreatedFingerprintKey(server.fingerprintKeys);
  if (server.firstStart) announceFirstStart(server.firstStart, server.url);
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        server.app.log.warn({ signal }, 'second signal: exiting now');
        process.exit(1);
      }
      stopping = true;
      server.app.log.info({ signal }, 'stopping: finishing in-flight requests');
      const stopped = (code: number) => {
        // Everything is closed, so the process ends by itself; should a
        // handle still hold it, end it anyway rather than hang a restart.
        setTimeout(() => {
          server.app.log.warn('still running 5 s after closing everything: exiting now');
          process.exit(code);
        }, 5000).unref();
        resolve(code);
        // A worker's channel to its primary would keep it alive: everything else is closed.
        if (cluster.isWorker) process.disconnect?.();
      };
      server.close().then(
        () => stopped(0),
        (error: unknown) => {
          server.app.log.error({ err: error }, 'error while stopping');
          stopped(1);
        },
      );
    };
    signals.handle(stop);
  });
}
