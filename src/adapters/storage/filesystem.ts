/**
 * The vault's objects as files under a directory (by default
 * OPTMARK_DATA_DIR/vault): `ab/abcdef…`, the first two characters of the
 * name as a folder. Private (directories 0700, files 0600), and durable
 * before `put` resolves: the bytes go to a temporary file created
 * exclusively, which is synced, renamed into place, and whose directory is
 * synced too (a new folder's parent as well), so that a crash leaves the
 * whole object or none. A reader never sees half of one.
 */
import { randomBytes } from 'node:crypto';
import { constants, type Dirent } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { BlobStore } from '../../app/vault/ports.js';

const NAME = /^[0-9a-f]{64}$/;
/** A temporary file a crash left mid-write: listed (and so removed by the check) under its own name. */
const TEMPORARY = /^[0-9a-f]{64}\.[0-9a-f]{32}\.tmp$/;

async function syncDirectory(path: string): Promise<void> {
  const handle = await open(path, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

const missing = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';

export class FileBlobStore implements BlobStore {
  readonly kind = 'filesystem';
  private readonly folders = new Set<string>();

  constructor(readonly root: string) {}

  private path(name: string): { folder: string; file: string } {
    if (!NAME.test(name) && !TEMPORARY.test(name)) throw new Error(`not a vault object name: ${name}`);
    const folder = join(this.root, name.slice(0, 2));
    return { folder, file: join(folder, name) };
  }

  /** The object's folder, made (0700) and made durable the first time. */
  private async folder(folder: string): Promise<void> {
    if (this.folders.has(folder)) return;
    const rootMade = await mkdir(this.root, { recursive: true, mode: 0o700 });
    const made = await mkdir(folder, { mode: 0o700 }).then(
      () => true,
      (error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
        return false;
      },
    );
    if (rootMade !== undefined) await syncDirectory(join(this.root, '..'));
    if (made) await syncDirectory(this.root);
    this.folders.add(folder);
  }

  async put(name: string, bytes: Uint8Array): Promise<void> {
    const { folder, file } = this.path(name);
    await this.folder(folder);
    const temporary = `${file}.${randomBytes(16).toString('hex')}.tmp`;
    const handle = await open(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } catch (error) {
      await handle.close();
      await rm(temporary, { force: true });
      throw error;
    }
    await handle.close();
    try {
      await rename(temporary, file);
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
    await syncDirectory(folder);
  }

  async get(name: string): Promise<Uint8Array | undefined> {
    try {
      return await readFile(this.path(name).file);
    } catch (error) {
      if (missing(error)) return undefined;
      throw error;
    }
  }

  async delete(name: string): Promise<void> {
    const { folder, file } = this.path(name);
    try {
      await rm(file);
    } catch (error) {
      if (missing(error)) return;
      throw error;
    }
    await syncDirectory(folder);
  }

  async *list(): AsyncIterable<{ name: string; modifiedAt: Date }> {
    let folders: Dirent[];
    try {
      folders = await readdir(this.root, { withFileTypes: true });
    } catch (error) {
      if (missing(error)) return;
      throw error;
    }
    for (const folder of folders) {
      if (!folder.isDirectory() || !/^[0-9a-f]{2}$/.test(folder.name)) continue;
      for (const entry of await readdir(join(this.root, folder.name), { withFileTypes: true })) {
        const path = join(this.root, folder.name, entry.name);
        if (!entry.isFile()) continue;
        try {
          const { mtime } = await stat(path);
          // A temporary file left by a crash mid-write is listed under its own name, so that the check removes it once it is old.
          if (NAME.test(entry.name) || TEMPORARY.test(entry.name)) yield { name: entry.name, modifiedAt: mtime };
        } catch (error) {
          if (!missing(error)) throw error;
        }
      }
    }
  }

  async close(): Promise<void> {}
}
