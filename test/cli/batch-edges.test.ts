/**
 * `optmark protect` and `verify` at the edges of a batch, as a user meets
 * them: the built command in a child process, on real files. A run done
 * again over names among which its copies now are.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, childEnv, XMP_JPG } from '../process/support.js';

let dir: string;
let env: Record<string, string>;

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** optmark with `args` in the folder `cwd`, this file's data directory, and `extra` settings. */
function optmark(cwd: string, args: readonly string[], extra: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8', env: childEnv({ ...env, ...extra }) }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** A new folder under this file's, holding copies of the sample JPEG under `names`. */
function folderWith(name: string, names: readonly string[]): string {
  const folder = join(dir, name);
  for (const file of names) {
    mkdirSync(join(folder, file, '..'), { recursive: true });
    copyFileSync(XMP_JPG, join(folder, file));
  }
  return folder;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'optmark-batch-edges-'));
  env = { OPTMARK_DATA_DIR: join(dir, 'data') };
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('protect run again', () => {
  it('over *.jpg, where its copies now are among the inputs: they are done, nothing is marked again', async () => {
    const folder = folderWith('glob', ['a.jpg', 'b.jpg']);
    expect((await optmark(folder, ['protect', 'a.jpg', 'b.jpg'])).code).toBe(0);
    const copy = readFileSync(join(folder, 'a-optout.jpg'));
    // What the shell gives for *.jpg the second time.
    const again = await optmark(folder, ['protect', ...readdirSync(folder).sort()]);
    expect(again.stderr).toContain('optmark: 0 marked, 4 already marked\n');
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('a-optout.jpg: already done: it is the marked copy of a.jpg (DMI-PROHIBITED-AIMLTRAINING), left as it is\n');
    expect(again.stdout).toContain('a.jpg -> a-optout.jpg (already done');
    expect(readFileSync(join(folder, 'a-optout.jpg')).equals(copy)).toBe(true);
    expect(readdirSync(folder).sort()).toEqual(['a-optout.jpg', 'a.jpg', 'b-optout.jpg', 'b.jpg']);
  });

  it('over a folder whose --out is inside it: the --out folder is not walked', async () => {
    const folder = folderWith('inside', ['a.jpg', 'sub/b.jpg']);
    const args = ['protect', '.', '-r', '--out', 'marked', '--report', join(dir, 'inside.csv')];
    expect((await optmark(folder, args)).code).toBe(0);
    const again = await optmark(folder, args);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('optmark: 0 marked, 2 already marked\n');
    expect(readFileSync(join(dir, 'inside.csv'), 'utf8').trim().split('\r\n')).toHaveLength(3);
    expect(readdirSync(join(folder, 'marked'), { recursive: true }).sort()).toEqual(['a-optout.jpg', 'sub', join('sub', 'b-optout.jpg')]);
  });

  it('still refuses an input in the way that is not the marked copy of the input whose output it is', async () => {
    const folder = folderWith('clash', ['c.jpg', 'c-optout.jpg']);
    const run = await optmark(folder, ['protect', 'c.jpg', 'c-optout.jpg']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('c.jpg would be written to c-optout.jpg, which is another input');
    expect(readFileSync(join(folder, 'c-optout.jpg')).equals(readFileSync(XMP_JPG))).toBe(true);
  });
});
