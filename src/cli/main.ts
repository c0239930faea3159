/**
 * The `optmark` command. Each subcommand lives in its own file, loaded only
 * when it runs (the server, the database and the pixel library are not
 * loaded to print help or to mark a file); this one only dispatches and
 * prints help. Exit codes: 0 success, 1 some file failed or a problem of
 * setup (a bad setting, an unusable key file, ...), 2 bad usage (with the
 * command's usage lines), 3 `verify|scan --fail-on-unmarked` found a file that
 * does not opt out, 130 a batch stopped by Ctrl-C.
 */
import { UsageError } from './usage-error.js';

const INTRO = 'optmark: mark images with the IPTC/PLUS Data Mining AI-training opt-out, losslessly, and verify it\n';

/** Each command's usage, shown by `optmark COMMAND --help`, after a usage error, and all together by `optmark help`. */
export const USAGE: Readonly<Record<string, string>> = {
  protect: `  optmark protect <file|folder...> [--recursive] [--out DIR | --in-place] [--fingerprint]
                  [--value CODE [--other-constraints TEXT]] [--skip-marked] [--overwrite]
                  [--concurrency N] [--report FILE.csv|FILE.json] [--json]
                  [--server URL [--key-file FILE|-]]
      Write plus:DataMining into each JPEG, PNG or WebP file, changing no other byte.
      The marked copy is saved as <name>-optout.<ext> (the extension of its bytes) in DIR,
      keeping the folder structure (default: next to the input; a folder needs --out or
      --in-place). With --recursive, a folder's subfolders too; files that are not images
      are skipped and counted. Nothing is overwritten unasked: two inputs that would make
      one output are refused before any work; an output already there that is this input's
      marked copy counts as done (so a stopped run is finished by running it again, paying
      for no file twice); any other file in the way is refused unless --overwrite.
      --in-place replaces each file atomically, keeping its permissions.
      --skip-marked leaves files that already opt out as they are.
      CODE is one of the seven DMI-PROHIBITED codes. Without --value, a file that already
      opts out keeps its value, and any other gets DMI-PROHIBITED-AIMLTRAINING.
      DMI-PROHIBITED-SEECONSTRAINT ("Prohibited, see plus:OtherConstraints") needs
      --other-constraints TEXT, the constraints it points to (one line, at most 1,000
      characters), written into plus:OtherConstraints; the text goes with that value only.
      A provenance tag is signed with the deployment's key ring (created if missing, and said so).
      --fingerprint first adds the experimental invisible in-pixel mark, which re-encodes
      the image (PNG and lossless WebP stay lossless; JPEG and lossy WebP at the original's
      quality, read from its headers) and says how and the size change; a picture too flat
      to carry the mark unseen (white, grey, smooth gradients) is refused;
      a file in which verify would not find the mark (text on white, say) is refused,
      and one that already carries it is not marked again.
      --server URL marks through that deployment's API (or OPTMARK_URL); its key comes from
      OPTMARK_API_KEY or --key-file FILE (- reads standard input); --key KEY works but shows
      in the process list. --concurrency: files at once (default: the CPUs here, with one more read ahead; 4 with a server).
      With a server, no more than it takes from one key at once: its 429 for calls in progress
      lowers the number, and the file refused waits for a place, spending none of its tries.
      --report writes one row per file. On a terminal a progress bar, else one line per file
      (--json: one object per file in either case).
`,
  verify: `  optmark verify <file|folder...> [--recursive] [--jwks FILE|URL [--allow-private]] [--fail-on-unmarked]
                 [--concurrency N] [--report FILE.csv|FILE.json] [--json] [--server URL [--key-file FILE|-]]
      Report whether each file carries the opt-out, the other opt-out signals found,
      whether its provenance tag is valid (with --jwks: against another
      deployment's published keys), and whether the in-pixel fingerprint is found.
      A JWKS URL is fetched without following redirects, at most 1 MB within 10 s,
      and not from a loopback, private or link-local address unless --allow-private.
      With --server, the deployment's API checks (each file counts toward its verify limit).
      --concurrency: files at once (default: the CPUs here; 4 with a server, and no more than
      it takes from one key at once, as for protect).
      --fail-on-unmarked: exit 3 when a file does not opt out (a failed file, exit 1, wins).
      On a terminal a progress bar, with each file that does not opt out and each failure
      above it; else every file's lines (--json: one object per file in either case).
`,
  serve: `  optmark serve [--workers N]
      Run the HTTP API (configuration: environment variables, see README).
      --workers N (OPTMARK_WORKERS): N processes behind the one port, restarted if one dies,
      drained on SIGTERM; default the CPUs with PostgreSQL (DATABASE_URL), and 1 on the
      embedded database, which belongs to one process and refuses more.
`,
  accounts: `  optmark accounts create --name NAME --plan free|pro|lifetime [--json]
  optmark accounts list|show NAME [--json]
  optmark accounts set-plan NAME free|pro|lifetime
  optmark accounts rename NAME NEW_NAME
  optmark accounts set-limits NAME [--protect N] [--verify N] [--scans-per-day N] [--vault-bytes N]
      An account's own limits ("plan" as the value: the plan's again).
  optmark accounts delete NAME --yes
      Deletes the account with its users, keys, sessions and usage; the audit log keeps a line.
`,
  users: `  optmark users create --account NAME --email EMAIL [--role owner|member] [--operator] [--name NAME] [--password-stdin] [--json]
      Prints a one-time set-up link (24 hours); --password-stdin sets the password from standard input instead.
  optmark users list --account NAME [--json]
  optmark users disable EMAIL
      The user cannot sign in any more; their sessions end and their API keys are revoked.
  optmark users reset EMAIL
      Prints a one-time password reset link (24 hours).
`,
  plans: `  optmark plans list [--json]
  optmark plans set free|pro|lifetime [--protect N] [--verify N] [--scans-per-day N] [--vault-bytes N] [--retention-days N]
      The limits table: each plan's monthly protect and verify calls per account,
      repository scans per user per day, vault bytes, days scan reports are kept.
`,
  keys: `  optmark keys issue --account NAME [--user EMAIL] [--scopes protect,verify] [--expires-in-days N] [--json]
      Prints the new key once; it is stored only as a digest. Once the account has users,
      every key belongs to one (--user); a key may call only the operations of its scopes.
  optmark keys list --account NAME | --all [--json]
  optmark keys revoke ID
`,
  access: `  optmark access list [--state pending|approved|denied|withdrawn] [--json]
      Requests for API access, pending first (oldest first), with each account's plan and requester.
  optmark access approve ID [--scopes protect,verify] [--expires-in-days N] [--json]
      Grants a key (default: the scopes requested, no expiry); the requester reveals it once on the
      dashboard within 14 days. Nobody else ever sees the key.
  optmark access deny ID --reason TEXT [--json]
      The requester sees the reason.
`,
  usage: `  optmark usage --account NAME [--json]
      Administration (accounts, users, plans, keys, access, usage) works while "optmark serve" runs,
      and needs the database "optmark serve" created.
`,
  scan: `  optmark scan PATH|URL [--ref BRANCH|TAG] [--json | --csv FILE] [--fail-on-unmarked]
                [--fix --out DIR] [--concurrency N]
      Check every JPEG, PNG and WebP image of a folder or a git repository (https://, git://,
      file://; fetched shallowly into a temporary folder, nothing checked out), without a
      server or quotas: how many carry the opt-out, which do not, which failed or were
      skipped (symbolic links, Git LFS pointers, over 25 MB) and why. A read token for a
      private repository comes from OPTMARK_SCAN_TOKEN (never from the command line).
      --json prints the summary and every image as one JSON object (the API's shapes);
      --csv FILE writes the report. --fix --out DIR writes a marked copy of each image
      without the opt-out into DIR at its path in the tree, never over a file; a copy already
      there that is the image's marked copy (a stopped run's) counts as done.
      --fail-on-unmarked: exit 3 when an image lacks the opt-out (a failed image, exit 1, wins).
`,
  scans: `  optmark scans status|pause|resume [--json]
  optmark scans set-ceiling N [--json]
      The service-wide repository-scan ceiling (scans a day, all accounts together): today's
      count, pause or resume new scans for everyone (running scans finish), change the ceiling.
      Each change is written to the audit log.
`,
  'signing-keys': `  optmark signing-keys list|rotate [--json]
      The provenance signing keys (public keys: GET /.well-known/jwks.json).
`,
  'fingerprint-keys': `  optmark fingerprint-keys list|rotate|remove VERSION [--json]
      The fingerprint secrets: the newest version marks, every listed version is detected.
`,
  'vault-key': `  optmark vault-key list|rotate [--json]
      The Private Vault's key: rotate re-seals every stored file under a new key and drops the old one
      (embedded database: with the server stopped).
`,
};

export const HELP = `${INTRO}
Usage:
${Object.values(USAGE).join('')}  optmark help [COMMAND]

  --json prints one JSON object per file, one per line.
`;

const ADMIN = new Set(['accounts', 'keys', 'usage', 'plans', 'users', 'access', 'scans']);

async function dispatch(command: string, rest: readonly string[]): Promise<number> {
  switch (command) {
    case 'protect':
      return (await import('./protect-command.js')).protectCommand(rest);
    case 'verify':
      return (await import('./verify-command.js')).verifyCommand(rest);
    case 'scan':
      return (await import('./scan-command.js')).scanCommand(rest);
    case 'serve':
      return (await import('./serve-command.js')).serveCommand(rest);
    case 'signing-keys':
      return (await import('./signing-keys-command.js')).signingKeysCommand(rest);
    case 'fingerprint-keys':
      return (await import('./fingerprint-keys-command.js')).fingerprintKeysCommand(rest);
    case 'vault-key':
      return (await import('./vault-key-command.js')).vaultKeyCommand(rest);
    default:
      if (ADMIN.has(command)) return (await import('./admin-commands.js')).adminCommand(command as 'accounts', rest);
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
}

let pipesWatched = false;
/**
 * A reader that goes away before the end (`optmark verify DIR | head`) ends
 * what this command shows, not its work: later output to that stream is
 * dropped, and the command finishes with its usual exit code (a protect
 * half done is not left so). Without this, the write that found the pipe
 * closed raised an unhandled EPIPE and ended the process with a stack trace.
 */
function dropOutputToClosedPipes(): void {
  if (pipesWatched) return;
  pipesWatched = true;
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') return;
      throw error;
    });
  }
}

export async function main(argv: readonly string[]): Promise<number> {
  dropOutputToClosedPipes();
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    const about = rest[0];
    process.stdout.write(about !== undefined && USAGE[about] ? `Usage:\n${USAGE[about]}` : HELP);
    return 0;
  }
  if (USAGE[command] && rest.some((arg) => arg === '--help' || arg === '-h')) {
    process.stdout.write(`Usage:\n${USAGE[command]}`);
    return 0;
  }
  try {
    return await dispatch(command, rest);
  } catch (error) {
    if (error instanceof UsageError) {
      const usage = USAGE[command];
      process.stderr.write(`optmark: ${error.message}\n${usage ? `Usage:\n${usage}` : 'Run "optmark help" for usage.\n'}`);
      return 2;
    }
    // Problems of setup, not bugs: one line, no stack. (protect, verify and
    // the key commands report a key file's problem themselves, as JSON with --json.)
    if (await isSetupProblem(error)) {
      process.stderr.write(`optmark: ${(error as Error).message}\n`);
      return 1;
    }
    throw error;
  }
}

/**
 * A bad environment variable, a locked data directory, a database that
 * cannot start, a key file that cannot be used, a private path others can
 * write, an admin socket that cannot be made, an operating-system refusal.
 * Their classes are loaded only here, on the way out (a module that was
 * never loaded cannot have thrown).
 */
async function isSetupProblem(error: unknown): Promise<boolean> {
  if (isSystemError(error)) return true;
  const [{ ConfigError }, { DataDirLockedError }, { InvalidKeyFileError }, { UnsafePermissionsError }, { CliError }] = await Promise.all([
    import('../config.js'),
    import('../adapters/data-dir-lock.js'),
    import('../adapters/private-file.js'),
    import('../adapters/private-paths.js'),
    import('./files.js'),
  ]);
  if (error instanceof ConfigError || error instanceof DataDirLockedError || error instanceof InvalidKeyFileError || error instanceof UnsafePermissionsError || error instanceof CliError) return true;
  const name = (error as Error | undefined)?.constructor?.name;
  if (name === 'DatabaseStartError') return (await import('../adapters/db/open.js')).DatabaseStartError === error?.constructor;
  if (name === 'AdminSocketError') return (await import('../server/admin-socket.js')).AdminSocketError === error?.constructor;
  return false;
}

/** A file-system or other operating-system refusal (EROFS, ENOSPC, EACCES ...): its message names the path and the cause. */
function isSystemError(error: unknown): error is NodeJS.ErrnoException {
  const e = error as NodeJS.ErrnoException | undefined;
  return e instanceof Error && typeof e.code === 'string' && typeof e.syscall === 'string';
}
