/**
 * optmark/client/node: saving a marked image on Node.js, under the name the
 * answer gives (its extension is that of the bytes produced), never the
 * input's. The client itself (optmark/client) runs in browsers too.
 */
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { safeFilename, type ProtectResult } from './index.js';

export * from './index.js';

/**
 * Write `result.bytes` to `directory/result.filename` and return the path.
 * An existing file is not replaced (EEXIST) unless `overwrite` is set.
 */
export async function saveResult(result: Pick<ProtectResult, 'bytes' | 'filename'>, directory: string, options: { overwrite?: boolean } = {}): Promise<string> {
  const path = join(directory, safeFilename(result.filename));
  const file = await open(path, options.overwrite ? 'w' : 'wx', 0o644);
  try {
    await file.writeFile(result.bytes);
  } finally {
    await file.close();
  }
  return path;
}
