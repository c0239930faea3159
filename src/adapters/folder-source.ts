/**
 * A folder as a scan source (`optmark scan PATH`): its files listed without
 * following symbolic links, `.git` left out, however deep (one folder after
 * another, not by recursion), so that images deeper than MAX_FOLDER_DEPTH
 * folders are reported skipped, as a repository scan reports them; at most
 * `maxFiles` files and as many folders.
 */
import { constants } from 'node:fs';
import { lstat, open, readdir } from 'node:fs/promises';
import { ScanSourceError, type ScanSource, type SourceEntry } from '../app/scans/ports.js';
import { pathOf } from '../core/bytes/path-text.js';

const GIT = Buffer.from('.git');

function byComponents(a: string, b: string): number {
  const x = a.split('/');
  const y = b.split('/');
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
  }
  return x.length - y.length;
}

export async function folderSource(root: string, maxFiles: number): Promise<ScanSource> {
  const entries: SourceEntry[] = [];
  // Names read as bytes: one that is not UTF-8 is named by pathOf and reached by its own bytes.
  const slash = Buffer.from('/');
  const top = Buffer.from(root);
  const folders: Array<{ dir: Buffer; prefix: Buffer | undefined }> = [{ dir: top, prefix: undefined }];
  for (let listed = 0; folders.length > 0; listed++) {
    if (listed > maxFiles) throw new ScanSourceError(`the folder has more than ${maxFiles} folders`);
    const { dir, prefix } = folders.pop()!;
    for (const entry of await readdir(dir, { withFileTypes: true, encoding: 'buffer' })) {
      if (entry.name.equals(GIT)) continue;
      const relative = prefix ? Buffer.concat([prefix, slash, entry.name]) : entry.name;
      const { path, pathBytes } = pathOf(relative);
      const full = Buffer.concat([dir, slash, entry.name]);
      const named = { path, handle: full.toString('utf8'), ...(pathBytes ? { pathBytes } : {}) };
      if (entry.isSymbolicLink()) entries.push({ ...named, kind: 'symlink', size: 0 });
      else if (entry.isDirectory()) folders.push({ dir: full, prefix: relative });
      else if (entry.isFile()) entries.push({ ...named, kind: 'file', size: (await lstat(full)).size });
      if (entries.length > maxFiles) throw new ScanSourceError(`the folder has more than ${maxFiles} files`);
    }
  }
  // In the order of a walk in name order: folder by folder, a folder's files where its name sorts.
  entries.sort((a, b) => byComponents(a.path, b.path));
  return {
    commit: null,
    fetchMs: 0,
    entries,
    async read(entry, limit) {
      // Not through a link that replaced the file since it was listed.
      const handle = await open(entry.pathBytes ? Buffer.concat([top, slash, entry.pathBytes]) : entry.handle, constants.O_RDONLY | constants.O_NOFOLLOW);
      try {
        const size = Math.min(limit, (await handle.stat()).size);
        const bytes = Buffer.allocUnsafe(size);
        let have = 0;
        while (have < size) {
          const { bytesRead } = await handle.read(bytes, have, size - have, have);
          if (bytesRead === 0) break;
          have += bytesRead;
        }
        return bytes.subarray(0, have);
      } finally {
        await handle.close();
      }
    },
    async close() {},
  };
}
