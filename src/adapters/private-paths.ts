/**
 * What another local user must not reach: the data directory (the embedded
 * database with its key digests and counts, the lock, the admin socket and,
 * by default, the key files), the key files themselves, and the directory of
 * the admin socket. Checked when the server starts, as ssh checks its keys:
 *
 * - one that another user can write (group or others may write it, or it
 *   belongs to another user) is refused: that user could replace or plant
 *   files in it, or swap the keys;
 * - one that others can read is allowed with a warning (what optmark creates
 *   inside is private whatever the directory's mode: see below).
 *
 * What optmark and PGlite create is private: `optmark serve` and the
 * administration commands run with the umask 077, the files optmark writes
 * are created 0600 and its directories 0700, and the embedded database's
 * thread makes every file of the database 0600 and every directory 0700
 * whenever it syncs the whole database (at open, at close, at each new WAL
 * segment): PGlite creates its files 0666 whatever the umask.
 */
import { statSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';

/** A path that another user could write: the start is refused, in one line. */
export class UnsafePermissionsError extends Error {
  readonly code = 'unsafe_permissions';
}

/** The umask of a process that creates the data directory's files: nothing for group or others. */
export const PRIVATE_UMASK = 0o077;

const octal = (mode: number) => `0${(mode & 0o7777).toString(8)}`;

function statOrUndefined(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Owned by this user, or by root (a directory the administrator set up). */
function ownedBySafeUser(stats: Stats): boolean {
  const uid = process.getuid?.();
  return uid === undefined || stats.uid === uid || stats.uid === 0;
}

/**
 * Check a directory or file that holds something private. Returns a warning
 * (a sentence) when others can read it, undefined when it is private or does
 * not exist yet (it will be created private).
 * @throws UnsafePermissionsError when another user can write it
 */
export function checkPrivatePath(path: string, what: string): string | undefined {
  const stats = statOrUndefined(path);
  if (!stats) return undefined;
  const fix = stats.isDirectory() ? `chmod 700 ${path}` : `chmod 600 ${path}`;
  if (!ownedBySafeUser(stats)) {
    throw new UnsafePermissionsError(`the ${what} ${path} belongs to another user (uid ${stats.uid}), who could change what it holds; refusing to start`);
  }
  if (stats.mode & 0o022) {
    throw new UnsafePermissionsError(
      `the ${what} ${path} can be written by other users (mode ${octal(stats.mode)}), who could change what it holds; refusing to start (${fix})`,
    );
  }
  if (stats.mode & 0o044) return `the ${what} ${path} can be read by other users (mode ${octal(stats.mode)}); ${fix} to keep them out`;
  return undefined;
}

/**
 * Check the directory a private file lives in: another user who can write
 * it could replace the file (unless the directory is sticky, like /tmp,
 * where only a file's owner may rename or remove it).
 * @throws UnsafePermissionsError when another user can replace files in it
 */
export function checkContainingDirectory(file: string, what: string): void {
  const directory = dirname(file);
  const stats = statOrUndefined(directory);
  if (!stats) return;
  const sticky = (stats.mode & 0o1000) !== 0;
  if (!ownedBySafeUser(stats) || ((stats.mode & 0o022) !== 0 && !sticky)) {
    throw new UnsafePermissionsError(
      `the directory ${directory} of the ${what} can be written by other users (mode ${octal(stats.mode)}, uid ${stats.uid}), who could replace the file; refusing to start`,
    );
  }
}

export interface DeploymentPaths {
  readonly dataDir: string;
  readonly signingKeysPath: string;
  readonly fingerprintKeysPath: string;
  readonly vaultKeysPath: string;
}

/**
 * The server's private paths, checked before it opens or creates anything.
 * Returns the warnings to log (paths others can read).
 * @throws UnsafePermissionsError when another user can write one of them
 */
export function checkDeploymentPaths(paths: DeploymentPaths): string[] {
  const warnings: string[] = [];
  const note = (warning: string | undefined) => warning && warnings.push(warning);
  note(checkPrivatePath(paths.dataDir, 'data directory'));
  for (const [file, what] of [
    [paths.signingKeysPath, 'signing key file'],
    [paths.fingerprintKeysPath, 'fingerprint key file'],
    [paths.vaultKeysPath, 'vault key file'],
  ] as const) {
    if (dirname(file) !== paths.dataDir) checkContainingDirectory(file, what);
    note(checkPrivatePath(file, what));
  }
  return warnings;
}
