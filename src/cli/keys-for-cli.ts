/**
 * The provenance keys the local commands use: the deployment's key ring
 * (OPTMARK_SIGNING_KEYS, default DATA_DIR/signing-keys.json), so that files
 * marked on the command line verify on the server and the other way round;
 * or, to check another deployment's tags, its published JWKS.
 */
import { readFile } from 'node:fs/promises';
import { createProvenance, keysFromJwks, type KeySource, type Provenance } from '../app/provenance.js';
import { systemClock } from '../app/ports.js';
import { SigningKeys } from '../adapters/signing-keys.js';
import type { Config } from '../config.js';
import { CliError } from './files.js';

const issuer = (config: Config) => () => config.baseUrl ?? `http://${config.host}:${config.port}`;

/** For protect: the key ring, created with a first key if there is none yet (and then said so on stderr). */
export function signingProvenance(config: Config): Provenance {
  const keys = SigningKeys.open(config.signingKeysPath);
  if (keys.created) announceCreatedKeyRing(keys);
  return createProvenance({ keys, issuer: issuer(config), clock: systemClock });
}

/**
 * One line on stderr (stdout stays the command's output, JSON with --json):
 * a key ring made now, and where, since its tags verify only with its keys.
 */
export function announceCreatedKeyRing(keys: SigningKeys): void {
  process.stderr.write(
    `optmark: created a new signing key ring in ${keys.path}; provenance tags signed with it verify only with this file or its published public keys (JWKS)\n`,
  );
}

/** For verify: a JWKS when one is named (file or URL), else the key ring if it exists. */
export async function checkingProvenance(config: Config, jwks: string | undefined, options: { allowPrivate?: boolean } = {}): Promise<Provenance> {
  let keys: KeySource = { publicKey: () => undefined };
  if (jwks !== undefined) keys = await loadJwks(jwks, options.allowPrivate ?? false);
  else keys = SigningKeys.openExisting(config.signingKeysPath) ?? keys;
  return createProvenance({ keys, issuer: issuer(config), clock: systemClock });
}

/**
 * The public keys of a JWKS file or URL; anything unreadable or not a JWKS
 * is a CliError. A URL is fetched with the limits of fetch-jwks.ts (no
 * redirect, no private address unless allowed, 1 MB, 10 s); no message
 * repeats what was read.
 */
async function loadJwks(source: string, allowPrivate: boolean): Promise<KeySource> {
  let document: unknown;
  try {
    if (/^https?:\/\//i.test(source)) {
      // Loaded here only: the HTTP client it needs costs a protect (and each of its worker threads) tens of milliseconds to load.
      const { fetchJwks } = await import('./fetch-jwks.js');
      document = await fetchJwks(source, { allowPrivate });
    } else {
      let text: string;
      try {
        text = await readFile(source, 'utf8');
      } catch (error) {
        throw new Error((error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : `it cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
      }
      try {
        document = JSON.parse(text);
      } catch {
        throw new Error('it is not JSON');
      }
    }
    return keysFromJwks(document);
  } catch (error) {
    throw new CliError(`cannot load the JWKS ${source}: ${(error as Error).message}`, 'unreadable_jwks');
  }
}
