/**
 * The vault's objects as files in one directory (by default
 * OPTMARK_DATA_DIR/vault), each under its name. Private (the directory
 * 0700, files 0600), and durable before `put` resolves: the bytes go to a
 * temporary file created exclusively, which is synced and renamed into
 * place, and the directory is synced, so that a crash leaves the whole
 * object or none, and a reader never sees half of one. The directory's
 * syncs are shared: a sync started after a rename covers every rename made
 * before it, so objects written at the same moment (a marking's original
 * and marked file, the files of a batch) wait for one sync of the
 * directory, not one each. One directory keeps that possible; ext4 and XFS
 * index large directories, and an account's 10 GB of 5 MB photos is two
 * thousand files.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { BlobStore, StagedBlob } from '../../app/vault/ports.js';

const NAME = /^[0-9a-f]{64}$/;
/** The storage's id (identity()): not an object name, so never listed or removed as one. */
const IDENTITY_FILE = 'storage-id';
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

/** Syncs of one directory, shared: each caller waits for a sync that started after it asked. */
class DirectorySync {
  private running: Promise<void> | undefined;
  private next: Promise<void> | undefined;

  constructor(private readonly path: string) {}

  sync(): Promise<void> {
    // One is running (it may have started before our rename): the next one, shared by everyone asking meanwhile.
    if (this.running) {
      this.next ??= this.running.then(
        () => this.start(),
        () => this.start(),
      );
      return this.next;
    }
    return this.start();
  }

  private start(): Promise<void> {
    this.next = undefined;
    const run = syncDirectory(this.path).finally(() => {
      if (this.running === run) this.running = undefined;
    });
    this.running = run;
    return run;
  }
}

export class FileBlobStore implements BlobStore {
  readonly kind = 'filesystem';
  private made = false;
  private readonly directory: DirectorySync;

  constructor(readonly root: string) {
    this.directory = new DirectorySync(root);
  }

  private path(name: string): string {
    if (!NAME.test(name) && !TEMPORARY.test(name)) throw new Error(`not a vault object name: ${name}`);
    return join(this.root, name);
  }

  /** The directory, made (0700) and made durable the first time. */
  private async ensureRoot(): Promise<void> {
    if (this.made) return;
    const created = await mkdir(this.root, { recursive: true, mode: 0o700 });
    if (created !== undefined) await syncDirectory(dirname(this.root));
    this.made = true;
  }

  async put(name: string, bytes: Uint8Array): Promise<void> {
    await (await this.stage(name, bytes)).publish();
  }

  /** The bytes in a temporary file of their own, created exclusively, written and synced; `publish` renames it into place and syncs the directory. */
  async stage(name: string, bytes: Uint8Array): Promise<StagedBlob> {
    const file = this.path(name);
    await this.ensureRoot();
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
    return {
      publish: async () => {
        try {
          await rename(temporary, file);
        } catch (error) {
          await rm(temporary, { force: true });
          throw error;
        }
        await this.directory.sync();
      },
      discard: () => rm(temporary, { force: true }),
    };
  }

  async get(name: string): Promise<Uint8Array | undefined> {
    try {
      return await readFile(this.path(name));
    } catch (error) {
      if (missing(error)) return undefined;
      throw error;
    }
  }

  async delete(name: string): Promise<void> {
    try {
      await rm(this.path(name));
    } catch (error) {
      if (missing(error)) return;
      throw error;
    }
    await this.directory.sync();
  }

  /** In `storage-id` beside the objects (0600), made exclusively: of two servers making it at once, both read the first's. */
  async identity(): Promise<string> {
    const file = join(this.root, IDENTITY_FILE);
    try {
      return (await readFile(file, 'utf8')).trim();
    } catch (error) {
      if (!missing(error)) throw error;
    }
    await this.ensureRoot();
    try {
      const handle = await open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
      try {
        await handle.writeFile(`${randomBytes(16).toString('hex')}\n`);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await this.directory.sync();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    return (await readFile(file, 'utf8')).trim();
  }

  async *list(): AsyncIterable<{ name: string; modifiedAt: Date }> {
    let entries: string[];
    try {
      entries = await readdir(this.root);
    } catch (error) {
      if (missing(error)) return;
      throw error;
    }
    for (const name of entries) {
      if (!NAME.test(name) && !TEMPORARY.test(name)) continue;
      try {
        const found = await stat(join(this.root, name));
        if (found.isFile()) yield { name, modifiedAt: found.mtime };
      } catch (error) {
        if (!missing(error)) throw error;
      }
    }
  }

  async close(): Promise<void> {}
}
