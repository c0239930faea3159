/**
 * `optmark serve` (and `npm start`): run the HTTP API until SIGTERM or
 * SIGINT, then stop in order: no new connections, in-flight requests
 * finish, the database closes.
 */
import { FingerprintKeys } from '../adapters/fingerprint-keys.js';
import { PRIVATE_UMASK } from '../adapters/private-paths.js';
import { SigningKeys } from '../adapters/signing-keys.js';
import { loadConfig } from '../config.js';
import { startServer } from '../server/start.js';
import { parse } from './files.js';
import { announceCreatedFingerprintKey } from './fingerprint-for-cli.js';
import { announceCreatedKeyRing } from './keys-for-cli.js';
import { UsageError } from './usage-error.js';

export async function serveCommand(args: readonly string[]): Promise<number> {
  const { positionals } = parse(args, {});
  if (positionals.length > 0) throw new UsageError('serve takes no arguments; configure it with environment variables (see README)');
  const config = loadConfig();
  // Whatever the server, PGlite and the admin socket create is for this user alone.
  process.umask(PRIVATE_UMASK);
  // A key file that exists and cannot be used refuses the start in one line
  // (InvalidKeyFileError), before the data directory is locked and the
  // database opened. Missing files are created by the server.
  SigningKeys.openExisting(config.signingKeysPath);
  FingerprintKeys.openExisting(config.fingerprintKeysPath);
  const server = await startServer(config);
  // Said as protect says it: a secret made now is what every tag or mark
  // from this deployment will depend on, so its place is worth a line.
  if (server.signingKeys.created) announceCreatedKeyRing(server.signingKeys);
  if (server.fingerprintKeys.created) announceCreatedFingerprintKey(server.fingerprintKeys);
  if (server.bootstrapKey) {
    // Shown once, on the first start of an empty database, and never logged.
    process.stderr.write(
      `\nCreated the account "${server.bootstrapKey.account}" (Lifetime plan) and its first API key:\n\n` +
        `    ${server.bootstrapKey.key}\n\n` +
        'Store it now: it is not shown again (issue more with "optmark keys issue --account local"). Try:\n\n' +
        `    curl -H "Authorization: Bearer ${server.bootstrapKey.key}" -F image=@photo.jpg ${server.url}/api/v1/protect\n\n`,
    );
  }
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
      };
      server.close().then(
        () => stopped(0),
        (error: unknown) => {
          server.app.log.error({ err: error }, 'error while stopping');
          stopped(1);
        },
      );
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}
