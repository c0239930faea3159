/**
 * The first-start file, `OPTMARK_DATA_DIR/first-start.txt`: what a first
 * start hands over (the `local` account's API key and its owner's set-up
 * link; links for the first owners of accounts made before people existed),
 * in a file only its owner can read, created exclusively, instead of in the
 * server's output where service managers keep logs. It is removed when the
 * owner sets a password: with its set-up link, or with a reset link (which
 * retires the set-up link), on whichever process or worker serves it, and
 * after any number of restarts.
 */
import { closeSync, constants, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { FirstStart } from '../app/first-start.js';
import { LOCAL_OWNER } from '../app/first-start.js';

export const FIRST_START_FILE = 'first-start.txt';

function firstStartPath(dataDir: string): string {
  return join(dataDir, FIRST_START_FILE);
}

export function firstStartText(start: FirstStart, url: string, now: Date): string {
  const lines = [`optmark: what the first start made, ${now.toISOString()}. Store what you need, then delete this file.`, ''];
  if (start.local) {
    const { key, ownerLink } = start.local;
    lines.push(
      `The account "${key.account}" (Lifetime plan) with its owner ${LOCAL_OWNER}.`,
      '',
      `API key of ${LOCAL_OWNER} (not shown anywhere else; store it now):`,
      `    ${key.key}`,
      '',
      `Set the owner's password, then sign in at ${url}/ (one-time link, until ${ownerLink.expiresAt.toISOString()}; this file is removed when it is used) [${ownerLink.id} ${ownerMark(ownerLink.userId ?? '')}]:`,
      `    ${ownerLink.url}`,
      '',
      'Try the API:',
      `    curl -H "Authorization: Bearer ${key.key}" -F image=@photo.jpg ${url}/api/v1/protect`,
      '',
      'Lost them? Issue new ones:',
      `    optmark keys issue --account ${key.account} --user ${LOCAL_OWNER}`,
      `    optmark users reset ${LOCAL_OWNER}`,
      '',
    );
  }
  if (start.ownerLinks.length > 0) {
    lines.push('Accounts made before sign-in existed have no users yet. Each link below creates the first owner of its account (one-time, 24 hours):', '');
    for (const { account, link } of start.ownerLinks) lines.push(`  ${account}:`, `    ${link.url}`, '');
    lines.push('A new link for an account: optmark users create --account NAME --email EMAIL --role owner', '');
  }
  return lines.join('\n');
}

/**
 * Write the file, 0600, created exclusively (O_EXCL, never through a link
 * planted in its place). Should one exist already (an earlier start's, never
 * deleted), the new one gets the time in its name rather than replace it or
 * be lost. Returns the path written.
 */
export function writeFirstStartFile(dataDir: string, text: string, now: Date): string {
  const candidates = [firstStartPath(dataDir), join(dataDir, `first-start-${now.toISOString().replace(/[:.]/g, '-')}.txt`)];
  for (const path of candidates) {
    let fd: number;
    try {
      fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST' && path !== candidates.at(-1)) continue;
      throw error;
    }
    try {
      writeSync(fd, text);
    } finally {
      closeSync(fd);
    }
    return path;
  }
  throw new Error('unreachable');
}

/** How the file names the owner it was made for: once that person has a password, the file has done its work. */
const ownerMark = (userId: string) => `for ${userId}`;

/** A first-start file's name: `first-start.txt`, or, beside an earlier one never deleted, with the time in it. */
const FIRST_START_NAME = /^first-start(-[0-9TZ-]+)?\.txt$/;

/**
 * A one-time link was used to set a password: remove every first-start file
 * in `dataDir` that holds that link, or names its user as the owner it was
 * made for. Returns the paths removed.
 */
export function removeFirstStartFilesFor(dataDir: string, link: { readonly id: string; readonly userId: string | null }): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dataDir).filter((name) => FIRST_START_NAME.test(name));
  } catch {
    return removed;
  }
  for (const name of names) {
    const path = join(dataDir, name);
    try {
      const text = readFileSync(path, 'utf8');
      if (!text.includes(`[${link.id} `) && !(link.userId !== null && text.includes(` ${ownerMark(link.userId)}]`))) continue;
      rmSync(path, { force: true });
      removed.push(path);
    } catch {
      // Gone already (another worker removed it), or unreadable: nothing to do here.
    }
  }
  return removed;
}
