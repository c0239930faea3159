/** File I/O and per-file reporting shared by the subcommands. */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { FingerprintKeyRemovalError } from '../adapters/fingerprint-keys.js';
import { InvalidKeyFileError } from '../adapters/private-file.js';
import { isOptmarkError } from '../errors.js';
import { UsageError } from './usage-error.js';

export function parse<T extends ParseArgsConfig['options']>(args: readonly string[], options: T) {
  try {
    return parseArgs({ args: [...args], options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** Read a file, turning a file-system failure into a one-line message. */
export async function readInput(path: string): Promise<Uint8Array> {
  try {
    return await readFile(path);
  } catch (error) {
    throw unreadable(error);
  }
}

/** An input that could not be read, as the one-line failure unreadable_file. */
export function unreadable(error: unknown): CliError {
  const code = (error as NodeJS.ErrnoException).code;
  const reason =
    code === 'ENOENT' ? 'no such file'
    : code === 'EISDIR' ? 'it is a directory'
    : code === 'EACCES' ? 'permission denied'
    : code === 'ERR_FS_FILE_TOO_LARGE' ? 'the file is too large'
    : (error as Error).message;
  return new CliError(`cannot read the file: ${reason}`, 'unreadable_file');
}

/** Write through a temporary file and a rename, so a reader never sees half a file. */
export async function writeOutput(path: string, bytes: Uint8Array): Promise<void> {
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(temporary, bytes, { flag: 'wx' });
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw new CliError(`cannot write ${path}: ${(error as Error).message}`, 'unwritable_file');
  }
}

/** A failure a command reports in one line, with a stable code (unreadable file, locked data directory, ...). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

/** The message and stable code of an expected failure; anything else is a bug and propagates. */
export function describeFailure(error: unknown): { error: string; code: string } {
  const failure = describeExpected(error);
  if (failure) return failure;
  throw error;
}

/** The message and stable code of an expected failure (an image's, a file's, a key file's, a key removal's); undefined for anything else. */
export function describeExpected(error: unknown): { error: string; code: string } | undefined {
  if (isOptmarkError(error) || error instanceof CliError || error instanceof InvalidKeyFileError || error instanceof FingerprintKeyRemovalError) {
    return { error: error.message, code: error.code };
  }
  return undefined;
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** Report a failure that ends the command: a JSON object with --json, else one line on stderr. */
export function reportFailure(error: unknown, json: boolean | undefined): void {
  const failure = describeFailure(error);
  if (json) printJson(failure);
  else process.stderr.write(`optmark: ${failure.error}\n`);
}
