/**
 * A folder as a scan source (`optmark scan PATH`): its files listed without
 * following symbolic links, `.git` left out, at most MAX_FOLDER_DEPTH
 * folders deep (deeper folders are not read).
 */
import { constants } from 'node:fs';
import { lstat, open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ScanSourceError, type ScanSource, type SourceEntry } from '../app/scans/ports.js';
import { MAX_FOLDER_DEPTH } from '../app/scans/classify.js';

export async function folderSource(root: string, maxFiles: number): Promise<ScanSource> {
  const entries: SourceEntry[] = [];
  const walk = async (dir: string, prefix: string, depth: number): Promise<void> => {
    const names = (await readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of names) {
      if (entry.name === '.git') continue;
      const path = prefix ? `${prefix}/${entry.name}` : entry.name;
      const full = join(dir, entry.name);
      if (entry.isSymbolicLink()) entries.push({ path, kind: 'symlink', size: 0, handle: full });
      else if (entry.isDirectory()) {
        if (depth < MAX_FOLDER_DEPTH) await walk(full, path, depth + 1);
      } else if (entry.isFile()) entries.push({ path, kind: 'file', size: (await lstat(full)).size, handle: full });
      if (entries.length > maxFiles) throw new ScanSourceError(`the folder has more than ${maxFiles} files`);
    }
  };
  await walk(root, '', 0);
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
