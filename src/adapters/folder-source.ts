/**
 * A folder as a scan source (`optmark scan PATH`): its files listed without
 * following symbolic links, `.git` left out, however deep (one folder after
 * another, not by recursion), so that images deeper than MAX_FOLDER_DEPTH
 * folders are reported skipped, as a repository scan reports them; at most
 * `maxFiles` files and as many folders.
 */
import { constants } from 'node:fs';
import { lstat, open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ScanSourceError, type ScanSource, type SourceEntry } from '../app/scans/ports.js';

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
  const folders: Array<{ dir: string; prefix: string }> = [{ dir: root, prefix: '' }];
  for (let listed = 0; folders.length > 0; listed++) {
    if (listed > maxFiles) throw new ScanSourceError(`the folder has more than ${maxFiles} folders`);
    const { dir, prefix } = folders.pop()!;
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (entry.name === '.git') continue;
      const path = prefix ? `${prefix}/${entry.name}` : entry.name;
      const full = join(dir, entry.name);
      if (entry.isSymbolicLink()) entries.push({ path, kind: 'symlink', size: 0, handle: full });
      else if (entry.isDirectory()) folders.push({ dir: full, prefix: path });
      else if (entry.isFile()) entries.push({ path, kind: 'file', size: (await lstat(full)).size, handle: full });
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
      const handle = await open(entry.handle, constants.O_RDONLY | constants.O_NOFOLLOW);
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
