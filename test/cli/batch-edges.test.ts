/**
 * `optmark protect` and `verify` at the edges of a batch, as a user meets
 * them: the built command in a child process, on real files, marking here
 * or through a real server (in this process). A run done again over names
 * among which its copies now are; names a form encodes (a quote, a line end).
 */
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verify } from '../../src/index.js';
import { BIN, childEnv, XMP_JPG } from '../process/support.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
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

/** The settings that make the command call the test server with a new account's key. */
async function through(): Promise<{ key: string; env: Record<string, string> }> {
  const key = await t.key('pro');
  return { key, env: { OPTMARK_URL: t.url, OPTMARK_API_KEY: key } };
}

async function used(key: string): Promise<number> {
  return ((await (await fetch(`${t.url}/api/v1/usage`, { headers: { Authorization: `Bearer ${key}` } })).json()) as { protect: { used: number } }).protect.used;
}

beforeAll(async () => {
  t = await startTestServer();
  dir = mkdtempSync(join(tmpdir(), 'optmark-batch-edges-'));
  env = { OPTMARK_DATA_DIR: join(dir, 'data') };
});
afterAll(async () => {
  await t?.close();
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
    // With --json, each object has its outcome, as every other file's does.
    const json = await optmark(folder, ['protect', '--json', ...readdirSync(folder).sort()]);
    expect(json.code).toBe(0);
    const objects = json.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(objects[0]).toEqual({ file: 'a-optout.jpg', output: 'a-optout.jpg', outcome: 'already-marked', value: 'DMI-PROHIBITED-AIMLTRAINING', markedCopyOf: 'a.jpg' });
    expect(objects.map((o) => o.outcome)).toEqual(['already-marked', 'already-marked', 'already-marked', 'already-marked']);
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
    // With --json, the one object output_names_shared (no file's object: nothing was done).
    const json = await optmark(folder, ['protect', '--json', 'c.jpg', 'c-optout.jpg']);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ code: 'output_names_shared' });
    expect(JSON.parse(json.stdout).error).toContain('c.jpg would be written to c-optout.jpg, which is another input');
  });
});

describe('protect through a server, names a form encodes', () => {
  it('writes each copy where it planned, so that a run done again finds it done and pays nothing', async () => {
    const names = ['say "hi".jpg', 'new\nline.jpg'];
    const folder = folderWith('encoded', names);
    const { key, env: remote } = await through();
    const first = await optmark(folder, ['protect', ...names], remote);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe('say "hi".jpg -> say-hi-optout.jpg (marked DMI-PROHIBITED-AIMLTRAINING)\nnew\nline.jpg -> new-line-optout.jpg (marked DMI-PROHIBITED-AIMLTRAINING)\n');
    expect(readdirSync(folder).sort()).toEqual(['new-line-optout.jpg', 'new\nline.jpg', 'say "hi".jpg', 'say-hi-optout.jpg'].sort());
    const paid = await used(key);
    const again = await optmark(folder, ['protect', ...names], remote);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('optmark: 0 marked, 2 already marked');
    expect(await used(key)).toBe(paid);
  });

  it('says a file it did not expect is in the way, not that it appeared', async () => {
    const { writeAtomically } = await import('../../src/cli/batch/write.js');
    const folder = folderWith('in-the-way', ['x.jpg']);
    await expect(writeAtomically(join(folder, 'x.jpg'), new Uint8Array(1), { replace: false })).rejects.toThrow(`${join(folder, 'x.jpg')} is in the way; not replaced (pass --overwrite to replace it)`);
  });
});

describe('protect through a server, a file already marked', () => {
  it('that is its own output is done before any call: nothing is paid, nothing refused', async () => {
    const folder = folderWith('own-output', ['img1.jpg']);
    const { key, env: remote } = await through();
    expect((await optmark(folder, ['protect', 'img1.jpg'], remote)).code).toBe(0);
    const copy = readFileSync(join(folder, 'img1-optout.jpg'));
    const paid = await used(key);
    const run = await optmark(folder, ['protect', 'img1-optout.jpg'], remote);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('img1-optout.jpg -> img1-optout.jpg (already marked DMI-PROHIBITED-AIMLTRAINING, left unchanged)\n');
    expect(await used(key)).toBe(paid);
    expect(readFileSync(join(folder, 'img1-optout.jpg')).equals(copy)).toBe(true);
    // Copied elsewhere, the server answers with the same bytes: said so, as here.
    const elsewhere = await optmark(folder, ['protect', 'img1-optout.jpg', '--out', 'again', '--json'], remote);
    expect(elsewhere.code, elsewhere.stderr).toBe(0);
    expect(JSON.parse(elsewhere.stdout)).toMatchObject({ file: 'img1-optout.jpg', changed: false });
    expect(readFileSync(join(folder, 'again', 'img1-optout.jpg')).equals(copy)).toBe(true);
  });
});

describe('protect --in-place on a symbolic link', () => {
  it('marks the file it points to and keeps the link', async () => {
    const folder = folderWith('linked', ['real.jpg']);
    symlinkSync('real.jpg', join(folder, 'link.jpg'));
    const run = await optmark(folder, ['protect', 'link.jpg', '--in-place']);
    expect(run.code, run.stderr).toBe(0);
    expect(lstatSync(join(folder, 'link.jpg')).isSymbolicLink()).toBe(true);
    expect(readlinkSync(join(folder, 'link.jpg'))).toBe('real.jpg');
    expect(verify(readFileSync(join(folder, 'real.jpg'))).optedOut).toBe(true);
    expect(readdirSync(folder).sort()).toEqual(['link.jpg', 'real.jpg']);
  });
});

describe('a folder holding a name that is not UTF-8', () => {
  it('that file is a failure saying so (it was "no such file"), named with \\xNN; the others are done', async () => {
    const folder = folderWith('latin', ['plain.jpg']);
    copyFileSync(XMP_JPG, Buffer.from(join(folder, 'caf\u00e9.jpg'), 'latin1'));
    const run = await optmark(dir, ['verify', folder]);
    expect(run.stderr).toContain(`${join(folder, 'caf\\xE9.jpg')}: its name is not UTF-8: rename it in UTF-8 to take it (convmv -f latin1 -t utf8 does)`);
    expect(run.stderr).not.toContain('no such file');
    expect(run.stderr).toContain('1 failed');
    expect(run.code).toBe(1);
  });
});

describe('verify a folder without --recursive', () => {
  it('says how many subfolders it did not enter, and under --fail-on-unmarked a run that found no image fails', async () => {
    const folder = folderWith('deep', ['a/b/img.jpg']);
    const run = await optmark(dir, ['verify', folder, '--fail-on-unmarked', '--report', join(dir, 'deep.csv')]);
    expect(run.stderr).toContain('optmark: 1 subfolder(s) not entered: --recursive (-r) enters them\n');
    expect(run.stderr).toContain('optmark: no image found (the subfolders were not entered): nothing checked, which --fail-on-unmarked does not take as a pass\n');
    expect(run.code).toBe(1);
    // Without --fail-on-unmarked it is said, not failed; with -r the image is found.
    const plain = await optmark(dir, ['verify', folder]);
    expect([plain.code, plain.stderr]).toEqual([0, 'optmark: 0 opted out\noptmark: 1 subfolder(s) not entered: --recursive (-r) enters them\n']);
    const deep = await optmark(dir, ['verify', folder, '-r', '--fail-on-unmarked']);
    expect(deep.code).toBe(3);
    expect(deep.stderr).not.toContain('not entered');
  });
});

/** Whether the command can be run as another user (nobody), for whom a folder can be unreadable: root reads any. */
const asNobody = (() => {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'true']);
    return true;
  } catch {
    return false;
  }
})();

describe('a folder that cannot be read', () => {
  it.skipIf(!asNobody)('is a failed row in the report and in --json, and the other files are still done', async () => {
    // A tree of nobody's own, one folder of which it may not read.
    const home = mkdtempSync(join(tmpdir(), 'optmark-unreadable-'));
    try {
      copyFileSync(XMP_JPG, join(home, 'ok.jpg'));
      mkdirSync(join(home, 'locked'));
      copyFileSync(XMP_JPG, join(home, 'locked', 'x.jpg'));
      execFileSync('chown', ['-R', '65534:65534', home]);
      chmodSync(join(home, 'locked'), 0o000);
      const nobody = (args: readonly string[]): Promise<Run> =>
        new Promise((resolve) => {
          execFile('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, BIN, ...args], { cwd: home, encoding: 'utf8', env: childEnv({ OPTMARK_DATA_DIR: join(home, 'data') }) }, (error, stdout, stderr) => {
            resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
          });
        });
      const verified = await nobody(['verify', '.', '-r', '--report', 'check.csv']);
      expect(verified.stderr).toContain('locked: cannot read the folder: permission denied\n');
      expect(verified.stderr).toContain('optmark: 0 opted out, 1 not opted out, 1 failed\n');
      expect(verified.code).toBe(1);
      expect(readFileSync(join(home, 'check.csv'), 'utf8')).toContain('\r\nlocked,failed,,,,unreadable_file,cannot read the folder: permission denied,\r\n');
      const marked = await nobody(['protect', '.', '-r', '--out', 'marked', '--json']);
      expect(marked.code).toBe(1);
      const lines = marked.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines[0]).toEqual({ file: 'locked', outcome: 'failed', error: 'cannot read the folder: permission denied', code: 'unreadable_file' });
      expect(lines[1]).toMatchObject({ file: 'ok.jpg', outcome: 'marked', output: join('marked', 'ok-optout.jpg'), changed: true });
      // (The skipped files are the data directory's and the report.)
      expect(marked.stderr).toMatch(/optmark: 1 marked, \d+ skipped \(not images\), 1 failed\n/);
    } finally {
      chmodSync(join(home, 'locked'), 0o755);
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('--report', () => {
  it('that could not be written is refused before any work, exit 2', async () => {
    const folder = folderWith('reported', ['a.jpg', 'b.jpg']);
    const missing = join(dir, 'no-such-folder', 'rep.csv');
    const run = await optmark(folder, ['protect', '.', '--out', 'marked', '--report', missing]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(new RegExp(`^optmark: --report ${missing}: the folder ${join(dir, 'no-such-folder')} does not exist\\nUsage:`));
    expect(readdirSync(folder).sort()).toEqual(['a.jpg', 'b.jpg']);
    const verified = await optmark(folder, ['verify', '.', '--report', join(folder, 'a.jpg', 'rep.json')]);
    expect(verified.code).toBe(2);
    expect(verified.stderr).toContain('does not exist');
    mkdirSync(join(folder, 'taken.csv'));
    const folderNamed = await optmark(folder, ['verify', '.', '--report', 'taken.csv']);
    expect(folderNamed.code).toBe(2);
    expect(folderNamed.stderr).toContain('optmark: --report taken.csv: it is a folder\n');
  });
});
