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
export async function checkingProvenance(config: Config, jwks: string | undefined): Promise<Provenance> {
  let keys: KeySource = { publicKey: () => undefined };
  if (jwks !== undefined) keys = await loadJwks(jwks);
  else keys = SigningKeys.openExisting(config.signingKeysPath) ?? keys;
  return createProvenance({ keys, issuer: issuer(config), clock: systemClock });
}

/** The public keys of a JWKS file or URL; anything unreadable or not a JWKS is a CliError. */
async function loadJwks(source: string): Promise<KeySource> {
  try {
    let document: unknown;
    if (/^https?:\/\//.test(source)) {
      const response = await fetch(source, { signal: AbortSignal.timeout(10_000) });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      document = await response.json();
    } else {
      document = JSON.parse(await readFile(source, 'utf8'));
    }
    return keysFromJwks(document);
  } catch (error) {
    throw new CliError(`cannot load the JWKS ${source}: ${(error as Error).message}`, 'unreadable_jwks');
  }
}
