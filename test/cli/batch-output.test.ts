/**
 * What `optmark protect` and `verify` print on a batch as a program or a
 * person reads it: on a terminal (a pseudo-terminal made by util-linux
 * `script`), with --json, when a run stops (Ctrl-C, the monthly limit, a
 * server that cannot be reached) and under a server's limit of calls in
 * flight. The built command in child processes, a real server in this one.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { protect } from '../../src/app/protect-image.js';
import { childEnv } from '../process/support.js';

const BIN = fileURLToPath(new URL('../../bin/optmark.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'optmark-batch-output-'));
const data = join(dir, 'data');

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function optmark(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: dir, encoding: 'utf8', env: childEnv({ OPTMARK_DATA_DIR: data, ...env }) }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

const quote = (arg: string) => `'${arg.replaceAll("'", `'\\''`)}'`;

/** The command on a pseudo-terminal (standard output and error both the terminal): what the terminal shows, escapes and carriage returns taken out. */
function onTerminal(args: readonly string[]): Promise<{ code: number; screen: string }> {
  return new Promise((resolve) => {
    const command = [process.execPath, BIN, ...args].map(quote).join(' ');
    execFile('script', ['-qec', command, '/dev/null'], { cwd: dir, encoding: 'utf8', env: childEnv({ OPTMARK_DATA_DIR: data, COLUMNS: '120' }) }, (error, stdout) => {
      // eslint-disable-next-line no-control-regex
      const screen = stdout.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '').replace(/\r\n/g, '\n').replace(/\r/g, '\n');
      resolve({ code: error ? Number(error.code ?? 1) : 0, screen });
    });
  });
}

const jsonLines = (text: string) =>
  text
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

const image = (i: number) => sharp({ create: { width: 24 + i, height: 24, channels: 3, background: { r: (i * 40) % 256, g: 90, b: 30 } } }).png().toBuffer();

/** `mixed`: two marked images and two without the opt-out. */
const mixed = join(dir, 'mixed');

beforeAll(async () => {
  mkdirSync(join(mixed, 'sub'), { recursive: true });
  writeFileSync(join(mixed, 'a-marked.png'), protect(await image(1)).bytes);
  writeFileSync(join(mixed, 'b-plain.png'), await image(2));
  writeFileSync(join(mixed, 'sub', 'c-marked.png'), protect(await image(3)).bytes);
  writeFileSync(join(mixed, 'sub', 'd-plain.png'), await image(4));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('on a terminal', () => {
  it('verify --json prints every object under the bar, and without --json names the files that do not opt out', async () => {
    const json = await onTerminal(['verify', mixed, '-r', '--json']);
    expect(json.code).toBe(0);
    // The bar was drawn: this is a terminal.
    expect(json.screen).toMatch(/verify \[#+\] 4\/4 100%/);
    expect(jsonLines(json.screen).map((o) => [o.file, o.optedOut])).toEqual([
      [join(mixed, 'a-marked.png'), true],
      [join(mixed, 'b-plain.png'), false],
      [join(mixed, 'sub', 'c-marked.png'), true],
      [join(mixed, 'sub', 'd-plain.png'), false],
    ]);

    const gate = await onTerminal(['verify', mixed, '-r', '--fail-on-unmarked']);
    expect(gate.code).toBe(3);
    expect(gate.screen).toContain(`${join(mixed, 'b-plain.png')}: not opted out (PNG)\n`);
    expect(gate.screen).toContain(`${join(mixed, 'sub', 'd-plain.png')}: not opted out (PNG)\n`);
    // A file that opts out is counted in the bar, not listed.
    expect(gate.screen).not.toContain('a-marked.png');
    expect(gate.screen).toContain('optmark: 2 opted out, 2 not opted out');
  });

  it('protect --json prints every object under the bar', async () => {
    const run = await onTerminal(['protect', mixed, '-r', '--json', '--out', join(dir, 'terminal-out')]);
    expect(run.code).toBe(0);
    expect(run.screen).toMatch(/protect \[#+\] 4\/4 100%/);
    expect(jsonLines(run.screen).map((o) => o.file)).toEqual([join(mixed, 'a-marked.png'), join(mixed, 'b-plain.png'), join(mixed, 'sub', 'c-marked.png'), join(mixed, 'sub', 'd-plain.png')]);
  });
});
