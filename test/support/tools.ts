/** Third-party command-line readers used as oracles (Debian packages exiv2, pngcheck, webp). */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface ToolResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export async function tool(command: string, args: readonly string[]): Promise<ToolResult> {
  try {
    const { stdout, stderr } = await run(command, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number | string; stdout?: string; stderr?: string };
    if (typeof e.code === 'string') throw error; // ENOENT: the tool is not installed
    return { code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** exiv2's raw reading of plus:DataMining (the exact URI), or undefined. */
export async function exiv2DataMining(file: string): Promise<string | undefined> {
  const { stdout } = await tool('exiv2', ['-q', '-PXkv', '-K', 'Xmp.plus.DataMining', file]);
  const match = /^Xmp\.plus\.DataMining\s+(.*)$/m.exec(stdout);
  return match?.[1]?.trim();
}
