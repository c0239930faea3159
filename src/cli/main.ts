/**
 * The `optmark` command. Each subcommand lives in its own file; this one only
 * dispatches and prints help. Exit codes: 0 success, 1 some file failed
 * or a problem of setup (a bad setting, an unusable key file, ...), 2 bad
 * usage.
 */
import { DataDirLockedError } from '../adapters/data-dir-lock.js';
import { ConfigError } from '../config.js';
import { DatabaseStartError } from '../adapters/db/open.js';
import { InvalidKeyFileError } from '../adapters/private-file.js';
import { UnsafePermissionsError } from '../adapters/private-paths.js';
import { AdminSocketError } from '../server/admin-socket.js';
import { CliError } from './files.js';
import { adminCommand } from './admin-commands.js';
import { protectCommand } from './protect-command.js';
import { serveCommand } from './serve-command.js';
import { fingerprintKeysCommand } from './fingerprint-keys-command.js';
import { signingKeysCommand } from './signing-keys-command.js';
import { verifyCommand } from './verify-command.js';
import { UsageError } from './usage-error.js';

export const HELP = `optmark: mark images with the IPTC/PLUS Data Mining AI-training opt-out, losslessly, and verify it

Usage:
  optmark protect <file...> [--out DIR] [--value CODE] [--fingerprint] [--json]
      Write plus:DataMining into each JPEG, PNG or WebP file, changing no other byte.
      The marked copy is saved as <name>-optout.<ext> in DIR (created if needed; default: next to the input).
      CODE is one of the seven DMI-PROHIBITED codes (default DMI-PROHIBITED-AIMLTRAINING).
      A provenance tag is signed with the deployment's key ring (created if missing, and said so).
      --fingerprint first adds the experimental invisible in-pixel mark, which re-encodes
      the image (PNG and lossless WebP stay lossless; JPEG and lossy WebP at quality 95);
      a file in which verify would not find the mark (text on white, say) is refused,
      and one that already carries it is not marked again.
  optmark verify <file...> [--jwks FILE|URL [--allow-private]] [--json]
      Report whether each file carries the opt-out, the other opt-out signals found,
      whether its provenance tag is valid (with --jwks: against another
      deployment's published keys), and whether the in-pixel fingerprint is found.
      A JWKS URL is fetched without following redirects, at most 1 MB within 10 s,
      and not from a loopback, private or link-local address unless --allow-private.
  optmark serve
      Run the HTTP API (configuration: environment variables, see README).
  optmark accounts create --name NAME --plan free|pro|lifetime [--json]
  optmark keys issue --account NAME [--expires-in-days N] [--json]
      Prints the new key once; it is stored only as a digest.
  optmark keys list --account NAME [--json]
  optmark keys revoke ID
  optmark usage --account NAME [--json]
      Administration; works while "optmark serve" runs.
  optmark signing-keys list|rotate [--json]
      The provenance signing keys (public keys: GET /.well-known/jwks.json).
  optmark fingerprint-keys list|rotate|remove VERSION [--json]
      The fingerprint secrets: the newest version marks, every listed version is detected.
  optmark help

  --json prints one JSON object per file, one per line.
`;

export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'protect':
        return await protectCommand(rest);
      case 'verify':
        return await verifyCommand(rest);
      case 'serve':
        return await serveCommand(rest);
      case 'accounts':
      case 'keys':
      case 'usage':
        return await adminCommand(command, rest);
      case 'signing-keys':
        return await signingKeysCommand(rest);
      case 'fingerprint-keys':
        return await fingerprintKeysCommand(rest);
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write(HELP);
        return 0;
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`optmark: ${error.message}\nRun "optmark help" for usage.\n`);
      return 2;
    }
    // Problems of setup, not bugs: one line, no stack. (protect, verify and
    // the key commands report a key file's problem themselves, as JSON with --json.)
    if (isSetupProblem(error)) {
      process.stderr.write(`optmark: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

/** A bad environment variable, a locked data directory, a database that cannot start, a key file that cannot be used, a private path others can write, an operating-system refusal. */
function isSetupProblem(error: unknown): error is Error {
  return (
    error instanceof ConfigError ||
    error instanceof DataDirLockedError ||
    error instanceof DatabaseStartError ||
    error instanceof InvalidKeyFileError ||
    error instanceof UnsafePermissionsError ||
    error instanceof AdminSocketError ||
    error instanceof CliError ||
    isSystemError(error)
  );
}

/** A file-system or other operating-system refusal (EROFS, ENOSPC, EACCES ...): its message names the path and the cause. */
function isSystemError(error: unknown): error is NodeJS.ErrnoException {
  const e = error as NodeJS.ErrnoException | undefined;
  return e instanceof Error && typeof e.code === 'string' && typeof e.syscall === 'string';
}
